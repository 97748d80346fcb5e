#!/usr/bin/env node
// Ranking lab (a diagnostic, not the bench): the knowledge search's candidate choice and scoring tried on a scratch
// copy of the bench's big base, straight in SQL, to see what would make 100 k chunks fast (docs/knowledge-bench.md,
// "What would fix it"). The chunks are the bench's (corpus documents, then filler from the same seed), chunked by the
// ingest library of a build, in a database of their own on DATABASE_URL's server; per-lexeme chunk counts come from
// ts_stat once (what the service would keep beside its vocabulary).
//
//   npx node bench/knowledge/ranking-lab.mjs --load [--chunks 100000] [--dist dist]   # (re)creates kb_ranking_lab
//   npx node bench/knowledge/ranking-lab.mjs [--cap 0.02] [--bound 2000] [--fallback-bound 500] [--only bounded+idf]
//                                                                                  # latency and recall@5 per strategy
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { CORPUS, isAnswer } from './corpus.mjs';
import { corpusDocuments } from './documents.mjs';
import { fillerGenerator } from './filler.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]?.startsWith('--') ? '' : all[i + 1]]] : acc), []));
const SIZE = Number(args.chunks ?? 100000);
const CAP = Number(args.cap ?? 0.02);
const BOUND = Number(args.bound ?? 2000);
// The bound when no term is rare (the service's RANKED_WITHOUT_RARE); --bound otherwise.
const FALLBACK_BOUND = Number(args['fallback-bound'] ?? BOUND);
const server = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const labUrl = new URL(server);
labUrl.pathname = '/kb_ranking_lab';

if ('load' in args) {
  const dist = resolve(args.dist || join(import.meta.dirname, '..', '..', 'dist'));
  const ingest = createRequire(import.meta.url)(join(dist, 'apps', 'standalone', 'libs', 'knowledge', 'ingest', 'src', 'index.js'));
  const admin = new pg.Client({ connectionString: server.toString() });
  await admin.connect();
  await admin.query('DROP DATABASE IF EXISTS kb_ranking_lab WITH (FORCE)');
  await admin.query('CREATE DATABASE kb_ranking_lab');
  await admin.end();
  const db = new pg.Client({ connectionString: labUrl.toString() });
  await db.connect();
  await db.query(`CREATE TABLE chunks (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, base_id text NOT NULL, document_id text NOT NULL,
    position int NOT NULL, heading text NOT NULL, text text NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (setweight(to_tsvector('english', heading), 'A') || setweight(to_tsvector('english', text), 'B')) STORED)`);
  await db.query('CREATE INDEX chunks_base ON chunks (base_id)');
  await db.query('CREATE INDEX chunks_tsv ON chunks USING gin (tsv)');
  const insert = async (documentId, chunks) => {
    await db.query(
      `INSERT INTO chunks (base_id, document_id, position, heading, text) SELECT 'kb', $1, u.p, u.h, u.t FROM unnest($2::int[], $3::text[], $4::text[]) AS u(p, h, t)`,
      [documentId, chunks.map((c) => c.position), chunks.map((c) => c.heading), chunks.map((c) => c.text)],
    );
    return chunks.length;
  };
  const chunksOf = async (input) => ingest.chunkDocument(await ingest.extractDocument(input, { maxCharacters: 2_000_000 }));
  let n = 0;
  for (const [name, d] of Object.entries(await corpusDocuments())) {
    const input = d.text ? { kind: 'text', text: d.text, contentType: d.content_type } : { kind: 'file', data: Buffer.from(d.file.data, 'base64'), contentType: d.file.content_type };
    n += await insert(name, await chunksOf(input));
  }
  const next = fillerGenerator(20);
  for (let i = 0; n < SIZE; i += 1) {
    const d = next(50);
    n += await insert(`filler_${i}`, await chunksOf({ kind: 'text', text: d.text, contentType: 'text/markdown' }));
  }
  await db.query(`CREATE TABLE lexemes AS SELECT 'kb'::text AS base_id, word AS lexeme, ndoc FROM ts_stat('SELECT tsv FROM chunks')`);
  await db.query('CREATE UNIQUE INDEX ON lexemes (base_id, lexeme)');
  await db.query('VACUUM ANALYZE');
  console.log(`loaded ${n} chunks into kb_ranking_lab`);
  await db.end();
  process.exit(0);
}

