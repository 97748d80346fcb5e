#!/usr/bin/env node
// Webhook dispatcher: deliveries per second (and per CPU-second of the dispatcher) and event → first-attempt latency.
//
// Starts the built webhook-dispatcher alone (its own fresh database on DATABASE_URL's server, NATS_URL, EGRESS_ALLOWLIST
// and WEBHOOK_ALLOW_HTTP_HOSTS 127.0.0.1), creates endpoints through its gRPC API (CreateEndpoint), runs a local
// receiver on 127.0.0.1 that answers 200 and counts, then publishes `call.started` envelopes straight to JetStream
// (subject parley.events.call.started, msgID = event id, created_at = send time), as the outbox relay does:
//   phase 1 (saturation): --events at full speed; deliveries/s from the first publish to the last delivery, and the
//            steady part (between 10 % and 90 % of the deliveries), the dispatcher's CPU seconds from /proc/<pid>/stat;
//   phase 2 (paced):      --paced-rate events/s for --paced-seconds (default: half the phase-1 event rate), so the
//            latency is measured below saturation.
// Latency is from the envelope's created_at to the receiver's arrival time of the first attempt.
//
//   npx nx run webhook-dispatcher:build
//   NATS_URL=nats://127.0.0.1:4222 DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:webhooks
//   node bench/webhooks.mjs --events 4000 --accounts 8 --endpoints 1 --cpu-prof
//
// --accounts A --endpoints K: A accounts with K endpoints each (each its own receiver path); events go round-robin to the
// accounts, so one event makes K deliveries. --cpu-prof runs the dispatcher with node --cpu-prof and prints where its
// CPU time went during phase 1.
//
// The dispatcher's durable consumer name is fixed: any other dispatcher on the same NATS (a running platform, an e2e
// test) shares it and takes part of the events, so run this on a quiet NATS; the script warns when it sees another
// consumer pulling.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { connect as natsConnect } from 'nats';
import pg from 'pg';
import { freePorts } from './ports.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRY = join(ROOT, 'dist/apps/webhook-dispatcher/apps/webhook-dispatcher/src/main.js');
const PROTO = join(ROOT, 'proto/parley/webhooks/v1/webhooks.proto');
const TARGET_PER_CORE = 1000;
const TARGET_P95_MS = 200;
const DURABLE = 'webhook-dispatcher_parley_events__';
const STREAM = 'PARLEY_WEBHOOK_EVENTS';
const SUBJECT = 'parley.events.call.started';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const opt = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? Number(argv[i + 1]) : fallback;
};
const EVENTS = opt('events', 4000);
const ACCOUNTS = opt('accounts', 8);
const ENDPOINTS = opt('endpoints', 1);
const PACED_SECONDS = opt('paced-seconds', 10);
const PACED_RATE_ARG = opt('paced-rate', 0);
const TIMEOUT_S = opt('timeout', 180);
const CPU_PROF = flag('cpu-prof');

