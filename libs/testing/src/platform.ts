import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ApiClient } from './api-client';
import { createTestDatabase, TestDatabase } from './database';
import { freePort } from './ports';

const ROOT = resolve(__dirname, '..', '..', '..');
const SERVICES = ['agents', 'calls', 'media-worker', 'webhook-dispatcher', 'gateway'] as const;
export type ServiceName = (typeof SERVICES)[number];

export interface PlatformOptions {
  mode?: 'standalone' | 'distributed';
  /** `account:role:key` triples. */
  bootstrapKeys?: string[];
  env?: Record<string, string>;
  /** The NATS the platform uses (a test's own server); NATS_URL by default. */
  natsUrl?: string;
  /** The PostgreSQL server on which the platform's fresh database is created (a test's own); DATABASE_URL by default. */
  databaseServerUrl?: string;
}

function entry(app: string): string {
  return join(ROOT, 'dist', 'apps', app, 'apps', app, 'src', 'main.js');
}

/** Polls `check` until it holds; `abort` (when given) throws to stop waiting for what can no longer happen. */
async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string, abort?: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    abort?.();
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The built platform running as real processes: standalone (one process) or distributed (one per service),
 * on a fresh database, the bus named by NATS_URL (in-process when unset, standalone only), and free ports.
 */
export class RunningPlatform {
  private readonly processes = new Map<string, ChildProcess>();
  private readonly outputs = new Map<string, string[]>();
  /** Each process's own environment on top of the platform's (a replica's ports, a service's OPS_PORT), kept for restarts. */
  private readonly overrides = new Map<string, Record<string, string>>();

  private constructor(
    readonly mode: 'standalone' | 'distributed',
    readonly baseUrl: string,
    private readonly env: Record<string, string>,
    private readonly database: TestDatabase,
  ) {}

