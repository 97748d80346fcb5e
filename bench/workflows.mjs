#!/usr/bin/env node
// Workflows (outbound campaigns) as users meet them: the WHOLE platform (standalone build, one command, as `npm start`
// runs it) on a fresh database (DATABASE_URL's server, a database of its own, else the embedded PostgreSQL), driven
// over its public HTTP API only; the calls go to the dev carrier (the standalone default without Twilio credentials),
// whose switch rings the fictional +1555… numbers, nobody answers, and each call ends `no_answer` after the agent's
// ring_seconds (docs/dev-phone.md), so lines free up as a real campaign's do.
//
//   npx nx run standalone:build
//   npm run bench:workflows
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:workflows -- --recipients 10000
// Flags: --recipients <n> phase 1's run size (default 10000); --page <n> recipients per POST (default 1000, the API's
// most); --concurrency <n> the workflow's concurrency (default 1000, the API's most); --ring <s> the agent's ring_seconds
// (default 1); --lead <s> phase 1's start_at this far after the first POST (default 20: every page is in before it);
// --paced-recipients <n> phase 2's run size (default --recipients; 0 skips phase 2); --paced-rate <n> recipients due per
// second in phase 2 (default half phase 1's steady dispatch rate); --paced-seconds <s> phase 2's length instead (then
// rate × seconds recipients); --timeout <s> per phase (default 600); --dist <dir> (default dist).
//
// Phase 1 (burst): one run of --recipients, its first page with recipients_complete false and a start_at --lead s
//   ahead, the rest in pages of --page through POST …/runs/{run_id}/recipients (the last with complete true), so every
//   recipient becomes due at one known instant. Printed: each page's POST latency; calls placed per second (first
//   call → last, and the steady part between 10 % and 90 % of the calls); time from start_at to the last call placed;
//   the lag per call (its created_at, GET /v1/calls?workflow_run_id=… paged through, minus the instant its recipient
//   became due: max(start_at, the recipient's created_at), GET …/recipients). With everything due at once this lag
//   is the backlog's (the k-th call waits k / rate), not the dispatcher's own delay; phase 2 measures that.
// Phase 2 (paced): a second run of --paced-recipients (10,000 by default, as many as phase 1) started now, fed small
//   pages (one every 200 ms) at --paced-rate recipients per second, below what phase 1 showed the platform sustains: a
//   campaign whose recipients come due over time (staggered, or as calling windows open across time zones). A
//   recipient of a running run is due when its page is taken (its created_at), so the lag per call is
//   created_at(call) − created_at(recipient). The target (issue 21: lag p95 ≤ 1 s) is judged on both phases.
// Both phases also print the platform's own histogram, parley_workflow_dispatch_lag_seconds (due → CreateCall
// answered, quantiles interpolated within its buckets), the mean CreateCall time the dispatcher saw, call admission
// refusals, the peak of the run's in-progress count (the run's concurrency cap binds only if it reaches it), and the
// platform's CPU seconds and peak RSS (VmHWM of the main process and of the media worker child).
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { missingBuilds } from './media/build.mjs';
import { BENCH_KEY, startPlatform } from './media/platform.mjs';
import { pidListeningOn, usageOf } from './media/process-usage.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]?.startsWith('--') ? '' : all[i + 1]]] : acc), []));
const o = {
  recipients: Number(args.recipients ?? 10_000),
  page: Number(args.page ?? 1000),
  concurrency: Number(args.concurrency ?? 1000),
  ring: Number(args.ring ?? 1),
  lead: Number(args.lead ?? 20),
  pacedRecipients: Number(args['paced-recipients'] ?? args.recipients ?? 10_000),
  pacedSeconds: Number(args['paced-seconds'] ?? 0),
  pacedRate: Number(args['paced-rate'] ?? 0),
  timeout: Number(args.timeout ?? 600),
  dist: resolve(args.dist ?? join(ROOT, 'dist')),
};
const TARGET_P95_S = 1;
const LINES = 20_000; // MAX_CONCURRENT_CALLS: neither the account's ceiling nor a media worker's size refuses calls
const PACED_TICK_MS = 200;

