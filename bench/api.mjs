// Throughput and latency of the public API through the full path (gateway → gRPC → agents service → PostgreSQL),
// beside a minimal single-process Fastify + pg handler doing the same query, and their ratio.
//   node bench/api.mjs [--seconds 10] [--connections 32]
// Needs the standalone build (npx nx run standalone:build). Uses DATABASE_URL when set, else embedded PostgreSQL.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const seconds = Number(args.seconds ?? 10);
const connections = Number(args.connections ?? 32);
const root = new URL('..', import.meta.url).pathname;
const KEY = 'vsk_bench_api_key_00000000000001';

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function waitHealthy(url) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('platform did not become ready');
}

const run = (opts) =>
  new Promise((resolve, reject) => autocannon({ duration: seconds, connections, ...opts }, (err, res) => (err ? reject(err) : resolve(res))));

const summary = (r) => ({ rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors });

const [port, a, c, m, w, pgPort] = await Promise.all(Array.from({ length: 6 }, freePort));
const env = {
  ...process.env,
  PORT: String(port),
  HOST: '127.0.0.1',
  DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-bench-')),
  EMBEDDED_PG_PORT: String(pgPort),
  AGENTS_GRPC_URL: `127.0.0.1:${a}`,
  CALLS_GRPC_URL: `127.0.0.1:${c}`,
  MEDIA_GRPC_URL: `127.0.0.1:${m}`,
  WEBHOOKS_GRPC_URL: `127.0.0.1:${w}`,
  BOOTSTRAP_KEYS: `bench:owner:${KEY}`,
  RATE_LIMIT_REQUESTS: '100000000',
  LOG_LEVEL: 'warn',
  NATS_URL: '',
};
const platform = spawn(process.execPath, [join(root, 'dist/apps/standalone/apps/standalone/src/main.js')], { env, stdio: ['ignore', 'inherit', 'inherit'] });
const base = `http://127.0.0.1:${port}`;
try {
  await waitHealthy(base);
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const body = JSON.stringify({ name: 'Bench', languages: [{ code: 'en-US' }], metadata: { k: 'v' } });
  const agent = await (await fetch(`${base}/v1/agents`, { method: 'POST', headers, body })).json();

  // The baseline reads and writes the same table the agents service owns, with the same queries' shape.
  const dbUrl = process.env.DATABASE_URL || `postgres://postgres:parley@127.0.0.1:${pgPort}/parley`;
  const pool = new pg.Pool({ connectionString: dbUrl, max: 10 });
  const fastify = Fastify();
  fastify.get('/agents/:id', async (req, reply) => {
    const { rows } = await pool.query(
      'SELECT id, name, description, languages, metadata, created_at, updated_at FROM agents.agents WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL',
      [req.params.id, 'bench'],
    );
    if (!rows[0]) return reply.code(404).send({});
    return { ...rows[0], object: 'agent' };
  });
  fastify.post('/agents', async (req, reply) => {
    const id = `agt_${Math.random().toString(36).slice(2)}${Date.now()}`;
    const { rows } = await pool.query(
      `INSERT INTO agents.agents (id, account_id, name, description, languages, metadata, created_at, updated_at)
       VALUES ($1, 'bench', $2, '', $3, $4, now(), now()) RETURNING *`,
      [id, req.body.name, JSON.stringify(req.body.languages), JSON.stringify(req.body.metadata ?? {})],
    );
    return reply.code(201).send(rows[0]);
  });
  const baseline = await fastify.listen({ port: 0, host: '127.0.0.1' });

  const results = {
    'GET  /v1/agents/{id}  full path': summary(await run({ url: `${base}/v1/agents/${agent.id}`, headers })),
    'GET  baseline Fastify+pg': summary(await run({ url: `${baseline}/agents/${agent.id}` })),
    'POST /v1/agents       full path': summary(await run({ url: `${base}/v1/agents`, method: 'POST', headers, body })),
    'POST baseline Fastify+pg': summary(await run({ url: `${baseline}/agents`, method: 'POST', headers: { 'content-type': 'application/json' }, body })),
  };
  await fastify.close();
  await pool.end();

  console.log(`\n${seconds} s per run, ${connections} connections, ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded PostgreSQL'}\n`);
  console.log('route                           req/s    p50 ms  p99 ms  errors');
  for (const [name, r] of Object.entries(results)) {
    console.log(`${name.padEnd(32)}${String(r.rps).padStart(6)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${r.errors}`);
  }
  const keys = Object.keys(results);
  const ratio = (x, y) => (results[keys[x]].rps / results[keys[y]].rps).toFixed(2);
  console.log(`\nGET  ratio full/baseline: ${ratio(0, 1)}x (target >= 0.5x)`);
  console.log(`POST ratio full/baseline: ${ratio(2, 3)}x`);
} finally {
  platform.kill('SIGTERM');
}