const { NATS_URL, DATABASE_URL } = process.env;
if (!NATS_URL || !DATABASE_URL) {
  console.error(
    'bench:webhooks needs a NATS JetStream server and a PostgreSQL server; set both, e.g.\n\n' +
      '  NATS_URL=nats://127.0.0.1:4222 DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:webhooks\n\n' +
      '(the script creates, and drops afterwards, its own database on that server).',
  );
  process.exit(1);
}
if (!existsSync(ENTRY)) {
  console.error(`The webhook dispatcher is not built (${ENTRY} is missing). Build it first:\n\n  npx nx run webhook-dispatcher:build\n`);
  process.exit(1);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nowMs = () => performance.timeOrigin + performance.now();


const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process, in seconds (undefined when it is gone or not on this machine). */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** Busy and total jiffies of the whole machine. */
function machineCpu() {
  const [cpu] = readFileSync('/proc/stat', 'utf8').split('\n');
  const v = cpu.trim().split(/\s+/).slice(1).map(Number);
  const idle = v[3] + (v[4] ?? 0);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

const quantile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);
const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const mark = (ok) => (ok ? 'meets' : 'MISSES');

// ---------------------------------------------------------------------------------------------------------------
// Receiver: answers 200 at once; remembers the first arrival of each (event, endpoint path).

const sentAt = new Map(); // event id → ms (the envelope's created_at)
const receiver = {
  connections: 0,
  requests: 0,
  firstArrivals: 0,
  seen: new Set(),
  latencies: [], // ms, first attempts only, of the current phase
  arrivalsAt: [], // ms of each first arrival, of the current phase
  phaseEvents: new Set(),
};
const httpServer = createHttpServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const arrived = nowMs();
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    receiver.requests++;
    const id = String(req.headers['service-event-id'] ?? '');
    const key = `${id} ${req.url}`;
    if (receiver.seen.has(key)) return;
    receiver.seen.add(key);
    if (!receiver.phaseEvents.has(id)) return;
    receiver.firstArrivals++;
    receiver.arrivalsAt.push(arrived);
    const sent = sentAt.get(id);
    if (sent !== undefined && req.headers['service-delivery-attempt'] === '1') receiver.latencies.push(arrived - sent);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Set-up: database, dispatcher, gRPC client, NATS.

const dbName = `parley_bench_wh_${randomBytes(5).toString('hex')}`;
const admin = new pg.Client({ connectionString: DATABASE_URL });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(DATABASE_URL);
dbUrl.pathname = `/${dbName}`;

const [grpcPort, opsPort] = await freePorts(2);
httpServer.on('connection', () => receiver.connections++);
await new Promise((r) => httpServer.listen(0, '127.0.0.1', r));
const receiverPort = httpServer.address().port;
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-wh-'));
const profDir = join(dataDir, 'prof');

const nc = await natsConnect({ servers: NATS_URL.split(','), name: 'bench-webhooks' });
const js = nc.jetstream();
const jsm = await nc.jetstreamManager();

let dispatcher;
let dispatcherExited = false;
let dispatcherOutput = '';
async function cleanup() {
  if (dispatcher && !dispatcherExited) {
    const exited = new Promise((r) => dispatcher.once('exit', r));
    const killer = setTimeout(() => dispatcher.kill('SIGKILL'), 15_000);
    dispatcher.kill('SIGTERM');
    await exited;
    clearTimeout(killer);
  }
  await nc.close().catch(() => undefined);
  httpServer.closeAllConnections();
  httpServer.close();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
  await admin.end().catch(() => undefined);
}
process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));

async function consumerInfo() {
  try {
    return await jsm.consumers.info(STREAM, DURABLE);
  } catch {
    return undefined;
  }
}

