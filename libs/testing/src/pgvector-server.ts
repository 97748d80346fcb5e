import { ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Readable, Writable } from 'node:stream';
import { freePort } from './ports';

/**
 * Serves a PGlite database (PostgreSQL compiled to WebAssembly, from the npm registry) with pgvector and pg_trgm over
 * the PostgreSQL wire protocol, in a Node process of its own (the WebAssembly heap stays out of jest's). Neither the
 * embedded server nor Debian's PostgreSQL packages have pgvector; this is how the code path that uses it is tested.
 *
 * PGlite is one backend: its socket server runs one connection's statements at a time (a transaction's to its end),
 * so session state (settings, advisory locks) is shared by every connection, and it ignores a client's startup
 * options: the session settings a service passes at connection (`-c search_path=…`) are given here instead and set
 * on that backend once.
 */
const CONTROLLER = `
const { PGlite } = require('@electric-sql/pglite');
const { pg_trgm } = require('@electric-sql/pglite/contrib/pg_trgm');
const { vector } = require('@electric-sql/pglite-pgvector');
const { PGLiteSocketServer } = require('@electric-sql/pglite-socket');
const [port, settings] = process.argv.slice(1);
(async () => {
  const db = await PGlite.create({ extensions: { pg_trgm, vector } });
  for (const [name, value] of Object.entries(JSON.parse(settings))) await db.query('SELECT set_config($1, $2, false)', [name, value]);
  const server = new PGLiteSocketServer({ db, port: Number(port), host: '127.0.0.1', maxConnections: 20 });
  await server.start();
  process.stdout.write('ready\\n');
  process.stdin.on('end', async () => {
    await server.stop();
    await db.close();
    process.exit(0);
  });
  process.stdin.resume();
})().catch((error) => {
  process.stdout.write('error ' + String(error && error.message || error).replace(/\\n/g, ' ') + '\\n');
  process.exit(1);
});
`;

export class PgvectorServer {
  private constructor(
    readonly port: number,
    private readonly controller: ChildProcessByStdio<Writable, Readable, null>,
  ) {}

  /** Starts the server with these session settings (`search_path`, an extension's parameters…). */
  static async start(settings: Record<string, string> = {}): Promise<PgvectorServer> {
    const port = await freePort();
    const controller = spawn(process.execPath, ['-e', CONTROLLER, String(port), JSON.stringify(settings)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolve) => {
      const lines = createInterface({ input: controller.stdout });
      lines.once('line', resolve);
      controller.once('exit', (code) => resolve(`error exited with ${code}`));
    });
    if (line !== 'ready') {
      controller.kill();
      throw new Error(`the PGlite server did not start: ${line}`);
    }
    return new PgvectorServer(port, controller);
  }

  /** Connection URL of its only database. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async stop(): Promise<void> {
    if (this.controller.exitCode !== null) return;
    const exited = new Promise((resolve) => this.controller.once('exit', resolve));
    this.controller.stdin.end();
    await exited;
  }
}