const missing = missingBuilds(o.dist, 'standalone');
if (missing.length) {
  console.error(`Build the platform first:\n  ${missing.join('\n  ')}`);
  process.exit(1);
}
const now = new Date();
if (now.getUTCHours() === 23 && now.getUTCMinutes() >= 50) console.warn('note: the calling window closes at 23:59 UTC; a run crossing it waits for 00:00.');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f = (x, d = 0, w = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a').padStart(w);
const verdict = (ok) => (ok ? 'meets' : 'MISSES');
const number = (phase, i) => `+1555${phase}${String(i).padStart(6, '0')}`; // fictional (555) numbers, distinct per phase

function apiOf(baseUrl) {
  return async (method, path, body) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${BENCH_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let parsed;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed };
  };
}

const must = (res, what, status = [200, 201, 202]) => {
  if (!status.includes(res.status)) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

/** Every item of a list route, 100 at a time. */
async function listAll(api, path) {
  const items = [];
  let after = '';
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const page = must(await api('GET', `${path}${sep}limit=100${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`), `list ${path}`);
    items.push(...page.data);
    if (!page.has_more || !page.next_cursor) return items;
    after = page.next_cursor;
  }
}

/** A Prometheus histogram (and related figures) from the platform's /metrics text. */
function readMetrics(text) {
  const buckets = [];
  let count = 0;
  let sum = 0;
  for (const line of text.split('\n')) {
    let m = /^parley_workflow_dispatch_lag_seconds_bucket\{le="([^"]+)"\} ([0-9.e+-]+)$/.exec(line);
    if (m) buckets.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])]);
    m = /^parley_workflow_dispatch_lag_seconds_count ([0-9.e+-]+)$/.exec(line);
    if (m) count = Number(m[1]);
    m = /^parley_workflow_dispatch_lag_seconds_sum ([0-9.e+-]+)$/.exec(line);
    if (m) sum = Number(m[1]);
  }
  const labelled = (name, filter) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(name) && filter.every((x) => l.includes(x)))
      .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const refusals = {};
  for (const m of text.matchAll(/^parley_call_admissions_total\{([^}]*)\} ([0-9.e+-]+)$/gm)) {
    if (!m[1].includes('outcome="refused"')) continue;
    const reason = /reason="([^"]*)"/.exec(m[1])?.[1] ?? '?';
    refusals[reason] = (refusals[reason] ?? 0) + Number(m[2]);
  }
  return {
    lag: { buckets, count, sum },
    placed: Number(/^parley_workflow_calls_placed_total ([0-9.e+-]+)$/m.exec(text)?.[1] ?? 0),
    createCall: {
      count: labelled('parley_rpc_client_duration_seconds_count', ['method="createCall"']),
      sum: labelled('parley_rpc_client_duration_seconds_sum', ['method="createCall"']),
    },
    refusals,
  };
}

/** The histogram's growth between two readings, with quantiles interpolated linearly inside a bucket. */
function lagDelta(before, after) {
  const buckets = after.lag.buckets.map(([le, n], i) => [le, n - (before.lag.buckets[i]?.[1] ?? 0)]);
  const count = after.lag.count - before.lag.count;
  const q = (p) => {
    const rank = p * count;
    let prevLe = 0;
    let prevN = 0;
    for (const [le, n] of buckets) {
      if (n >= rank) {
        if (le === Infinity) return `> ${prevLe}`;
        return (prevLe + ((le - prevLe) * (rank - prevN)) / Math.max(1, n - prevN)).toFixed(2);
      }
      prevLe = le;
      prevN = n;
    }
    return 'n/a';
  };
  const within = (limit) => {
    const b = buckets.find(([le]) => le === limit);
    return b && count ? (100 * b[1]) / count : NaN;
  };
  return {
    count,
    mean: count ? (after.lag.sum - before.lag.sum) / count : NaN,
    p50: q(0.5),
    p95: q(0.95),
    p99: q(0.99),
    within1s: within(1),
    placed: after.placed - before.placed,
    createCallMeanMs: (1000 * (after.createCall.sum - before.createCall.sum)) / Math.max(1, after.createCall.count - before.createCall.count),
    createCalls: after.createCall.count - before.createCall.count,
    refusals: Object.fromEntries(Object.entries(after.refusals).map(([k, v]) => [k, v - (before.refusals[k] ?? 0)]).filter(([, v]) => v > 0)),
  };
}