  static async start(options: PlatformOptions = {}): Promise<RunningPlatform> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await RunningPlatform.startOnce(options);
      } catch (error) {
        // A port checked free can still be taken before the child binds it (by a listener of another process): the
        // platform starts again on other ports rather than failing the test.
        if (attempt < 3 && /EADDRINUSE/.test((error as Error).message)) continue;
        throw error;
      }
    }
  }

  private static async startOnce(options: PlatformOptions): Promise<RunningPlatform> {
    const mode = options.mode ?? 'standalone';
    const natsUrl = options.natsUrl ?? process.env['NATS_URL'];
    if (mode === 'distributed' && !natsUrl) throw new Error('distributed mode needs NATS_URL');
    const database = await createTestDatabase('parley_e2e', options.databaseServerUrl);
    const [port, agents, calls, media, webhooks, mediaStreams] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '',
      DATABASE_URL: database.url,
      DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-e2e-')),
      PORT: String(port),
      HOST: '127.0.0.1',
      AGENTS_GRPC_URL: `127.0.0.1:${agents}`,
      CALLS_GRPC_URL: `127.0.0.1:${calls}`,
      MEDIA_GRPC_URL: `127.0.0.1:${media}`,
      WEBHOOKS_GRPC_URL: `127.0.0.1:${webhooks}`,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      MEDIA_PORT: String(mediaStreams),
      MEDIA_HOST: '127.0.0.1',
      MEDIA_PUBLIC_URL: `ws://127.0.0.1:${mediaStreams}`,
      CALL_DRAIN_SECONDS: '1',
      SECRET_KEY: 'e2e-secret-key-for-signing-cursors-000001',
      BOOTSTRAP_KEYS: (options.bootstrapKeys ?? []).join(','),
      LOG_LEVEL: process.env['E2E_LOG_LEVEL'] ?? 'warn',
      // Each platform gets its own NATS namespace: runs sharing the server never consume each other's events.
      ...(natsUrl ? { NATS_URL: natsUrl, NATS_NAMESPACE: `t${randomBytes(5).toString('hex')}` } : {}),
      ...options.env,
    };
    const platform = new RunningPlatform(mode, `http://127.0.0.1:${port}`, env, database);
    try {
      if (mode === 'standalone') platform.spawn('standalone');
      else {
        // Distributed, every service but the gateway serves /readyz and /metrics on an ops port of its own.
        const ops = await Promise.all(SERVICES.map(() => freePort()));
        SERVICES.forEach((s, i) => platform.spawn(s, s, s === 'gateway' ? {} : { OPS_PORT: String(ops[i]) }));
      }
      // Under the e2e hooks' 60 s, so a failed start reports its processes' output rather than the hook's timeout.
      await platform.waitReady(45_000, true);
    } catch (error) {
      await platform.stop();
      throw new Error(`${(error as Error).message}\n${platform.logs()}`);
    }
    return platform;
  }

  /** The NATS namespace of this platform's subjects and streams (empty without NATS). */
  get natsNamespace(): string {
    return this.env['NATS_NAMESPACE'] ?? '';
  }

  /** The platform's database (every service's schema), for tests that inspect what the services stored. */
  get databaseUrl(): string {
    return this.database.url;
  }

  /** Where carriers reach the media worker (MEDIA_PUBLIC_URL). */
  get mediaUrl(): string {
    return this.env['MEDIA_PUBLIC_URL'];
  }

  api(key?: string): ApiClient {
    return new ApiClient(this.baseUrl, key);
  }

  /**
   * Resolves once the gateway is ready and the media worker listens. `starting`: a process that exits meanwhile fails
   * it at once (a test that stopped a service itself waits without that).
   */
  async waitReady(timeoutMs = 60_000, starting = false): Promise<void> {
    const alive = () => {
      const exited = starting && [...this.processes].find(([, child]) => child.exitCode !== null || child.signalCode !== null);
      if (exited) throw new Error(`${exited[0]} exited (${exited[1].exitCode ?? exited[1].signalCode}) before the platform was ready`);
    };
    await waitFor(async () => (await fetch(`${this.baseUrl}/readyz`)).status === 200, timeoutMs, 'the gateway to be ready', alive);
    // The media worker answers carriers on its own port (426 to plain HTTP); distributed, it starts on its own.
    const media = this.mediaUrl.replace(/^ws/, 'http');
    await waitFor(async () => (await fetch(media)).status === 426, timeoutMs, 'the media worker to listen', alive);
  }

  /**
   * Where a process serves /healthz, /readyz and /metrics: the gateway's (or the standalone process's) HTTP address,
   * or, distributed, a service's (or replica's) OPS_PORT.
   */
  opsUrl(name: string): string {
    const env = { ...this.env, ...this.overrides.get(name) };
    if (name === 'standalone' || name.startsWith('gateway')) return `http://127.0.0.1:${env['PORT']}`;
    if (!env['OPS_PORT'] || !this.outputs.has(name)) throw new Error(`${name} has no ops port`);
    return `http://127.0.0.1:${env['OPS_PORT']}`;
  }

  /** Process id of a running app (`standalone`, or a service of a distributed platform). */
  processId(app: string): number | undefined {
    const child = this.processes.get(app);
    return child && child.exitCode === null ? child.pid : undefined;
  }

  /** Kills one service of a distributed platform (SIGKILL: no goodbye). */
  async kill(service: ServiceName): Promise<void> {
    const child = this.processes.get(service);
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    this.processes.delete(service);
  }

  /**
   * SIGTERM to one service of a distributed platform: resolves when it has exited, with its exit code and how long
   * it took (a clean shutdown: drains, then exits).
   */
  async terminate(service: ServiceName): Promise<{ code: number | null; ms: number }> {
    const child = this.processes.get(service);
    if (!child || child.exitCode !== null) throw new Error(`${service} is not running`);
    const startedAt = Date.now();
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    const code = await exited;
    this.processes.delete(service);
    return { code, ms: Date.now() - startedAt };
  }

  /**
   * One more replica of a distributed platform's gateway or media worker, on ports of its own (as a second pod
   * behind a load balancer): `url` is its HTTP address (gateway) or its MEDIA_PUBLIC_URL (media worker). Resolves
   * once it answers; stopped with the platform. Calls still name the first media worker in their stream markup:
   * a test reaches this one by connecting to `url` itself.
   */
  async addReplica(service: 'gateway' | 'media-worker'): Promise<{ name: string; url: string }> {
    if (this.mode !== 'distributed') throw new Error('replicas need a distributed platform');
    const name = `${service}-${this.processes.size}`;
    const [a, b, ops] = await Promise.all([freePort(), freePort(), freePort()]);
    if (service === 'gateway') {
      this.spawn(service, name, { PORT: String(a) });
      const url = `http://127.0.0.1:${a}`;
      await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, 60_000, `${name} to be ready`);
      return { name, url };
    }
    const url = `ws://127.0.0.1:${a}`;
    this.spawn(service, name, { MEDIA_PORT: String(a), MEDIA_PUBLIC_URL: url, MEDIA_GRPC_URL: `127.0.0.1:${b}`, OPS_PORT: String(ops) });
    await waitFor(async () => (await fetch(url.replace(/^ws/, 'http'))).status === 426, 60_000, `${name} to listen`);
    return { name, url };
  }

  /** Everything an app (`standalone` or a service) wrote to stdout and stderr, across its restarts. */
  output(app: string): string {
    return (this.outputs.get(app) ?? []).join('');
  }

  restart(service: ServiceName): void {
    this.spawn(service);
  }

  logs(): string {
    return [...this.outputs].map(([name, lines]) => `--- ${name}\n${lines.join('').slice(-4000)}`).join('\n');
  }

  async stop(): Promise<void> {
    await Promise.all(
      [...this.processes.values()].map(
        (child) =>
          new Promise<void>((resolvePromise) => {
            if (child.exitCode !== null) return resolvePromise();
            const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolvePromise();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    this.processes.clear();
    await this.database.drop().catch(() => undefined);
  }

  /**
   * Runs `app`'s build as the process `name` (a replica's own name; the app's by default), its env overridden by
   * `env` (by default, by what it was given when it first started).
   */
  private spawn(app: string, name = app, env: Record<string, string> = this.overrides.get(name) ?? {}): void {
    this.overrides.set(name, env);
    const child = spawn(process.execPath, [entry(app)], { env: { ...this.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = this.outputs.get(name) ?? [];
    this.outputs.set(name, lines);
    child.stdout?.on('data', (d: Buffer) => lines.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => lines.push(d.toString()));
    this.processes.set(name, child);
  }
}
