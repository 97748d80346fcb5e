#!/usr/bin/env node
// Analytics at scale: the WHOLE platform (standalone build, one process, as `npm start` runs it) on a fresh database
// (DATABASE_URL's server, a database of its own, else the embedded PostgreSQL), whose calls service has created its
// schema with its own migrations at start-up (CALLS_MIGRATIONS, index calls_analytics_usage included); then --calls
// synthetic calls of one account are written straight into calls.calls (and some ratings into calls.call_ratings)
// with INSERT … SELECT generate_series, and the analytics routes are measured through the public HTTP API.
//
//   npx nx run standalone:build
//   npm run bench:analytics                          # 1 M calls, 30 requests per measurement
//   npm run bench:analytics -- --calls 200000 --requests 50
// Flags: --calls <n> calls of the measured account (default 1000000), spread over --days (default 35) up to now;
// --other <n> calls of another account in the same table (default 100000); --requests <n> per measurement (default
// 30, after 2 unmeasured); --dist <dir> the build (default dist).
//
// The data: 8 agents; 60 % outbound, 30 % inbound, 10 % web; 75 % answered, lasting 10 s to 10 min; end reasons
// completed, hangup, transferred (5 % of answered), silence, max_duration, no_answer, busy, canceled; a rating on 10 %
// of the answered calls (3 to 5 of 5; a third of them 5 to 10 of 10), written as the calls service writes one (with
// its call's creation time, agent and direction). An answered call has a cost, an agent turn per 30 s (1 to 20), one
// in 8 of them cut off (kept on the call's row), and the response latency of each turn but the greeting (400-2000 ms,
// in calls.call_turn_latencies, as the calls service writes them). After loading, VACUUM ANALYZE (what autovacuum does
// after a bulk load; the index-only scans need the visibility map), then the wait for the calls service's analytics
// refresher to compute the slots and days the load marked dirty (every one but today's, read from the rows until it
// ends), and VACUUM ANALYZE of its tables.
//
// What it prints: load time, then p50/p95/max latency of each request (sequential, one client):
//   overview 30 d                   GET /v1/analytics/overview (the default period: the last 30 days)
//   overview 30 d, one agent        … ?agent_id=
//   timeseries 30 d, day, New York  GET /v1/analytics/timeseries?bucket=day&timezone=America/New_York
//   timeseries 30 d, hour, UTC      … bucket=hour (720 buckets)
// Target (issue 22): a 30-day overview over 1 M calls ≤ 500 ms (printed beside the figures, not asserted).
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { missingBuilds } from './media/build.mjs';
import { BENCH_KEY, startPlatform } from './media/platform.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]?.startsWith('--') ? '' : all[i + 1]]] : acc), []));
const o = {
  calls: Number(args.calls ?? 1_000_000),
  other: Number(args.other ?? 100_000),
  days: Number(args.days ?? 35),
  requests: Number(args.requests ?? 30),
  dist: resolve(args.dist ?? join(ROOT, 'dist')),
};
const TARGET_MS = 500;
// BOOTSTRAP_KEYS of bench/media/platform.mjs: `bench:owner:<key>`, the account `bench`.
const ACCOUNT = 'bench';

const missing = missingBuilds(o.dist, 'standalone');
if (missing.length) {
  console.error(`Build the platform first:\n  ${missing.join('\n  ')}`);
  process.exit(1);
}

