// The platform under test as real processes, as an operator runs it: standalone (one command) or distributed (the
// five services, each its own process, on this machine's PostgreSQL and NATS), each run on a fresh database and,
// distributed, its own NATS namespace, so runs never see each other's rows or events.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePorts } from '../ports.mjs';
import { entryOf, SERVICES } from './build.mjs';

export const BENCH_KEY = 'vsk_bench_media_key_000000000001';
const DISTRIBUTED_DATABASE = 'postgres://postgres@127.0.0.1:5432/postgres';
const DISTRIBUTED_NATS = 'nats://127.0.0.1:4222';

async function until(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Starts the platform; `env` adds the vendors' and carrier's settings. Resolves to { baseUrl, mediaPort,
 * callsMetricsUrl, mediaMetricsUrl, stop, logs, exited, pids } where `exited` lists processes that died (a crash is a finding, not
 * a bench error) and callsMetricsUrl / mediaMetricsUrl serve the calls service's (call admission) and the media
 * worker's metrics (pacing as sent).
 */
export async function startPlatform({ mode, dist, env: extra, calls }) {
  // Standalone follows bench/api: DATABASE_URL when set, else embedded PostgreSQL. Distributed needs a server.
  const serverUrl = mode === 'distributed' ? (process.env.DATABASE_URL ?? DISTRIBUTED_DATABASE) : process.env.DATABASE_URL;
  let admin;
  let dbName;
  let dbUrl;
  if (serverUrl) {
    admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    dbName = `parley_bench_media_${randomBytes(5).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${dbName}`);
    const u = new URL(serverUrl);
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();
  }
  const [port, agents, callsPort, media, webhooks, mediaPort, pgPort, ...ops] = await freePorts(11);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-media-'));
  const env = {
    PATH: process.env.PATH ?? '',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(pgPort),
    AGENTS_GRPC_URL: `127.0.0.1:${agents}`,
    CALLS_GRPC_URL: `127.0.0.1:${callsPort}`,
    MEDIA_GRPC_URL: `127.0.0.1:${media}`,
    WEBHOOKS_GRPC_URL: `127.0.0.1:${webhooks}`,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    MEDIA_PORT: String(mediaPort),
    MEDIA_HOST: '127.0.0.1',
    MEDIA_PUBLIC_URL: `ws://127.0.0.1:${mediaPort}`,
    SECRET_KEY: 'bench-media-secret-key-for-signing-000001',
    BOOTSTRAP_KEYS: `bench:owner:${BENCH_KEY}`,
    // The bench measures what the media plane carries: neither the account's limit nor the configured size of a
    // media worker may be what refuses its calls (refusals for load or set-up queueing still count as failures).
    MAX_CONCURRENT_CALLS: String(calls * 2 + 10),
    MEDIA_WORKER_CAPACITY: String(calls * 2 + 10),
    RATE_LIMIT_REQUESTS: '100000000',
    CALL_DRAIN_SECONDS: '2',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    // A diagnostic seam: e.g. BENCH_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles every platform process.
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
    ...(dbUrl ? { DATABASE_URL: dbUrl } : {}),
    ...(mode === 'distributed' ? { NATS_URL: process.env.NATS_URL ?? DISTRIBUTED_NATS, NATS_NAMESPACE: `bench${randomBytes(5).toString('hex')}` } : {}),
    ...extra,
  };
  const children = new Map();
  const output = new Map();
  // BENCH_LOG_FILE: all of the platform's output (the last lines alone are kept otherwise), written without blocking
  // the callers' clocks.
  const logFile = process.env.BENCH_LOG_FILE ? createWriteStream(process.env.BENCH_LOG_FILE, { flags: 'a' }) : undefined;
  const exited = [];
  const spawnApp = (app, more = {}) => {
    const child = spawn(process.execPath, [entryOf(dist, app)], { env: { ...env, ...more }, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = [];
    output.set(app, lines);
    const keep = (d) => {
      logFile?.write(d);
      lines.push(d.toString());
      if (lines.length > 200) lines.shift();
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('exit', (code, signal) => {
      if (!stopping) exited.push(`${app} exited (${signal ?? code})`);
    });
    children.set(app, child);
  };
  let stopping = false;
  if (mode === 'standalone') spawnApp('standalone');
  else SERVICES.forEach((app, i) => spawnApp(app, app === 'gateway' ? {} : { OPS_PORT: String(ops[i]) }));

  const logs = () => [...output].map(([app, lines]) => `--- ${app}\n${lines.join('').slice(-3000)}`).join('\n');
  const stop = async () => {
    stopping = true;
    await Promise.all(
      [...children.values()].map(
        (child) =>
          new Promise((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    if (admin) {
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
    await new Promise((resolve) => (logFile ? logFile.end(resolve) : resolve()));
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await until(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, 120_000, 'the gateway to be ready');
    // The media worker answers plain HTTP with 426 on its own port once it listens.
    await until(async () => (await fetch(`http://127.0.0.1:${mediaPort}`)).status === 426, 60_000, 'the media worker to listen');
  } catch (error) {
    const text = logs();
    await stop();
    throw new Error(`${error.message}\n${text}`);
  }
  // Standalone serves every service's metrics on the gateway's port; distributed, each on its OPS_PORT.
  const metricsOf = (service) => (mode === 'standalone' ? `${baseUrl}/metrics` : `http://127.0.0.1:${ops[SERVICES.indexOf(service)]}/metrics`);
  // The platform's own processes (standalone: the one command, whose child may carry the audio; distributed: the five).
  const pids = () => [...children.values()].map((child) => child.pid);
  return { baseUrl, mediaPort, callsMetricsUrl: metricsOf('calls'), mediaMetricsUrl: metricsOf('media-worker'), env, stop, logs, exited, pids };
}