const db = new pg.Client({ connectionString: labUrl.toString() });
await db.connect();
const lit = (l) => `'${l.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
const [{ total }] = (await db.query(`SELECT count(*)::int AS total FROM chunks WHERE base_id = 'kb'`)).rows;

/** The service's queryTerms, under `english`. */
async function terms(question) {
  const rows = (
    await db.query(`SELECT w AS word, tsvector_to_array(to_tsvector('english', w)) AS lexemes FROM unnest(tsvector_to_array(to_tsvector('simple', $1))) AS w`, [question])
  ).rows;
  const content = rows.filter((r) => r.lexemes.length);
  const m = new Map();
  for (const r of content.length ? content : rows) if (!m.has(r.lexemes[0] ?? r.word)) m.set(r.lexemes[0] ?? r.word, { word: r.word, lexeme: r.lexemes[0] ?? r.word });
  return [...m.values()].slice(0, 24);
}

/**
 * The service's search statement with the candidates' tsquery ($1) and the coverage expression as parameters; with
 * `bound`, at most that many matching chunks (in the order the scan yields them) are ranked.
 */
const searchSql = (coverage, bound) => `WITH candidates AS (
    SELECT m.id FROM (SELECT c.id, c.tsv FROM chunks c WHERE c.base_id = 'kb' AND c.tsv @@ $1::tsquery ${bound ? `LIMIT ${bound}` : ''}) AS m
     ORDER BY ts_rank_cd(m.tsv, $1::tsquery) DESC, m.id LIMIT 200),
  scored AS (
    SELECT c.document_id, c.text, c.position, round((0.8 * coverage.value + 0.2 * ts_rank_cd(c.tsv, $2::tsquery, 1 | 32))::numeric, 4)::float8 AS score
      FROM candidates JOIN chunks c ON c.id = candidates.id,
      LATERAL (SELECT ${coverage} AS value FROM unnest($3::tsquery[], $4::float8[]) AS t(q, w)) AS coverage)
  SELECT * FROM scored WHERE score > 0 ORDER BY score DESC, document_id, position LIMIT 5`;
const MEAN = 'avg(CASE WHEN c.tsv @@ t.q THEN 1.0 ELSE 0 END)';

const STRATEGIES = {
  // Today's: every term OR'ed, all matches ranked; coverage the mean over the terms.
  current: async (ts) => {
    const all = ts.map((t) => lit(t.lexeme)).join(' | ');
    return (await db.query(searchSql(MEAN), [all, all, ts.map((t) => lit(t.lexeme)), ts.map(() => 1)])).rows;
  },
  // Candidates from the terms in at most --cap of the chunks (else the rarest); the mean, or IDF-weighted coverage.
  pruned: (ts) => pruned(ts, false),
  'pruned+idf': (ts) => pruned(ts, true),
  // The same, ranking at most --bound (default 2000) matching chunks.
  'bounded+idf': (ts) => pruned(ts, true, BOUND),
};

async function pruned(ts, idfWeighted, bound) {
  const all = ts.map((t) => lit(t.lexeme)).join(' | ');
  const counts = new Map((await db.query(`SELECT lexeme, ndoc FROM lexemes WHERE base_id = 'kb' AND lexeme = ANY($1)`, [ts.map((t) => t.lexeme)])).rows.map((r) => [r.lexeme, r.ndoc]));
  const known = ts
    .map((t) => ({ ...t, df: counts.get(t.lexeme) ?? 0 }))
    .filter((t) => t.df > 0)
    .sort((a, b) => a.df - b.df);
  if (!known.length) return [];
  let rare = known.filter((t) => t.df <= total * CAP);
  const idf = known.map((t) => Math.log(total / t.df));
  const sum = idf.reduce((a, b) => a + b, 0);
  const coverage = idfWeighted ? `sum(CASE WHEN c.tsv @@ t.q THEN t.w ELSE 0 END) / ${sum}` : MEAN;
  if (!rare.length) {
    rare = known.slice(0, 1);
    if (bound) bound = FALLBACK_BOUND;
  }
  return (await db.query(searchSql(coverage, bound), [rare.map((t) => lit(t.lexeme)).join(' | '), all, known.map((t) => lit(t.lexeme)), idfWeighted ? idf : known.map(() => 1)])).rows;
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
console.log(`ranking lab: ${total} chunks, rare = in at most ${CAP * 100} % of them; each question twice (latency), recall@5 from the first`);
for (const [name, run] of Object.entries(STRATEGIES).filter(([name]) => !args.only || args.only.split(',').includes(name))) {
  const times = [];
  let found = 0;
  for (const q of CORPUS) {
    const ts = await terms(q.question);
    for (let rep = 0; rep < 2; rep += 1) {
      const t = performance.now();
      const hits = await run(ts);
      times.push(performance.now() - t);
      if (rep === 0 && hits.some((h) => isAnswer(q, h, { faq: 'faq', policy: 'policy', product: 'product' }))) found += 1;
    }
  }
  console.log(`${name.padEnd(11)} p50 ${pct(times, 50).toFixed(1)} ms, p95 ${pct(times, 95).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms; recall@5 ${(found / CORPUS.length).toFixed(3)}`);
}
await db.end();