const pct = (xs, p) => {
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const f1 = (x, w = 7) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a').padStart(w);
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

/** Inserts `n` calls of `account` spread over the last `days` days (deterministic in the row number). */
async function insertCalls(db, account, n, days, prefix) {
  const chunk = 250_000;
  for (let start = 1; start <= n; start += chunk) {
    const end = Math.min(n, start + chunk - 1);
    await db.query(
      `INSERT INTO calls.calls (id, account_id, agent_id, direction, to_number, from_number, status, end_reason, transferred_to,
                                created_at, updated_at, answered_at, ended_at, cost, agent_turns, barge_ins)
       SELECT 'call_' || $1 || lpad(i::text, 18, '0'), $2, 'agt_bench' || (i % 8), d.direction, '+15550001111', '+15550002222', 'ended',
              CASE WHEN a.answered THEN (CASE WHEN k < 70 THEN 'completed' WHEN k < 90 THEN 'hangup' WHEN k < 95 THEN 'transferred'
                                              WHEN k < 98 THEN 'silence' ELSE 'max_duration' END)
                   ELSE (CASE WHEN h % 3 = 0 THEN 'no_answer' WHEN h % 3 = 1 THEN 'busy' ELSE 'canceled' END) END,
              CASE WHEN a.answered AND k BETWEEN 90 AND 94 THEN '+15559990000' END,
              t.created, t.created + interval '1 minute',
              CASE WHEN a.answered THEN t.created + interval '5 seconds' END,
              t.created + interval '5 seconds' + make_interval(secs => u.seconds),
              -- An answered call's cost (carrier minutes, STT, LLM, TTS at list-like prices), an agent turn per 30 s, one in
              -- 8 cut off; an unanswered call costs nothing.
              CASE WHEN a.answered THEN round(ceil(u.seconds / 60.0) * 0.014 + u.seconds * 0.0059 / 60 + u.turns * 0.0004 + u.turns * 0.0018, 10) ELSE 0 END,
              CASE WHEN a.answered THEN u.turns ELSE 0 END,
              CASE WHEN a.answered THEN u.turns / 8 ELSE 0 END
         FROM generate_series($3::int, $4::int) i
         CROSS JOIN LATERAL (SELECT (i::bigint * 2654435761) % 1000003 AS h, ((i::bigint * 40503) % 65537) % 100 AS k) x
         CROSS JOIN LATERAL (SELECT now() - make_interval(secs => ($5::float8 * 86400) * i / $6) AS created) t
         CROSS JOIN LATERAL (SELECT (x.h % 100) < 75 AS answered) a
         CROSS JOIN LATERAL (SELECT 10 + (x.h * 37) % 590 AS seconds, 1 + (10 + (x.h * 37) % 590) / 30 AS turns) u
         CROSS JOIN LATERAL (SELECT CASE WHEN i % 10 < 6 THEN 'outbound' WHEN i % 10 < 9 THEN 'inbound' ELSE 'web' END AS direction) d`,
      [prefix, account, start, end, days, n],
    );
    process.stdout.write(`\r  ${account}: ${end.toLocaleString('en')} of ${n.toLocaleString('en')} calls`);
  }
  process.stdout.write('\n');
  // Each answered call's agent turns but the greeting have a response latency (400-2000 ms), as appendTurn writes them.
  await db.query(
    `INSERT INTO calls.call_turn_latencies (call_id, seq, account_id, call_created_at, agent_id, direction, project_id, latency_ms)
     SELECT id, 2 * j, account_id, created_at, agent_id, direction, project_id, 400 + ((hashtext(id) & 65535) + j * 7919) % 1600
       FROM calls.calls CROSS JOIN LATERAL generate_series(1, agent_turns - 1) j
      WHERE account_id = $1 AND agent_turns > 1`,
    [account],
  );
  await db.query(
    `INSERT INTO calls.call_ratings (id, account_id, call_id, source, scale, score, created_at, call_created_at, agent_id, direction)
     SELECT 'csat_' || substr(id, 6), account_id, id, 'api', CASE WHEN n % 3 = 0 THEN 10 ELSE 5 END,
            CASE WHEN n % 3 = 0 THEN 5 + n % 6 ELSE 3 + n % 3 END, ended_at + interval '1 minute', created_at, agent_id, direction
       FROM (SELECT id, account_id, ended_at, created_at, agent_id, direction, row_number() OVER () AS n FROM calls.calls
              WHERE account_id = $1 AND answered_at IS NOT NULL AND hashtext(id) % 10 = 0) r`,
    [account],
  );
}

async function measure(api, label, path, n) {
  for (let i = 0; i < 2; i++) await api(path);
  const times = [];
  let last;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    last = await api(path);
    times.push(performance.now() - t0);
  }
  const p95 = pct(times, 95);
  console.log(
    `  ${label.padEnd(34)} n ${String(n).padStart(3)}  p50 ${f1(pct(times, 50))}  p95 ${f1(p95)}  max ${f1(Math.max(...times))} ms  (target ≤ ${TARGET_MS} ms: ${p95 <= TARGET_MS ? 'meets' : 'MISSES'})`,
  );
  return last;
}

