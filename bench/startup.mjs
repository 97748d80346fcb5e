#!/usr/bin/env node
// Start-up time of the standalone platform: spawn → first 200 from GET /healthz.
//
// Runs the built standalone app three times on one fresh DATA_DIR with the embedded PostgreSQL and the
// in-process bus (DATABASE_URL and NATS_URL unset). The first run is cold (it includes initdb of the embedded
// database); the others are warm restarts on the same DATA_DIR. Every run gets free ports, is stopped with
// SIGTERM, and is waited for before the next starts.
//
//   npx nx run standalone:build && npm run bench:startup
//   BENCH_RUNS=5 BENCH_KEEP=1 npm run bench:startup     (more runs; keep the DATA_DIR afterwards)
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { freePorts } from './ports.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRY = join(ROOT, 'dist/apps/standalone/apps/standalone/src/main.js');
const RUNS = Math.max(2, Number(process.env.BENCH_RUNS ?? 3));
const TARGET_MS = 10_000;
const POLL_MS = 20;
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

if (!existsSync(ENTRY)) {
  console.error(`The standalone app is not built (${ENTRY} is missing).\nBuild it first:\n\n  npx nx run standalone:build\n`);
  process.exit(1);
}


const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let current; // the running child, stopped on Ctrl-C

async function healthy(url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

function stop(child) {
  return new Promise((resolveStop) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolveStop(child.exitCode);
    const killer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', (code, signal) => {
      clearTimeout(killer);
      resolveStop(code ?? signal);
    });
    child.kill('SIGTERM');
  });
}

/** One start: spawn, poll /healthz every 20 ms, return ms from spawn to the first 200; then SIGTERM and wait. */
async function run(dataDir) {
  const [port, agents, calls, media, webhooks, pg] = await freePorts(6);
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.NATS_URL;
  Object.assign(env, {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    AGENTS_GRPC_URL: `127.0.0.1:${agents}`,
    CALLS_GRPC_URL: `127.0.0.1:${calls}`,
    MEDIA_GRPC_URL: `127.0.0.1:${media}`,
    WEBHOOKS_GRPC_URL: `127.0.0.1:${webhooks}`,
    EMBEDDED_PG_PORT: String(pg),
  });
  const url = `http://127.0.0.1:${port}/healthz`;
  const output = [];

  const started = performance.now();
  const child = spawn(process.execPath, [ENTRY], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  current = child;
  child.stdout.on('data', (d) => output.push(d));
  child.stderr.on('data', (d) => output.push(d));
  let exited = false;
  child.once('exit', () => (exited = true));

  let ms;
  try {
    while (ms === undefined) {
      if (exited) throw new Error(`the app exited (code ${child.exitCode ?? child.signalCode}) before /healthz answered`);
      if (performance.now() - started > START_TIMEOUT_MS) throw new Error(`no 200 from ${url} within ${START_TIMEOUT_MS} ms`);
      if (await healthy(url)) ms = performance.now() - started;
      else await sleep(POLL_MS);
    }
  } catch (error) {
    await stop(child);
    const tail = Buffer.concat(output).toString().split('\n').slice(-30).join('\n');
    throw new Error(`${error.message}\n--- last output of the app\n${tail}`);
  }
  const stopStarted = performance.now();
  const exit = await stop(child);
  current = undefined;
  return { ms, stopMs: performance.now() - stopStarted, exit };
}

process.once('SIGINT', async () => {
  if (current) await stop(current);
  process.exit(130);
});

const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
// As root, the embedded PostgreSQL runs as the `postgres` user, which must be able to traverse DATA_DIR.
chmodSync(dataDir, 0o755);

const fmt = (ms) => `${(ms / 1000).toFixed(2)} s`;
console.log(`Parley standalone start-up: spawn → first 200 from GET /healthz (polled every ${POLL_MS} ms)`);
console.log(`entry ${ENTRY}`);
console.log(`DATA_DIR ${dataDir} (fresh; embedded PostgreSQL, in-process bus), ${RUNS} runs, node ${process.version}\n`);

const results = [];
let failed = false;
try {
  for (let i = 0; i < RUNS; i++) {
    const kind = i === 0 ? 'cold (initdb)' : 'warm (restart)';
    const r = await run(dataDir);
    results.push({ kind, ...r });
    console.log(`run ${i + 1}: ${kind.padEnd(15)} ${fmt(r.ms).padStart(8)}   (stopped by SIGTERM in ${fmt(r.stopMs)}, exit ${r.exit})`);
  }
} catch (error) {
  failed = true;
  console.error(`\nbench failed: ${error.message}`);
} finally {
  if (process.env.BENCH_KEEP) console.log(`\nkept ${dataDir}`);
  else rmSync(dataDir, { recursive: true, force: true });
}

if (results.length) {
  const cold = results[0].ms;
  const warm = results.slice(1).map((r) => r.ms);
  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return (s[Math.floor((s.length - 1) / 2)] + s[Math.ceil((s.length - 1) / 2)]) / 2;
  };
  const verdict = (ms) => (ms <= TARGET_MS ? 'ok' : 'OVER');
  console.log('\n| start | time to /healthz 200 | target | |');
  console.log('| --- | --- | --- | --- |');
  console.log(`| cold (first run, includes initdb) | ${fmt(cold)} | ≤ 10 s | ${verdict(cold)} |`);
  if (warm.length) {
    const w = median(warm);
    console.log(
      `| warm (restart on same DATA_DIR; median of ${warm.length}: ${warm.map(fmt).join(', ')}) | ${fmt(w)} | ≤ 10 s | ${verdict(w)} |`,
    );
  }
}
process.exit(failed ? 1 : 0);
