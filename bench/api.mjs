// Throughput and latency of the public API through the full path (gateway → gRPC → agents service → PostgreSQL),
// beside a minimal single-process Fastify + pg server doing the same query on the same table, and their ratio.
// The GETs go round 100 agents; the gateway coalesces concurrent ones (one GetAgents call and one query per
// event-loop turn, no cache), and the run prints how many reads each call carried.
//   npx nx run standalone:build
//   node bench/api.mjs [--seconds 10] [--connections 32] [--rounds 3]
// With DATABASE_URL the platform gets a fresh database on that server (dropped afterwards); without it, embedded
// PostgreSQL. The platform and the baseline each run in their own process; the load generator (autocannon) in
// this one, so neither server shares its event loop with the load. A run where any request failed is reported as
// invalid (exit code 1) rather than turned into a ratio.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { freePorts } from './ports.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));

if (args['baseline-server']) await baselineServer(args['baseline-server'], args.account);
else await main();

/**
 * The baseline: what a minimal hand-written service does for the same two routes — one pooled query each, on the
 * agents service's own table, the agent's fields spread from its `spec` as the real API answers them.
 */
async function baselineServer(dbUrl, account) {
  const pool = new pg.Pool({ connectionString: dbUrl, max: 10 });
  const fastify = Fastify();
  const toAgent = (row) => ({ id: row.id, object: 'agent', name: row.name, ...row.spec, created_at: row.created_at, updated_at: row.updated_at });
  fastify.get('/agents/:id', async (req, reply) => {
    const { rows } = await pool.query('SELECT id, name, spec, created_at, updated_at FROM agents.agents WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL', [
      req.params.id,
      account,
    ]);
    if (!rows[0]) return reply.code(404).send({});
    return toAgent(rows[0]);
  });
  fastify.post('/agents', async (req, reply) => {
    const { name, ...spec } = req.body;
    const { rows } = await pool.query(
      `INSERT INTO agents.agents (id, account_id, name, spec, created_at, updated_at)
       VALUES ($1, $2, $3, $4, now(), now()) RETURNING id, name, spec, created_at, updated_at`,
      [`agt_${randomBytes(16).toString('hex')}`, account, name, JSON.stringify(spec)],
    );
    return reply.code(201).send(toAgent(rows[0]));
  });
  const url = await fastify.listen({ port: 0, host: '127.0.0.1' });
  console.log(url);
}