/** VmHWM (peak resident set, MB) of a process. */
function peakRssMb(pid) {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

/**
 * Polls the run every 500 ms until it is completed (every recipient final, the last page given) or the deadline;
 * keeps the peak of in_progress (recipients dialing or in a call: the lines the run holds).
 */
async function watchRun(api, workflowId, runId, deadlineMs, watch) {
  for (;;) {
    const res = await api('GET', `/v1/workflows/${workflowId}/runs/${runId}`);
    if (res.status !== 200) {
      // A slow answer under load is a finding (printed), not the end of the measurement.
      watch.errors.push(`${res.status} ${res.body?.code ?? ''}`.trim());
      if (performance.now() > deadlineMs) return watch.last ?? { status: 'unknown', counts: {} };
      await sleep(500);
      continue;
    }
    const run = res.body;
    watch.peakInProgress = Math.max(watch.peakInProgress, run.counts.in_progress);
    watch.last = run;
    if (run.status === 'completed' || run.status === 'cancelled') return run;
    if (performance.now() > deadlineMs) return run;
    await sleep(500);
  }
}

/** Per call: its recipient's due instant and the lag (s) from it to the call's created_at. */
async function lagsOf(api, workflowId, runId, dueOf) {
  const recipients = await listAll(api, `/v1/workflows/${workflowId}/runs/${runId}/recipients`);
  const byId = new Map(recipients.map((r) => [r.id, r]));
  const calls = await listAll(api, `/v1/calls?workflow_run_id=${runId}`);
  const rows = [];
  let unmatched = 0;
  for (const c of calls) {
    const r = byId.get(c.workflow_recipient_id);
    if (!r) {
      unmatched += 1;
      continue;
    }
    const created = Date.parse(c.created_at);
    rows.push({ created, lag: (created - dueOf(r)) / 1000, endReason: c.end_reason, status: c.status });
  }
  const perRecipient = new Map();
  for (const c of calls) perRecipient.set(c.workflow_recipient_id, (perRecipient.get(c.workflow_recipient_id) ?? 0) + 1);
  const twice = [...perRecipient.values()].filter((n) => n > 1).length;
  const states = recipients.reduce((acc, r) => ((acc[r.state] = (acc[r.state] ?? 0) + 1), acc), {});
  return { recipients, calls, rows, unmatched, twice, states };
}

function printLags(label, rows, extra = '') {
  const lags = rows.map((r) => r.lag);
  console.log(
    `  ${label.padEnd(46)} p50 ${f(pct(lags, 50), 3)} s  p95 ${f(pct(lags, 95), 3)} s  p99 ${f(pct(lags, 99), 3)} s  max ${f(Math.max(...lags), 3)} s  (n ${lags.length})${extra}`,
  );
}

function printRates(rows, from) {
  const t = rows.map((r) => r.created).sort((a, b) => a - b);
  if (!t.length) return { steady: NaN };
  const n = t.length;
  const overall = n > 1 ? (n - 1) / ((t[n - 1] - t[0]) / 1000) : NaN;
  const lo = Math.floor(n * 0.1);
  const hi = Math.floor(n * 0.9);
  const steady = n >= 20 && t[hi] > t[lo] ? (hi - lo) / ((t[hi] - t[lo]) / 1000) : NaN;
  // Calls placed in each whole second from the first call: the spread of the per-second rate.
  const perSecond = new Map();
  for (const x of t) perSecond.set(Math.floor((x - t[0]) / 1000), (perSecond.get(Math.floor((x - t[0]) / 1000)) ?? 0) + 1);
  const seconds = Math.floor((t[n - 1] - t[0]) / 1000);
  const full = Array.from({ length: seconds }, (_, s) => perSecond.get(s) ?? 0); // complete seconds only
  if (from !== undefined) console.log(`  first call placed                              ${f((t[0] - from) / 1000, 3)} s after the recipients were due`);
  console.log(`  last call placed                               ${f((t[n - 1] - (from ?? t[0])) / 1000, 2)} s after ${from !== undefined ? 'they were due' : 'the first'}`);
  console.log(`  calls placed per second, first → last          ${f(overall, 1)}`);
  console.log(`  calls placed per second, steady (10 %–90 %)    ${f(steady, 1)}`);
  if (full.length) console.log(`  calls per whole second: min ${Math.min(...full)}, median ${pct(full, 50)}, max ${Math.max(...full)} (${full.length} s)`);
  return { steady, overall };
}

function printMetrics(d, concurrency, peak, errors = []) {
  if (errors.length) console.log(`  GET …/runs/{run_id} while watching the run failed ${errors.length} times: ${[...new Set(errors)].join(', ')}`);
  console.log(
    `  platform histogram parley_workflow_dispatch_lag_seconds (due → CreateCall answered): n ${d.count}, mean ${f(d.mean, 3)} s, ` +
      `p50 ≈ ${d.p50} s, p95 ≈ ${d.p95} s, p99 ≈ ${d.p99} s, ${f(d.within1s, 1)} % within 1 s (bucket-interpolated)`,
  );
  console.log(
    `  dispatcher's CreateCall (gRPC to calls): ${d.createCalls} calls, mean ${f(d.createCallMeanMs, 1)} ms; parley_workflow_calls_placed_total +${d.placed}; ` +
      `admission refusals: ${Object.keys(d.refusals).length ? Object.entries(d.refusals).map(([k, v]) => `${k} ${v}`).join(', ') : 'none'}`,
  );
  console.log(`  run's in_progress peak ${peak} of its concurrency ${concurrency} (${peak >= concurrency ? 'the cap BOUND: some recipients waited for a line' : 'the cap never bound'})`);
}

async function main() {
  console.log(
    `workflows bench, ${new Date().toISOString()}: standalone (${process.env.DATABASE_URL ? 'DATABASE_URL server' : 'embedded PostgreSQL'}), dev carrier, ${cpus().length} cores (${cpus()[0]?.model.trim()}), ${Math.round(totalmem() / 2 ** 30)} GB, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}, Node ${process.version}`,
  );
  console.log(
    `phase 1: ${o.recipients} recipients in pages of ${o.page}, start_at +${o.lead} s; workflow concurrency ${o.concurrency}; agent ring_seconds ${o.ring}; MAX_CONCURRENT_CALLS ${LINES}`,
  );
  const platform = await startPlatform({
    mode: 'standalone',
    dist: o.dist,
    calls: 10,
    env: { MAX_CONCURRENT_CALLS: String(LINES), MEDIA_WORKER_CAPACITY: String(LINES), DEV_CARRIER: 'on', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' },
  });
  const api = apiOf(platform.baseUrl);
  const port = Number(new URL(platform.baseUrl).port);
  const mainPid = pidListeningOn(port);
  const mediaPid = pidListeningOn(platform.mediaPort);
  const metrics = async () => readMetrics(await (await fetch(`${platform.baseUrl}/metrics`)).text());
  let failed = false;
  try {
    const cpu0 = mainPid ? usageOf(mainPid).cpuSeconds : NaN;
    const agent = must(await api('POST', '/v1/agents', { name: 'Campaign bench', languages: [{ code: 'en-US' }], ring_seconds: o.ring }), 'create agent');
    const workflow = must(
      await api('POST', '/v1/workflows', {
        name: 'Bench campaign',
        agent_id: agent.id,
        timezone: 'UTC',
        calling_window: { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '23:59' },
        concurrency: o.concurrency,
        // No retries: each recipient gets one call, so the run completes once every call has rung out.
        retry: { busy: { retries: 0, wait_seconds: 60 }, no_answer: { retries: 0, wait_seconds: 60 }, voicemail: { retries: 0, wait_seconds: 60 }, carrier_error: { retries: 0, wait_seconds: 60 } },
      }),
      'create workflow',
    );

    // ---- Phase 1: burst.
    const pages = [];
    for (let i = 0; i < o.recipients; i += o.page) pages.push(Array.from({ length: Math.min(o.page, o.recipients - i) }, (_, k) => ({ to: number(1, i + k) })));
    const startAt = new Date(Math.ceil((Date.now() + o.lead * 1000) / 1000) * 1000);
    const posts = [];
    const ingest0 = performance.now();
    let t = performance.now();
    const run = must(
      await api('POST', `/v1/workflows/${workflow.id}/runs`, { recipients: pages[0], recipients_complete: pages.length === 1, start_at: startAt.toISOString() }),
      'start run',
    );
    posts.push(performance.now() - t);
    let added = run.page.added;
    let suppressed = run.page.suppressed;
    for (let p = 1; p < pages.length; p++) {
      t = performance.now();
      const res = must(await api('POST', `/v1/workflows/${workflow.id}/runs/${run.id}/recipients`, { recipients: pages[p], complete: p === pages.length - 1 }), `page ${p + 1}`);
      posts.push(performance.now() - t);
      added += res.page.added;
      suppressed += res.page.suppressed;
    }
    const ingestMs = performance.now() - ingest0;
    const ingestEnd = Date.now();
    console.log(`\n== phase 1 — burst: ${o.recipients} recipients due at ${startAt.toISOString()} (run ${run.id})`);
    console.log(
      `  ingest: ${pages.length} POSTs in ${f(ingestMs / 1000, 2)} s (${f((1000 * added) / ingestMs)} recipients/s); per POST of ${o.page}: ` +
        `${posts.map((ms) => f(ms)).join(', ')} ms (p50 ${f(pct(posts, 50))}, max ${f(Math.max(...posts))}); ${added} taken, ${suppressed} suppressed`,
    );
    if (ingestEnd > startAt.getTime()) console.log(`  note: the last page went in ${f((ingestEnd - startAt.getTime()) / 1000, 2)} s after start_at; its recipients are due from their own created_at`);
    const m1 = await metrics();
    const watch1 = { peakInProgress: 0, last: undefined, errors: [] };
    const final1 = await watchRun(api, workflow.id, run.id, performance.now() + (o.lead + o.timeout) * 1000, watch1);
    const m1b = await metrics();
    const r1 = await lagsOf(api, workflow.id, run.id, (r) => Math.max(startAt.getTime(), Date.parse(r.created_at)));
    console.log(`  run ${final1.status}: counts ${JSON.stringify(final1.counts)}; ${r1.calls.length} calls listed; recipients by state ${JSON.stringify(r1.states)}`);
    if (final1.status !== 'completed') {
      failed = true;
      console.log(`  INCOMPLETE: the run did not complete within ${o.timeout} s after start_at`);
    }
    if (r1.twice) {
      failed = true;
      console.log(`  ${r1.twice} recipients were called more than once (no retry policy was set: a duplicate placement)`);
    }
    if (r1.unmatched) console.log(`  ${r1.unmatched} calls name no recipient of the run`);
    const rates1 = printRates(r1.rows, startAt.getTime());
    printLags('lag due → call created (backlog included)', r1.rows, `   target p95 ≤ ${TARGET_P95_S} s: ${verdict(pct(r1.rows.map((r) => r.lag), 95) <= TARGET_P95_S)}`);
    printMetrics(lagDelta(m1, m1b), o.concurrency, watch1.peakInProgress, watch1.errors);
    const ends = r1.calls.reduce((acc, c) => ((acc[c.end_reason ?? c.status] = (acc[c.end_reason ?? c.status] ?? 0) + 1), acc), {});
    console.log(`  the calls ended: ${JSON.stringify(ends)}`);

    // ---- Phase 2: paced, below the rate phase 1 sustained.
    if (o.pacedSeconds > 0 || o.pacedRecipients > 0) {
      const rate = o.pacedRate || Math.max(1, Math.floor((Number.isFinite(rates1.steady) ? rates1.steady : rates1.overall) / 2));
      const perTick = (rate * PACED_TICK_MS) / 1000;
      const seconds = o.pacedSeconds || o.pacedRecipients / rate;
      const ticks = Math.max(1, Math.round((seconds * 1000) / PACED_TICK_MS));
      console.log(`\n== phase 2 — paced: ${rate} recipients due per second for ${f(seconds, 1)} s (${Math.round(rate * seconds)} recipients, a page every ${PACED_TICK_MS} ms), a run started now`);
      const m2 = await metrics();
      const run2 = must(await api('POST', `/v1/workflows/${workflow.id}/runs`, { recipients_complete: false }), 'start paced run');
      const posts2 = [];
      let sent = 0;
      let owed = 0;
      const p0 = performance.now();
      for (let k = 0; k < ticks; k++) {
        const due = p0 + k * PACED_TICK_MS;
        if (due > performance.now()) await sleep(due - performance.now());
        owed += perTick;
        const n = Math.floor(owed);
        owed -= n;
        const last = k === ticks - 1;
        if (!n && !last) continue;
        const page = Array.from({ length: n }, (_, i) => ({ to: number(2, sent + i) }));
        sent += n;
        const t2 = performance.now();
        must(await api('POST', `/v1/workflows/${workflow.id}/runs/${run2.id}/recipients`, { recipients: page, complete: last }), 'paced page');
        posts2.push(performance.now() - t2);
      }
      const watch2 = { peakInProgress: 0, last: undefined, errors: [] };
      const final2 = await watchRun(api, workflow.id, run2.id, performance.now() + o.timeout * 1000, watch2);
      const m2b = await metrics();
      const r2 = await lagsOf(api, workflow.id, run2.id, (r) => Date.parse(r.created_at));
      console.log(`  ${sent} recipients in ${posts2.length} POSTs (p50 ${f(pct(posts2, 50))} ms, p95 ${f(pct(posts2, 95))} ms); run ${final2.status}: counts ${JSON.stringify(final2.counts)}; ${r2.calls.length} calls listed`);
      if (final2.status !== 'completed') {
        failed = true;
        console.log(`  INCOMPLETE: the run did not complete within ${o.timeout} s`);
      }
      if (r2.twice) {
        failed = true;
        console.log(`  ${r2.twice} recipients were called more than once`);
      }
      printRates(r2.rows);
      printLags('lag due → call created', r2.rows, `   target p95 ≤ ${TARGET_P95_S} s: ${verdict(pct(r2.rows.map((r) => r.lag), 95) <= TARGET_P95_S)}`);
      printMetrics(lagDelta(m2, m2b), o.concurrency, watch2.peakInProgress, watch2.errors);
    }

    const cpu1 = mainPid ? usageOf(mainPid).cpuSeconds : NaN;
    console.log(
      `\nplatform process (pid ${mainPid ?? '?'}): ${f(cpu1 - cpu0, 1)} CPU s over the bench, peak RSS ${f(peakRssMb(mainPid), 0)} MB; ` +
        `media worker child (pid ${mediaPid ?? '?'}): peak RSS ${f(peakRssMb(mediaPid), 0)} MB`,
    );
  } finally {
    const exited = platform.exited.slice();
    if (exited.length) {
      failed = true;
      console.log(`platform processes that died: ${exited.join(', ')}\n${platform.logs()}`);
    }
    await platform.stop();
  }
  return failed;
}

try {
  process.exit((await main()) ? 1 : 0);
} catch (error) {
  console.error(error);
  process.exit(2);
}
