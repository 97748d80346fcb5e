import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports';

const NATS_SERVER_BINARY = process.env['NATS_SERVER_BIN'] ?? '/usr/sbin/nats-server';

/**
 * A nats-server of a test's own (JetStream on, its own store directory, a free port on 127.0.0.1), which the test
 * may kill and start again on the same port and store, as a NATS restart does, without touching anyone's NATS.
 */
export class DisposableNatsServer {
  private process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly storeDir: string,
  ) {}

  static async start(): Promise<DisposableNatsServer> {
    const server = new DisposableNatsServer(await freePort(), mkdtempSync(join(tmpdir(), 'parley-nats-')));
    await server.restart();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again) on its port and store; resolves once it accepts connections. */
  async restart(): Promise<void> {
    if (this.process) return;
    const child = spawn(NATS_SERVER_BINARY, ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.storeDir], { stdio: 'ignore' });
    this.process = child;
    child.once('exit', () => {
      if (this.process === child) this.process = undefined;
    });
    const deadline = Date.now() + 15_000;
    while (!(await accepts(this.port))) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`nats-server did not start on port ${this.port}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Kills the server (SIGKILL: no goodbye to its clients); its store stays for `restart`. */
  async kill(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** Kills the server and removes its store. */
  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