try {
  const before = await consumerInfo();
  if (before?.num_waiting > 0) {
    console.warn(`warning: another consumer is pulling from ${STREAM}/${DURABLE} (another dispatcher on this NATS); it will take part of the events.`);
  }
  if (before?.num_pending > 0) console.warn(`note: ${before.num_pending} older messages wait on ${DURABLE}; the dispatcher consumes them first.`);

  dispatcher = spawn(process.execPath, [...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), ENTRY], {
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: dbUrl.toString(),
      NATS_URL,
      WEBHOOKS_GRPC_URL: `127.0.0.1:${grpcPort}`,
      GRPC_BIND: `127.0.0.1:${grpcPort}`,
      OPS_PORT: String(opsPort),
      EGRESS_ALLOWLIST: '127.0.0.1',
      WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
      SECRET_KEY: 'bench-webhooks-secret-key-000000000000001',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  dispatcher.stdout.on('data', (d) => (dispatcherOutput = (dispatcherOutput + d).slice(-4000)));
  dispatcher.stderr.on('data', (d) => (dispatcherOutput = (dispatcherOutput + d).slice(-4000)));
  dispatcher.once('exit', () => (dispatcherExited = true));

  const bootStarted = nowMs();
  for (;;) {
    if (dispatcherExited) throw new Error(`the dispatcher exited during start-up:\n${dispatcherOutput}`);
    if (nowMs() - bootStarted > 60_000) throw new Error(`the dispatcher did not become ready in 60 s:\n${dispatcherOutput}`);
    const ready = await fetch(`http://127.0.0.1:${opsPort}/readyz`).then((r) => r.ok, () => false);
    if (ready) break;
    await sleep(100);
  }
  const bootMs = nowMs() - bootStarted;

  // Endpoints through the dispatcher's own gRPC API.
  const definition = protoLoader.loadSync(PROTO, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const { WebhooksService } = grpc.loadPackageDefinition(definition).parley.webhooks.v1;
  const client = new WebhooksService(`127.0.0.1:${grpcPort}`, grpc.credentials.createInsecure());
  const createEndpoint = (request) =>
    new Promise((ok, fail) => client.CreateEndpoint(request, (err, res) => (err ? fail(err) : ok(res))));
  const runTag = randomBytes(3).toString('hex');
  const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `bench_${runTag}_${i}`);
  for (const [a, account] of accounts.entries()) {
    for (let e = 0; e < ENDPOINTS; e++) {
      await createEndpoint({
        account_id: account,
        endpoint: { url: `http://127.0.0.1:${receiverPort}/a${a}/e${e}`, events: { items: ['call.started'] } },
      });
    }
  }
  client.close();

  let accountTurn = 0;
  const envelope = (id, createdAt) => ({
    id,
    type: 'call.started',
    call_id: `call_${randomBytes(11).toString('hex')}`,
    created_at: new Date(createdAt).toISOString(),
    data: { agent_id: 'agt_bench', direction: 'outbound', to: '+15550100001', from: '+15550100002' },
    account_id: accounts[accountTurn++ % accounts.length],
    agent_id: null,
  });
  const encoder = new TextEncoder();

  /** Publishes one event now; resolves on the JetStream ack. */
  function publishOne() {
    const id = `evt_${randomBytes(11).toString('hex')}`;
    const at = Date.now();
    sentAt.set(id, at);
    receiver.phaseEvents.add(id);
    return js.publish(SUBJECT, encoder.encode(JSON.stringify(envelope(id, at))), { msgID: id });
  }

  function startPhase() {
    receiver.latencies = [];
    receiver.arrivalsAt = [];
    receiver.firstArrivals = 0;
    receiver.phaseEvents = new Set();
  }

  /** Samples the CPU of the PostgreSQL backends serving the dispatcher's database (when they run on this machine). */
  function pgSampler() {
    const seen = new Map(); // pid → [first, last]
    const sample = async () => {
      const { rows } = await admin.query(`SELECT pid FROM pg_stat_activity WHERE datname = $1`, [dbName]);
      for (const { pid } of rows) {
        const cpu = cpuSeconds(pid);
        if (cpu === undefined) continue;
        const entry = seen.get(pid);
        if (entry) entry[1] = cpu;
        else seen.set(pid, [cpu, cpu]);
      }
    };
    let sampling = Promise.resolve();
    const next = () => (sampling = sampling.then(sample).catch(() => undefined)); // one query at a time
    const timer = setInterval(next, 250);
    return {
      start: next,
      async stop() {
        clearInterval(timer);
        await next();
        return seen.size ? [...seen.values()].reduce((s, [a, b]) => s + (b - a), 0) : undefined;
      },
    };
  }

  async function waitDelivered(expected, deadlineMs) {
    while (receiver.firstArrivals < expected && nowMs() < deadlineMs && !dispatcherExited) await sleep(20);
  }

  /** Why deliveries of this phase are missing: still queued in the dispatcher's database, still in JetStream, or gone. */
  async function explainMissing() {
    const delivered = new Set([...receiver.seen].map((k) => k.split(' ')[0]));
    const missing = [...receiver.phaseEvents].filter((id) => !delivered.has(id));
    if (!missing.length) return '';
    const db = new pg.Client({ connectionString: dbUrl.toString() });
    await db.connect();
    const { rows } = await db.query(`SELECT count(DISTINCT event_id)::int AS n FROM webhooks.deliveries WHERE event_id = ANY($1)`, [missing]);
    await db.end();
    const info = await consumerInfo();
    const inStream = (info?.num_pending ?? 0) + (info?.num_ack_pending ?? 0);
    return (
      `  ${missing.length} events without any delivery: ${rows[0].n} queued in the dispatcher's database, ` +
      `${missing.length - rows[0].n} not there (JetStream holds ${inStream} unconsumed for the durable; events beyond that were ` +
      'taken by another consumer of the same durable — another dispatcher on this NATS)'
    );
  }

  const expectedPerEvent = ENDPOINTS;
  console.log(
    `webhook dispatcher bench — ${ACCOUNTS} account(s) × ${ENDPOINTS} endpoint(s), ${EVENTS} events (${EVENTS * expectedPerEvent} deliveries), ` +
      `dispatcher boot ${fmt(bootMs)} ms, machine ${cpus().length} cores, Node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}${CPU_PROF ? ', --cpu-prof' : ''}`,
  );

  // Phase 1: saturation.
  startPhase();
  const expected1 = EVENTS * expectedPerEvent;
  const pgCpu = pgSampler();
  await pgCpu.start();
  const cpu0 = cpuSeconds(dispatcher.pid);
  const machine0 = machineCpu();
  const hr0 = process.hrtime.bigint();
  const t0 = nowMs();
  const inflight = new Set();
  for (let i = 0; i < EVENTS; i++) {
    const p = publishOne().finally(() => inflight.delete(p));
    inflight.add(p);
    if (inflight.size >= 512) await Promise.race(inflight);
  }
  await Promise.all(inflight);
  const published = nowMs();
  await waitDelivered(expected1, t0 + TIMEOUT_S * 1000);
  const t1 = nowMs();
  const hr1 = process.hrtime.bigint();
  const cpu1 = cpuSeconds(dispatcher.pid);
  const machine1 = machineCpu();
  const pgSeconds = await pgCpu.stop();

  const delivered1 = receiver.firstArrivals;
  const arrivals = [...receiver.arrivalsAt].sort((a, b) => a - b);
  const lastArrival = arrivals.at(-1) ?? t1;
  const overallRate = delivered1 / ((lastArrival - t0) / 1000);
  const lo = arrivals[Math.floor(arrivals.length * 0.1)];
  const hi = arrivals[Math.floor(arrivals.length * 0.9)];
  const steadyRate = arrivals.length >= 20 && hi > lo ? (Math.floor(arrivals.length * 0.9) - Math.floor(arrivals.length * 0.1)) / ((hi - lo) / 1000) : NaN;
  const dispatcherCpu = cpu1 - cpu0;
  const perCpuSecond = delivered1 / dispatcherCpu;
  const machineBusy = (machine1.busy - machine0.busy) / (machine1.total - machine0.total);
  const lat1 = [...receiver.latencies].sort((a, b) => a - b);

  console.log(`\nphase 1 — saturation: ${EVENTS} events published at full speed (${fmt(EVENTS / ((published - t0) / 1000))} events/s, ${fmt(published - t0)} ms)`);
  if (delivered1 < expected1) {
    console.log(`  INCOMPLETE: ${delivered1} of ${expected1} deliveries arrived within ${TIMEOUT_S} s${dispatcherExited ? ' (the dispatcher exited)' : ''}`);
    console.log(await explainMissing());
  }
  console.log(`  deliveries/s, first publish → last delivery   ${fmt(overallRate)}   (${delivered1} in ${fmt((lastArrival - t0) / 1000, 2)} s)`);
  console.log(`  deliveries/s, steady (10 %–90 % of arrivals)  ${fmt(steadyRate)}`);
  console.log(`  dispatcher CPU                               ${fmt(dispatcherCpu, 2)} s (${fmt((100 * dispatcherCpu) / ((lastArrival - t0) / 1000))} % of one core)`);
  console.log(
    `  deliveries per dispatcher CPU-second          ${fmt(perCpuSecond)}   target ≥ ${TARGET_PER_CORE} per core: ${mark(perCpuSecond >= TARGET_PER_CORE)}`,
  );
  if (pgSeconds !== undefined) console.log(`  PostgreSQL backends of the dispatcher, CPU    ${fmt(pgSeconds, 2)} s (${fmt(delivered1 / pgSeconds)} deliveries per PostgreSQL CPU-second)`);
  console.log(`  machine CPU busy (all processes)             ${fmt(100 * machineBusy)} %`);
  // At saturation every event queues behind the burst: this latency is the backlog's, judged in phase 2 instead.
  console.log(
    `  latency created_at → first attempt received  p50 ${fmt(quantile(lat1, 0.5))} ms, p95 ${fmt(quantile(lat1, 0.95))} ms, max ${fmt(lat1.at(-1))} ms` +
      '   (queueing behind the burst; the target is judged below saturation, phase 2)',
  );

  // The dispatcher's own view (Prometheus): attempt time and event → first attempt.
  const metrics = await fetch(`http://127.0.0.1:${opsPort}/metrics`).then((r) => r.text(), () => '');
  const metric = (name) => Number(new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(metrics)?.[1]);
  const attemptMean = (1000 * metric('parley_webhook_attempt_duration_seconds_sum')) / metric('parley_webhook_attempt_duration_seconds_count');
  const firstMean = (1000 * metric('parley_webhook_event_to_first_attempt_seconds_sum')) / metric('parley_webhook_event_to_first_attempt_seconds_count');
  console.log(
    `  dispatcher metrics: mean HTTP attempt ${fmt(attemptMean, 1)} ms; mean event → first attempt ${fmt(firstMean)} ms; ` +
      `receiver: ${receiver.requests} requests on ${receiver.connections} connections`,
  );

  // Phase 2: paced below saturation, for latency.
  let lat2 = [];
  const pacedRate = PACED_RATE_ARG || Math.max(1, Math.floor(((Number.isFinite(steadyRate) ? steadyRate : overallRate) / expectedPerEvent) * 0.5));
  if (PACED_SECONDS > 0 && delivered1 === expected1 && !dispatcherExited) {
    startPhase();
    const total = Math.max(1, Math.round(pacedRate * PACED_SECONDS));
    const start = nowMs();
    const acks = [];
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / pacedRate;
      if (due > nowMs()) await sleep(due - nowMs());
      acks.push(publishOne());
    }
    await Promise.all(acks);
    await waitDelivered(total * expectedPerEvent, nowMs() + 60_000);
    lat2 = [...receiver.latencies].sort((a, b) => a - b);
    console.log(`\nphase 2 — paced: ${total} events at ${pacedRate} events/s (${pacedRate * expectedPerEvent} deliveries/s offered), ${receiver.firstArrivals} deliveries`);
    if (receiver.firstArrivals < total * expectedPerEvent) console.log(`  INCOMPLETE after 60 s\n${await explainMissing()}`);
    console.log(
      `  latency created_at → first attempt received  p50 ${fmt(quantile(lat2, 0.5))} ms, p95 ${fmt(quantile(lat2, 0.95))} ms, max ${fmt(lat2.at(-1))} ms` +
        `   target p95 ≤ ${TARGET_P95_MS} ms: ${mark(quantile(lat2, 0.95) <= TARGET_P95_MS)}`,
    );
  }

  // CPU profile of the dispatcher during phase 1 (written when it exits).
  if (CPU_PROF) {
    const exited = new Promise((r) => dispatcher.once('exit', r));
    dispatcher.kill('SIGTERM');
    await exited;
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (file) {
      printProfile(JSON.parse(readFileSync(join(profDir, file), 'utf8')), Number(hr0 / 1000n), Number(hr1 / 1000n));
      if (process.env.BENCH_KEEP_PROFILE) {
        copyFileSync(join(profDir, file), process.env.BENCH_KEEP_PROFILE);
        console.log(`profile kept at ${process.env.BENCH_KEEP_PROFILE} (open it in Chrome DevTools → Performance)`);
      }
    }
  }
} finally {
  await cleanup();
  rmSync(dataDir, { recursive: true, force: true });
}