async function main() {
  console.log(
    `analytics bench, ${new Date().toISOString()}: standalone (${process.env.DATABASE_URL ? 'DATABASE_URL server' : 'embedded PostgreSQL'}), ${cpus().length} cores (${cpus()[0]?.model.trim()}), ${Math.round(totalmem() / 2 ** 30)} GB, load average ${load()}, Node ${process.version}`,
  );
  console.log(`${o.calls.toLocaleString('en')} calls of one account over ${o.days} days (+ ${o.other.toLocaleString('en')} of another); ${o.requests} requests per measurement`);
  const platform = await startPlatform({ mode: 'standalone', dist: o.dist, calls: 10, env: {} });
  const dbUrl = platform.env.DATABASE_URL ?? `postgres://postgres:parley@127.0.0.1:${platform.env.EMBEDDED_PG_PORT}/parley`;
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  try {
    const t0 = performance.now();
    await insertCalls(db, ACCOUNT, o.calls, o.days, 'b');
    if (o.other) await insertCalls(db, 'acc_other', o.other, o.days, 'o');
    const loaded = performance.now() - t0;
    const t1 = performance.now();
    await db.query(`VACUUM (ANALYZE) calls.calls`);
    await db.query(`VACUUM (ANALYZE) calls.call_ratings`);
    await db.query(`VACUUM (ANALYZE) calls.call_turn_latencies`);
    const [{ size, latencies }] = (
      await db.query(
        `SELECT pg_size_pretty(pg_relation_size('calls.calls_analytics_usage')) AS size, pg_size_pretty(pg_relation_size('calls.call_turn_latencies_analytics')) AS latencies`,
      )
    ).rows;
    console.log(
      `loaded in ${(loaded / 1000).toFixed(1)} s, VACUUM ANALYZE ${((performance.now() - t1) / 1000).toFixed(1)} s; indexes calls_analytics_usage ${size}, call_turn_latencies_analytics ${latencies}; load average ${load()}`,
    );
    const t2 = performance.now();
    for (;;) {
      const [{ dirty }] = (
        await db.query(
          `SELECT (SELECT count(*) FROM calls.call_analytics_dirty_slots) + (SELECT count(*) FROM calls.call_analytics_dirty_days WHERE day + interval '1 day' <= now()) AS dirty`,
        )
      ).rows;
      if (Number(dirty) === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const refreshed = performance.now() - t2;
    for (const table of ['call_analytics_slots', 'call_analytics_days', 'call_analytics_day_durations', 'call_analytics_day_latencies']) {
      await db.query(`VACUUM (ANALYZE) calls.${table}`);
    }
    const [figures] = (
      await db.query(
        `SELECT (SELECT count(*) FROM calls.call_analytics_slots) AS slots, (SELECT count(*) FROM calls.call_analytics_days) AS days,
                (SELECT count(*) FROM calls.call_analytics_day_durations) AS durations, (SELECT count(*) FROM calls.call_analytics_day_latencies) AS latencies`,
      )
    ).rows;
    console.log(
      `figures computed by the refresher ${(refreshed / 1000).toFixed(1)} s after the load was vacuumed: ${figures.slots} slot rows, ${figures.days} day rows, histogram rows ${figures.durations} (durations) ${figures.latencies} (latencies); load average ${load()}`,
    );

    const api = async (path) => {
      const res = await fetch(`${platform.baseUrl}${path}`, { headers: { authorization: `Bearer ${BENCH_KEY}` } });
      const body = await res.json();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
      return body;
    };
    const overview = await measure(api, 'overview 30 d', '/v1/analytics/overview', o.requests);
    console.log(
      `    calls ${overview.calls}, answered ${overview.answered} (${overview.answer_rate}), ${overview.minutes} min, p50 ${overview.duration.p50_seconds} s, p95 ${overview.duration.p95_seconds} s, transfer rate ${overview.transfer_rate}, CSAT ${overview.csat.average} (${overview.csat.count})`,
    );
    console.log(
      `    cost ${overview.cost.total} ${overview.cost.currency} (${overview.cost.average_per_call} a call), response latency p50 ${overview.response_latency.p50_ms} ms p95 ${overview.response_latency.p95_ms} ms over ${overview.response_latency.turns} turns, barge-in rate ${overview.barge_in.rate} (${overview.barge_in.count} of ${overview.barge_in.agent_turns})`,
    );
    await measure(api, 'overview 30 d, one agent', '/v1/analytics/overview?agent_id=agt_bench3', o.requests);
    const days = await measure(api, 'timeseries 30 d, day, New York', '/v1/analytics/timeseries?bucket=day&timezone=America/New_York', o.requests);
    console.log(`    ${days.data.length} buckets, ${days.data.reduce((s, b) => s + b.calls, 0)} calls, cost ${days.data.reduce((s, b) => s + b.cost, 0).toFixed(2)}`);
    const hours = await measure(api, 'timeseries 30 d, hour, UTC', '/v1/analytics/timeseries?bucket=hour', o.requests);
    console.log(`    ${hours.data.length} buckets, ${hours.data.reduce((s, b) => s + b.calls, 0)} calls`);
    console.log(`load average at the end ${load()}`);
    if (platform.exited.length) console.log(`platform processes exited: ${platform.exited.join('; ')}`);
  } finally {
    await db.end();
    await platform.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