async function main() {
  const seconds = Number(args.seconds ?? 10);
  const connections = Number(args.connections ?? 32);
  const rounds = Number(args.rounds ?? 3);
  const root = new URL('..', import.meta.url).pathname;
  const KEY = 'vsk_bench_api_key_00000000000001';
  const ACCOUNT = 'bench';

  async function waitHealthy(url) {
    for (let i = 0; i < 600; i++) {
      try {
        if ((await fetch(`${url}/readyz`)).ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('platform did not become ready');
  }

  const run = (opts) =>
    new Promise((resolve, reject) => autocannon({ duration: seconds, connections, ...opts }, (err, res) => (err ? reject(err) : resolve(res))));
  const summary = (r) => ({ rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors + r.timeouts });

  // A database of its own on the given server, so runs never pile rows into a shared one.
  let dbUrl;
  let admin;
  let dbName;
  if (process.env.DATABASE_URL) {
    admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    dbName = `parley_bench_api_${randomBytes(5).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${dbName}`);
    const u = new URL(process.env.DATABASE_URL);
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();
  }

  const [port, a, c, m, w, pgPort] = await freePorts(6);
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  const env = {
    PATH: process.env.PATH ?? '',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(pgPort),
    AGENTS_GRPC_URL: `127.0.0.1:${a}`,
    CALLS_GRPC_URL: `127.0.0.1:${c}`,
    MEDIA_GRPC_URL: `127.0.0.1:${m}`,
    WEBHOOKS_GRPC_URL: `127.0.0.1:${w}`,
    BOOTSTRAP_KEYS: `${ACCOUNT}:owner:${KEY}`,
    RATE_LIMIT_REQUESTS: '100000000',
    LOG_LEVEL: 'error',
    ...(dbUrl ? { DATABASE_URL: dbUrl } : {}),
  };
  const platform = spawn(process.execPath, [join(root, 'dist/apps/standalone/apps/standalone/src/main.js')], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  let baseline;
  const base = `http://127.0.0.1:${port}`;
  let failed = false;
  try {
    await waitHealthy(base);
    const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ name: 'Bench', languages: [{ code: 'en-US' }], metadata: { k: 'v' } });
    // The GETs go round 100 agents, so nothing can answer from one hot row or one repeated request.
    const ids = [];
    for (let i = 0; i < 100; i++) {
      const agent = await (await fetch(`${base}/v1/agents`, { method: 'POST', headers, body })).json();
      if (!agent.id) throw new Error(`could not create an agent: ${JSON.stringify(agent)}`);
      ids.push(agent.id);
    }
    const roundRobin = (prefix) => {
      let next = 0;
      return [{ setupRequest: (req) => ({ ...req, path: `${prefix}/${ids[next++ % ids.length]}` }) }];
    };

    baseline = spawn(
      process.execPath,
      [new URL(import.meta.url).pathname, '--baseline-server', dbUrl ?? `postgres://postgres:parley@127.0.0.1:${pgPort}/parley`, '--account', ACCOUNT],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const baselineUrl = await new Promise((resolve, reject) => {
      createInterface({ input: baseline.stdout }).once('line', resolve);
      baseline.once('exit', (code) => reject(new Error(`the baseline server exited (${code})`)));
    });
    // Both answer the same agent the same way before anything is measured.
    const viaApi = await (await fetch(`${base}/v1/agents/${ids[0]}`, { headers })).json();
    const viaBaseline = await (await fetch(`${baselineUrl}/agents/${ids[0]}`)).json();
    if (viaBaseline.id !== viaApi.id || viaBaseline.name !== viaApi.name) throw new Error(`the baseline answers differently: ${JSON.stringify(viaBaseline)}`);

    // The gateway coalesces concurrent GETs into GetAgents calls (README, "Reads are coalesced"); its metrics tell
    // how many reads each call carried, so the figure is not mistaken for one hop per request.
    const getAgentsCalls = async () =>
      Number(/parley_rpc_client_duration_seconds_count\{[^}]*method="getAgents",code="OK"\} (\d+)/.exec(await (await fetch(`${base}/metrics`)).text())?.[1] ?? 0);
    // Each pair runs `rounds` times, alternating platform and baseline, and the median round of each counts: a
    // shared or throttled machine then skews both sides alike instead of whichever happened to run during it.
    const pairs = [
      {
        label: 'GET ',
        route: '/v1/agents/{id}',
        full: () => run({ url: base, headers, requests: roundRobin('/v1/agents') }),
        baseline: () => run({ url: baselineUrl, requests: roundRobin('/agents') }),
      },
      {
        label: 'POST',
        route: '/v1/agents',
        full: () => run({ url: `${base}/v1/agents`, method: 'POST', headers, body }),
        baseline: () => run({ url: `${baselineUrl}/agents`, method: 'POST', headers: { 'content-type': 'application/json' }, body }),
      },
    ];
    // The median round's figures, with the failures of every round (any failure invalidates the run).
    const median = (runs) => {
      const all = runs.map(summary);
      return { ...[...all].sort((x, y) => x.rps - y.rps)[Math.floor(all.length / 2)], errors: all.reduce((n, r) => n + r.errors, 0) };
    };
    const results = {};
    let readsPerCall = 0;
    for (const pair of pairs) {
      const fullRuns = [];
      const baselineRuns = [];
      const callsBefore = await getAgentsCalls();
      for (let i = 0; i < rounds; i++) {
        fullRuns.push(await pair.full());
        baselineRuns.push(await pair.baseline());
      }
      if (pair.label === 'GET ') readsPerCall = fullRuns.reduce((n, r) => n + r.requests.total, 0) / Math.max(1, (await getAgentsCalls()) - callsBefore);
      results[`${pair.label} ${pair.route.padEnd(15)}  full path`] = median(fullRuns);
      results[`${pair.label} baseline Fastify+pg`] = median(baselineRuns);
    }

    console.log(
      `\nmedian of ${rounds} alternating runs of ${seconds} s, ${connections} connections, ${dbUrl ? 'DATABASE_URL server' : 'embedded PostgreSQL'}, ${cpus().length} cores, Node ${process.version}, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    );
    console.log('route                           req/s    p50 ms  p99 ms  errors');
    for (const [name, r] of Object.entries(results)) {
      console.log(`${name.padEnd(32)}${String(r.rps).padStart(6)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${r.errors}`);
    }
    if (Object.values(results).some((r) => r.errors > 0)) {
      failed = true;
      console.log('\nINVALID: some requests failed, so no ratio is given.');
    } else {
      const keys = Object.keys(results);
      const ratio = (x, y) => results[keys[x]].rps / results[keys[y]].rps;
      console.log(`\nGET  ratio full/baseline: ${ratio(0, 1).toFixed(2)}x (target >= 0.5x: ${ratio(0, 1) >= 0.5 ? 'meets' : 'MISSES'})`);
      console.log(`POST ratio full/baseline: ${ratio(2, 3).toFixed(2)}x`);
      console.log(`GET  reads per GetAgents call (coalesced by the gateway): ${readsPerCall.toFixed(1)}`);
    }
  } finally {
    baseline?.kill('SIGTERM');
    const exited = new Promise((r) => platform.once('exit', r));
    platform.kill('SIGTERM');
    await exited;
    if (admin) {
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}
