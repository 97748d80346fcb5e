import { MigrationInterface, QueryRunner } from 'typeorm';

/** Where pg_trgm lives in this database (installed into `knowledge` when absent), or undefined. */
export async function trigramSchema(q: { query(sql: string): Promise<{ schema: string }[]> }): Promise<string | undefined> {
  const [row] = await q.query(
    `SELECT n.nspname AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'`,
  );
  return row?.schema;
}

export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Bases, documents and chunks. A chunk carries its base's text-search configuration, so its `tsv` (heading
 * weighted A, text B) is a generated column with a GIN index; a trigram GIN index on the text serves typo-tolerant
 * matching. pg_trgm ships with PostgreSQL (contrib, trusted since 13): it is created in this schema, which the
 * service owns, unless the database already has it somewhere else (then that one is used, qualified by schema).
 */
export class CreateKnowledge1764900000001 implements MigrationInterface {
  name = 'CreateKnowledge1764900000001';

  async up(q: QueryRunner): Promise<void> {
    let trgm = await trigramSchema(q);
    if (!trgm) {
      await q.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA knowledge`);
      trgm = (await trigramSchema(q)) ?? 'knowledge';
    }
    await q.query(`
      CREATE TABLE IF NOT EXISTS knowledge_bases (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        language text NOT NULL,
        config regconfig NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS knowledge_bases_listing ON knowledge_bases (account_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS documents (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        base_id text NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
        title text NOT NULL DEFAULT '',
        source text NOT NULL,
        url text,
        content_type text NOT NULL DEFAULT '',
        status text NOT NULL,
        failure_reason text,
        characters integer NOT NULL DEFAULT 0,
        chunk_count integer NOT NULL DEFAULT 0,
        bytes bigint NOT NULL DEFAULT 0,
        metadata jsonb NOT NULL DEFAULT '{}',
        input_text text,
        input_data bytea,
        lease_until timestamptz(3),
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS documents_listing ON documents (base_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX IF NOT EXISTS documents_processing ON documents (created_at) WHERE status = 'processing'`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS chunks (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        base_id text NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
        document_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        position integer NOT NULL,
        heading text NOT NULL DEFAULT '',
        text text NOT NULL,
        config regconfig NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (setweight(to_tsvector(config, heading), 'A') || setweight(to_tsvector(config, text), 'B')) STORED
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS chunks_document ON chunks (document_id, position)`);
    await q.query(`CREATE INDEX IF NOT EXISTS chunks_base ON chunks (base_id)`);
    await q.query(`CREATE INDEX IF NOT EXISTS chunks_tsv ON chunks USING gin (tsv)`);
    await q.query(`CREATE INDEX IF NOT EXISTS chunks_trgm ON chunks USING gin (text ${quoteIdent(trgm)}.gin_trgm_ops)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS chunks`);
    await q.query(`DROP TABLE IF EXISTS documents`);
    await q.query(`DROP TABLE IF EXISTS knowledge_bases`);
  }
}

/**
 * Typo tolerance through each base's vocabulary instead of trigrams over whole chunk texts: `words` holds the
 * distinct words (4-40 letters, as the `simple` parser splits them) of a base's chunks with a trigram GIN index, so
 * a misspelt query word finds the base's words like it by `%` on short strings; their lexemes join the full-text
 * query. Matching `<%` against each chunk's text could not use its index next to the base filter and cost ~0.4 ms
 * per chunk, so chunks_trgm goes.
 */
export class KnowledgeWords1764900000002 implements MigrationInterface {
  name = 'KnowledgeWords1764900000002';

  async up(q: QueryRunner): Promise<void> {
    const trgm = (await trigramSchema(q)) ?? 'knowledge';
    await q.query(`
      CREATE TABLE IF NOT EXISTS words (
        base_id text NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
        word text NOT NULL,
        PRIMARY KEY (base_id, word)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS words_trgm ON words USING gin (word ${quoteIdent(trgm)}.gin_trgm_ops)`);
    await q.query(`INSERT INTO words (base_id, word) ${VOCABULARY_SELECT('TRUE')} ON CONFLICT DO NOTHING`);
    await q.query(`DROP INDEX IF EXISTS chunks_trgm`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS words`);
  }
}

/** The distinct (base_id, word) pairs of the chunks `where` selects (alias c): words of 4-40 characters, no digits. */
export const VOCABULARY_SELECT = (where: string) => `
  SELECT DISTINCT c.base_id, w.word
    FROM chunks c, unnest(tsvector_to_array(to_tsvector('simple', c.heading || ' ' || c.text))) AS w(word)
   WHERE ${where} AND length(w.word) BETWEEN 4 AND 40 AND w.word !~ '[0-9]'`;

/**
 * Chunk embeddings for the semantic rerank (EMBEDDINGS_MODEL): one vector per chunk, normalised to length 1 (so the
 * cosine is a dot product), with the model that made it (vectors of another model are not compared). A side table,
 * not a column of chunks, so the full-text candidate scans do not carry kilobytes of floats per row; it goes with
 * its chunk. The vector is packed float32 little-endian in a bytea (stored uncompressed: floats do not compress),
 * and the cosine is computed in TypeScript: for 50 candidates of 1536 dimensions that is ~2-5 ms, where a `real[]`
 * read as text and parsed took ~29-65 ms and the dot product in SQL over `real[]` (unnest) ~10-21 ms
 * (docs/knowledge.md, Semantic rerank).
 * Not pgvector's `vector`, which neither the embedded server nor Debian's packages have.
 */
export class KnowledgeVectors1764900000003 implements MigrationInterface {
  name = 'KnowledgeVectors1764900000003';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS chunk_vectors (
        chunk_id bigint PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
        model text NOT NULL,
        embedding bytea NOT NULL
      )`);
    await q.query(`ALTER TABLE chunk_vectors ALTER COLUMN embedding SET STORAGE EXTERNAL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS chunk_vectors`);
  }
}

/**
 * Document frequencies for search (docs/knowledge.md, Search ranking): beside each base's vocabulary, `lexemes`
 * holds every lexeme of the base's chunks (as their `tsv` has it, under the base's configuration: stemmed, short
 * words and numbers included, which the vocabulary's words are not) with the number of its chunks having it. Search
 * reads it to choose candidates by the query's rare terms and to weight coverage by IDF; ingestion adds a
 * document's counts and deletion subtracts them, in their transactions. Backfilled from the chunks.
 */
export class KnowledgeLexemes1764900000004 implements MigrationInterface {
  name = 'KnowledgeLexemes1764900000004';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS lexemes (
        base_id text NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
        lexeme text NOT NULL,
        chunk_count integer NOT NULL,
        PRIMARY KEY (base_id, lexeme)
      )`);
    await q.query(`INSERT INTO lexemes (base_id, lexeme, chunk_count) ${LEXEME_COUNTS_SELECT('TRUE')} ON CONFLICT DO NOTHING`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS lexemes`);
  }
}

/** Per (base_id, lexeme) of the chunks `where` selects (alias c), the number of those chunks having it (as `n`). */
export const LEXEME_COUNTS_SELECT = (where: string) => `
  SELECT c.base_id, l.lexeme, count(*)::int AS n
    FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS l(lexeme)
   WHERE ${where}
   GROUP BY c.base_id, l.lexeme`;

/** A lexeme's champion list keeps this many of its chunks: those it weighs most in (docs/knowledge.md, Search ranking). */
export const CHAMPIONS_PER_LEXEME = 32;
/** A lexeme of a base has a champion list when more of the base's chunks than this have it (a rare term never needs one). */
export const CHAMPIONS_FROM = 100;

/**
 * Per (base_id, lexeme, chunk_id) of the chunks `where` selects (alias c) and their lexemes `lexemeWhere` selects
 * (alias u: unnest of the tsv), how much the lexeme weighs in the chunk: its occurrences, a heading's 1 and the
 * text's 0.4 (ts_rank's A and B), over 1 + ln(the chunk's distinct lexemes), as ts_rank's normalisation 1 evens out
 * long chunks. The chunks' sizes are taken once each in a subquery kept apart (OFFSET 0): `length(c.tsv)` beside the
 * unnest read each chunk's tsv from TOAST again for every lexeme of it (31 ms for a document's 3,700 postings, 8 ms so).
 */
export const CHAMPION_WEIGHTS_SELECT = (where: string, lexemeWhere: string) => `
  SELECT c.base_id, u.lexeme, c.id AS chunk_id,
         (coalesce((SELECT sum(CASE w WHEN 'A' THEN 1.0 ELSE 0.4 END) FROM unnest(u.weights) AS w), 0) / (1 + ln(c.size)))::real AS weight
    FROM (SELECT c.base_id, c.id, c.tsv, length(c.tsv) AS size FROM chunks c WHERE ${where} OFFSET 0) AS c, unnest(c.tsv) AS u
   WHERE ${lexemeWhere}`;

/**
 * The weight of the last chunk of the champion list of (base, lexeme) (SQL expressions) when it is full, else null:
 * a chunk weighing less cannot enter it. Kept in `lexemes.champion_floor`, so ingestion tests a document's chunks
 * against it without reading the lists.
 */
export const CHAMPION_FLOOR = (base: string, lexeme: string) => `(
  SELECT h.weight FROM champions h WHERE h.base_id = ${base} AND h.lexeme = ${lexeme}
   ORDER BY h.weight DESC, h.chunk_id OFFSET ${CHAMPIONS_PER_LEXEME - 1} LIMIT 1)`;

/**
 * Champion lists (docs/knowledge.md, Search ranking): for each lexeme in more than CHAMPIONS_FROM of a base's
 * chunks, the CHAMPIONS_PER_LEXEME chunks it weighs most in (CHAMPION_WEIGHTS_SELECT). A question whose every term is
 * common takes its candidates from its terms' lists instead of the first chunks a scan of the rarest term yields.
 * Kept by ingestion and deletion in their transactions; backfilled from the chunks.
 */
export class KnowledgeChampions1764900000005 implements MigrationInterface {
  name = 'KnowledgeChampions1764900000005';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS champions (
        base_id text NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
        lexeme text NOT NULL,
        chunk_id bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
        weight real NOT NULL,
        PRIMARY KEY (base_id, lexeme, chunk_id)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS champions_chunk ON champions (chunk_id)`);
    await q.query(`CREATE INDEX IF NOT EXISTS champions_rank ON champions (base_id, lexeme, weight DESC, chunk_id)`);
    await q.query(`ALTER TABLE lexemes ADD COLUMN IF NOT EXISTS champion_floor real`);
    await q.query(`
      INSERT INTO champions (base_id, lexeme, chunk_id, weight)
      SELECT r.base_id, r.lexeme, r.chunk_id, r.weight FROM (
        SELECT p.*, row_number() OVER (PARTITION BY p.base_id, p.lexeme ORDER BY p.weight DESC, p.chunk_id) AS rank
          FROM (${CHAMPION_WEIGHTS_SELECT('TRUE', `EXISTS (SELECT 1 FROM lexemes l WHERE l.base_id = c.base_id AND l.lexeme = u.lexeme AND l.chunk_count > ${CHAMPIONS_FROM})`)}) AS p
      ) AS r
      WHERE r.rank <= ${CHAMPIONS_PER_LEXEME}
      ON CONFLICT DO NOTHING`);
    await q.query(`UPDATE lexemes l SET champion_floor = ${CHAMPION_FLOOR('l.base_id', 'l.lexeme')}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE lexemes DROP COLUMN IF EXISTS champion_floor`);
    await q.query(`DROP TABLE IF EXISTS champions`);
  }
}

/**
 * Scheduled re-fetch of URL documents (docs/knowledge.md, Re-fetching URL documents): the interval given at
 * creation, when the page was last fetched and when it is due next, the digest of the body its chunks come from (an
 * unchanged page keeps its chunks), and why the last re-fetch failed. The ingestion sweep looks up due documents
 * through the partial index, which holds only documents that have an interval.
 */
export class KnowledgeRefresh1764900000006 implements MigrationInterface {
  name = 'KnowledgeRefresh1764900000006';

  private readonly columns = {
    refresh_interval_hours: 'integer',
    fetched_at: 'timestamptz(3)',
    next_refresh_at: 'timestamptz(3)',
    content_sha256: 'text',
    refresh_failure_reason: 'text',
  };

  async up(q: QueryRunner): Promise<void> {
    const added = Object.entries(this.columns).map(([column, type]) => `ADD COLUMN IF NOT EXISTS ${column} ${type}`);
    await q.query(`ALTER TABLE documents ${added.join(', ')}`);
    await q.query(`CREATE INDEX IF NOT EXISTS documents_refresh_due ON documents (next_refresh_at) WHERE next_refresh_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS documents_refresh_due`);
    await q.query(`ALTER TABLE documents ${Object.keys(this.columns).map((column) => `DROP COLUMN IF EXISTS ${column}`).join(', ')}`);
  }
}

export const KNOWLEDGE_MIGRATIONS = [
  CreateKnowledge1764900000001,
  KnowledgeWords1764900000002,
  KnowledgeVectors1764900000003,
  KnowledgeLexemes1764900000004,
  KnowledgeChampions1764900000005,
  KnowledgeRefresh1764900000006,
];