/**
 * Where the dispatcher's CPU went during phase 1 (samples between `fromUs` and `toUs`, monotonic clock; the whole
 * run when none falls inside): self time by package — a Node internal or native frame counts for the nearest caller
 * in node_modules or in our own code, so socket writes made by pg count for pg — and the hottest functions.
 */
function printProfile(profile, fromUs, toUs) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const packageOf = (url) => {
    if (!url) return undefined;
    const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
    if (dep) return dep;
    const own = /\/dist\/apps\/[^/]+\/(libs\/.+?\/src|apps\/[^/]+\/src)\//.exec(url)?.[1];
    return own ? `parley ${own.replace(/\/src$/, '')}` : undefined;
  };
  const samples = [];
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    samples.push([profile.samples[i], t, profile.timeDeltas[i + 1] ?? 0]);
  }
  const windowed = samples.some(([, ts]) => ts >= fromUs && ts <= toUs);
  const byFunction = new Map();
  const byPackage = new Map();
  let total = 0;
  let idle = 0;
  for (const [id, ts, dt] of samples) {
    if (windowed && (ts < fromUs || ts > toUs)) continue;
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    if (functionName === '(idle)') {
      idle += dt;
      continue;
    }
    total += dt;
    const where = url ? `${url.replace(/^file:\/\//, '').replace(/^.*node_modules\//, '').replace(`${ROOT}/`, '')}:${lineNumber + 1}` : '';
    const fn = `${functionName || '(anonymous)'} ${where}`.trim();
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt);
    let pkg;
    for (let up = id; up !== undefined && !pkg; up = parent.get(up)) pkg = packageOf(byId.get(up).callFrame.url);
    pkg ??= functionName.startsWith('(') ? functionName : 'node internals (no user-land caller)';
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + dt);
  }
  const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  console.log(
    `\ndispatcher CPU profile, ${windowed ? 'phase 1' : 'whole run'}: ${fmt(total / 1000)} ms on CPU (${fmt(idle / 1000)} ms idle) — self time by package (Node internals counted for their caller):`,
  );
  for (const [k, us] of top(byPackage, 14)) console.log(`  ${fmt((100 * us) / total, 1).padStart(5)} %  ${k}`);
  console.log('hottest functions (self time):');
  for (const [k, us] of top(byFunction, 15)) console.log(`  ${fmt((100 * us) / total, 1).padStart(5)} %  ${k}`);
}
