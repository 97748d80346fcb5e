import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { isWellFormedId, newId, Page, pageOf } from '@parley/persistence';
import { pagePosition } from '@parley/rpc';
import { packVector, unpackVector } from './embeddings';
import {
  CHAMPION_FLOOR,
  CHAMPION_WEIGHTS_SELECT,
  CHAMPIONS_FROM,
  CHAMPIONS_PER_LEXEME,
  LEXEME_COUNTS_SELECT,
  quoteIdent,
  trigramSchema,
  VOCABULARY_SELECT,
} from './migrations';
import { irregularForms } from './irregular-forms';
import { spokenFillers, withoutFillerPhrases } from './spoken-fillers';

/** The knowledge service's own DataSource (schema `knowledge`), not the host service's. */
export const KNOWLEDGE_DB = Symbol('KNOWLEDGE_DB');

export type DocumentSource = 'text' | 'url' | 'file';
export type DocumentStatus = 'processing' | 'ready' | 'failed';

export interface BaseRecord {
  id: string;
  accountId: string;
  name: string;
  description: string;
  language: string;
  /** The text-search configuration (regconfig name). */
  config: string;
  metadata: Record<string, string>;
  documentCount: number;
  chunkCount: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface DocumentRecord {
  id: string;
  baseId: string;
  title: string;
  source: DocumentSource;
  url: string | null;
  contentType: string;
  status: DocumentStatus;
  failureReason: string | null;
  characters: number;
  chunkCount: number;
  bytes: number;
  metadata: Record<string, string>;
  /** URL documents: re-fetched every so many hours; null: never. */
  refreshIntervalHours: number | null;
  /** When the content it holds was last fetched (stored, or found unchanged); null until then and for text and files. */
  fetchedAt: Date | null;
  nextRefreshAt: Date | null;
  /** Why the last scheduled re-fetch failed (the previous content is kept); null when it did not. */
  refreshFailureReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A URL document taken for a re-fetch, with the digest of the body its chunks come from. */
export interface RefreshingDocument extends DocumentRecord {
  contentSha256: string | null;
}

/** A document taken for ingestion, with what it was given. */
export interface ClaimedDocument extends DocumentRecord {
  accountId: string;
  config: string;
  inputText: string | null;
  inputData: Buffer | null;
}

export interface NewDocument {
  title: string;
  source: DocumentSource;
  url?: string;
  contentType: string;
  bytes: number;
  metadata: Record<string, string>;
  inputText?: string;
  inputData?: Buffer;
  refreshIntervalHours?: number;
}

/** A document's chunks and what they were made from, as ingestion or a re-fetch stores them. */
export interface DocumentContent {
  title: string;
  characters: number;
  bytes: number;
  chunks: StoredChunk[];
  contentType?: string;
  vectors?: ChunkVectors;
  /** A fetched body's digest (URL documents): a re-fetch that gets the same one keeps the chunks. */
  contentSha256?: string;
}

export interface StoredChunk {
  position: number;
  heading: string;
  text: string;
}

/** One vector per chunk (same order), normalised, of `model`. */
export interface ChunkVectors {
  model: string;
  vectors: number[][];
}

export type CompleteOutcome = { status: 'ready' } | { status: 'failed'; reason: string } | { status: 'gone' };

export interface SearchHitRecord {
  /** The chunk's row id (internal: to find its vector); set by search. */
  chunkId?: string;
  documentId: string;
  baseId: string;
  title: string;
  heading: string;
  text: string;
  score: number;
  position: number;
}

/** A chunk the vector index found, with its cosine similarity to the query. */
export type NearHit = SearchHitRecord & { cosine: number };

export type NearestChunks = { hits: NearHit[] } | { missing: 'pgvector' | 'index' };

export interface SearchParams {
  baseIds: string[];
  query: string;
  limit: number;
  minScore: number;
}

/** The statement search ends with and what went into it. */
export interface SearchStatement {
  sql: string;
  values: unknown[];
  /** Every term's lexeme and correction, OR-ed: what a chunk's density is ranked on. */
  anyTerm: string;
  /** The lexemes candidates are drawn from, OR-ed: the rare terms', else every term's. */
  candidateQuery: string;
  /** Where the candidates come from: the chunks matching the rare terms, or (none is rare) the champion lists. */
  candidateSource: 'rare terms' | 'champion lists';
  /** Each term's document frequency, of `total` chunks. */
  frequencies: { lexeme: string; df: number }[];
  total: number;
}

/** A query's terms, their corrections and document frequencies (KnowledgeRepository.queryTerms). */
export interface QueryTerms {
  terms: { word: string; lexeme: string }[];
  /** Words of the bases' vocabulary a misspelt term (`word`) may stand for, best first per term. */
  corrections: { word: string; lexeme: string; similarity: number }[];
  /** How many chunks of the bases have each lexeme of the terms and corrections (absent: none). */
  counts: Map<string, number>;
  /** For those lexemes, the bases that have one in CHAMPIONS_FROM chunks or fewer: no champion list there. */
  listless: Map<string, string[]>;
  /** How many chunks the bases hold. */
  total: number;
}

/** Chunk vectors per INSERT (1536 dimensions are 6 kB each). */
const VECTOR_BATCH = 500;
/** Chunks scored per search: the best by ts_rank_cd among the matching chunks ranked (RANKED). */
const CANDIDATES = 200;
/** Chunks matching the rare terms that are ranked per search, at most (the scan's first; docs/knowledge.md). */
const RANKED = 2000;
/**
 * A term in at most this share of the bases' chunks is rare: candidates come from the rare terms. (At 2 %, a term in
 * 1,600-1,800 of 100 k chunks had all its matches ranked, 22-54 ms, and beside a rarer term it flooded the ranking
 * with look-alikes that pushed the answer out of the best CANDIDATES: docs/knowledge-bench.md.)
 */
const RARE_SHARE = 0.01;
/** …or in at most this many chunks (in a small base every term is rare: every term gives candidates). */
const RARE_CHUNKS = 100;
/**
 * A champion list that lost chunks with a deleted document is refilled from at most this many of its lexeme's chunks
 * (the first the index yields) besides those it kept: the best of all of them would be a read of every such chunk.
 */
const CHAMPION_REFILL = 2000;
/** Words of a base's vocabulary a misspelt query word may stand for. */
const CORRECTIONS_PER_WORD = 3;
/** A query's terms beyond these are ignored (a caller's utterance, not a document). */
const MAX_TERMS = 24;
/**
 * A misspelt word that is, with two neighbouring letters swapped, a word some chunk has ('refnud', 'retrun', 'mdoe')
 * is corrected to it with this weight: the commonest slip keeps every letter, but trigrams rate it as two edits
 * (similarity 0.27 from 'refund', 0.11 from 'mode', under FUZZY_MIN_SIMILARITY); weighed like a dropped letter
 * ('pasword' 0.7 from 'password', 'refnd' 0.44 from 'refund').
 */
const TRANSPOSITION_SIMILARITY = 0.6;
/** Words shorter than this are never corrected (too few trigrams to tell a typo from another word). */
const FUZZY_MIN_LENGTH = 4;
/**
 * The least trigram similarity of a vocabulary word to a misspelt query word (the sessions'
 * pg_trgm.similarity_threshold, which `%` and its index use): 'refnd' is 0.44 from 'refund', 'polcy' 0.44 from
 * 'policy', 'warrenty' 0.5 from 'warranty'.
 */
export const FUZZY_MIN_SIMILARITY = 0.4;
/** score = COVERAGE_WEIGHT × coverage (IDF-weighted) + (1 − COVERAGE_WEIGHT) × density (docs/knowledge.md, Search ranking). */
const COVERAGE_WEIGHT = 0.8;

/** Each word of FUZZY_MIN_LENGTH+ letters of `text` with two neighbouring letters swapped, every way (lower case). */
export function swappedLetters(text: string): { word: string; swapped: string }[] {
  const out: { word: string; swapped: string }[] = [];
  for (const word of new Set(text.toLowerCase().match(/\p{L}+/gu) ?? [])) {
    if (word.length < FUZZY_MIN_LENGTH || word.length > 40) continue;
    const letters = [...word];
    for (let i = 0; i + 1 < letters.length; i++) {
      if (letters[i] === letters[i + 1]) continue;
      out.push({ word, swapped: [...letters.slice(0, i), letters[i + 1], letters[i], ...letters.slice(i + 2)].join('') });
    }
  }
  return out;
}

/**
 * Each hyphenated word of `text` written without its hyphens (`e-mail` → `email`), and each word of
 * FUZZY_MIN_LENGTH+ letters with a hyphen at each place inside it (`wifi` → `w-ifi`, `wi-fi`, `wif-i`): the same
 * word as a base may spell it (lower case).
 */
export function compoundSpellings(text: string): { word: string; spelling: string }[] {
  const out: { word: string; spelling: string }[] = [];
  for (const word of new Set(text.toLowerCase().match(/\p{L}+(?:-\p{L}+)*/gu) ?? [])) {
    if (word.includes('-')) out.push({ word, spelling: word.replace(/-/g, '') });
    else if (word.length >= FUZZY_MIN_LENGTH && word.length <= 40) {
      const letters = [...word];
      for (let i = 1; i < letters.length; i++) out.push({ word, spelling: `${letters.slice(0, i).join('')}-${letters.slice(i).join('')}` });
    }
  }
  return out;
}

/**
 * A word's lexeme under the statement's configuration ($1): its longest, which for a hyphenated word is the whole
 * (`wi-fi` gives `wi-fi`, `wi` and `fi`, in that order of length; the first in the array's order would be `fi`).
 */
const lexemeOf = (word: string) =>
  `(SELECT x FROM unnest(tsvector_to_array(to_tsvector($1::regconfig, ${word}))) AS x ORDER BY length(x) DESC, x LIMIT 1)`;

interface BaseRow {
  id: string;
  account_id: string;
  name: string;
  description: string;
  language: string;
  config: string;
  metadata: Record<string, string>;
  document_count: string | number;
  chunk_count: string | number;
  created_at: Date;
  updated_at: Date;
}

interface DocumentRow {
  id: string;
  account_id: string;
  base_id: string;
  title: string;
  source: DocumentSource;
  url: string | null;
  content_type: string;
  status: DocumentStatus;
  failure_reason: string | null;
  characters: number;
  chunk_count: number;
  bytes: string | number;
  metadata: Record<string, string>;
  refresh_interval_hours: number | null;
  fetched_at: Date | null;
  next_refresh_at: Date | null;
  refresh_failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

const BASE_COLUMNS = `b.id, b.account_id, b.name, b.description, b.language, b.config::text AS config, b.metadata, b.created_at, b.updated_at,
  (SELECT count(*) FROM documents d WHERE d.base_id = b.id) AS document_count,
  (SELECT coalesce(sum(d.chunk_count), 0) FROM documents d WHERE d.base_id = b.id) AS chunk_count`;

const DOCUMENT_COLUMNS = `d.id, d.account_id, d.base_id, d.title, d.source, d.url, d.content_type, d.status, d.failure_reason, d.characters,
  d.chunk_count, d.bytes, d.metadata, d.refresh_interval_hours, d.fetched_at, d.next_refresh_at, d.refresh_failure_reason, d.created_at, d.updated_at`;

function toBase(r: BaseRow): BaseRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    description: r.description,
    language: r.language,
    config: r.config,
    metadata: r.metadata ?? {},
    documentCount: Number(r.document_count),
    chunkCount: Number(r.chunk_count),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toDocument(r: DocumentRow): DocumentRecord {
  return {
    id: r.id,
    baseId: r.base_id,
    title: r.title,
    source: r.source,
    url: r.url,
    contentType: r.content_type,
    status: r.status,
    failureReason: r.failure_reason,
    characters: r.characters,
    chunkCount: r.chunk_count,
    bytes: Number(r.bytes),
    metadata: r.metadata ?? {},
    refreshIntervalHours: r.refresh_interval_hours,
    fetchedAt: r.fetched_at,
    nextRefreshAt: r.next_refresh_at,
    refreshFailureReason: r.refresh_failure_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** A chunk as search statements select it. */
interface HitRow {
  chunk_id: string;
  document_id: string;
  base_id: string;
  title: string;
  heading: string;
  text: string;
  position: number;
}

function toHit(r: HitRow, score: number): SearchHitRecord {
  return {
    chunkId: r.chunk_id,
    documentId: r.document_id,
    baseId: r.base_id,
    title: r.title,
    heading: r.heading,
    text: r.text,
    position: r.position,
    score,
  };
}

/** A lexeme as a tsquery literal: quoted, so nothing in it is read as an operator. */
export function tsqueryLiteral(lexeme: string): string {
  return `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/** PostgreSQL text cannot hold NUL; extractors can yield it from binary formats. */
const clean = (s: string) => (s.includes('\u0000') ? s.split('\u0000').join('') : s);

/**
 * All SQL of knowledge bases. Every read and write takes the account, so another account's base or document is
 * simply absent; a base and its documents and chunks go in one transaction.
 */
@Injectable()
export class KnowledgeRepository {
  private trgm?: Promise<string>;
  /** The type of `chunk_vectors.embedding_index` (pgvector), looked up once; undefined when the column is not there. */
  private vectorColumn?: Promise<string | undefined>;
  private vectorVersion?: string;
  /** Per model: its HNSW index when it exists, else when that was last looked up. */
  private readonly vectorIndexes = new Map<string, { index?: VectorIndex; checkedAt: number }>();

  constructor(@Inject(KNOWLEDGE_DB) private readonly db: DataSource) {}

  /** The schema-qualified prefix of pg_trgm's functions and operators (installed by the migration). */
  private trigram(): Promise<string> {
    return (this.trgm ??= trigramSchema(this.db).then((schema) => {
      if (!schema) throw new Error('pg_trgm is not installed (the knowledge migration installs it)');
      return quoteIdent(schema);
    }));
  }

  /** The configuration the server has for `wanted`, else `simple`. */
  async resolveConfig(wanted: string): Promise<string> {
    const [row] = await this.db.query(`SELECT cfgname FROM pg_ts_config WHERE cfgname = $1 AND cfgnamespace = 'pg_catalog'::regnamespace`, [wanted]);
    return row?.cfgname ?? 'simple';
  }

  /** Creates the base unless the account already has `maxBases` (then undefined); serialised per account. */
  async createBase(
    accountId: string,
    fields: { name: string; description: string; language: string; config: string; metadata: Record<string, string> },
    maxBases: number,
  ): Promise<BaseRecord | undefined> {
    return this.db.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('knowledge_bases:' || $1))`, [accountId]);
      const [{ n }] = await m.query(`SELECT count(*)::int AS n FROM knowledge_bases WHERE account_id = $1`, [accountId]);
      if (n >= maxBases) return undefined;
      const now = new Date();
      const id = newId('kb');
      await m.query(
        `INSERT INTO knowledge_bases (id, account_id, name, description, language, config, metadata, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6::regconfig, $7, $8, $8)`,
        [id, accountId, fields.name, fields.description, fields.language, fields.config, JSON.stringify(fields.metadata), now],
      );
      return { id, accountId, ...fields, documentCount: 0, chunkCount: 0, createdAt: now, updatedAt: now };
    });
  }

  async getBase(accountId: string, id: string): Promise<BaseRecord | undefined> {
    if (!isWellFormedId('kb', id)) return undefined;
    const [row] = await this.db.query(`SELECT ${BASE_COLUMNS} FROM knowledge_bases b WHERE b.account_id = $1 AND b.id = $2`, [accountId, id]);
    return row ? toBase(row) : undefined;
  }

  /** Newest first, keyset-paginated on (created_at, id). Throws on a malformed position. */
  async listBases(accountId: string, limit: number, after: string): Promise<Page<BaseRecord>> {
    const from = pagePosition(after);
    const rows: BaseRow[] = await this.db.query(
      `SELECT ${BASE_COLUMNS} FROM knowledge_bases b
        WHERE b.account_id = $1 ${from ? 'AND (b.created_at, b.id) < ($3, $4)' : ''}
        ORDER BY b.created_at DESC, b.id DESC LIMIT $2`,
      from ? [accountId, limit + 1, from.createdAt, from.id] : [accountId, limit + 1],
    );
    return pageOf(rows.map(toBase), limit);
  }

  /** Removes the base, its documents and their chunks in one transaction; false when the account has no such base. */
  async deleteBase(accountId: string, id: string): Promise<boolean> {
    if (!isWellFormedId('kb', id)) return false;
    return this.db.transaction(async (m) => {
      const [base] = await m.query(`SELECT id FROM knowledge_bases WHERE account_id = $1 AND id = $2 FOR UPDATE`, [accountId, id]);
      if (!base) return false;
      await m.query(`DELETE FROM champions WHERE base_id = $1`, [id]);
      await m.query(`DELETE FROM chunks WHERE base_id = $1`, [id]);
      await m.query(`DELETE FROM words WHERE base_id = $1`, [id]);
      await m.query(`DELETE FROM lexemes WHERE base_id = $1`, [id]);
      await m.query(`DELETE FROM documents WHERE base_id = $1`, [id]);
      await m.query(`DELETE FROM knowledge_bases WHERE id = $1`, [id]);
      return true;
    });
  }

  /** Stores the document `processing` with its input; undefined when the account has no such base. */
  async addDocument(accountId: string, baseId: string, doc: NewDocument): Promise<DocumentRecord | undefined> {
    if (!isWellFormedId('kb', baseId)) return undefined;
    const now = new Date();
    const id = newId('doc');
    const rows: DocumentRow[] = await this.db.query(
      `INSERT INTO documents (id, account_id, base_id, title, source, url, content_type, status, bytes, metadata, input_text, input_data, refresh_interval_hours,
                              created_at, updated_at)
       SELECT $1, b.account_id, b.id, $4, $5, $6, $7, 'processing', $8, $9, $10, $11, $13, $12, $12
         FROM knowledge_bases b WHERE b.account_id = $2 AND b.id = $3
       RETURNING ${DOCUMENT_COLUMNS.replace(/d\./g, '')}`,
      [
        id,
        accountId,
        baseId,
        clean(doc.title),
        doc.source,
        doc.url ?? null,
        doc.contentType,
        doc.bytes,
        JSON.stringify(doc.metadata),
        doc.inputText === undefined ? null : clean(doc.inputText),
        doc.inputData ?? null,
        now,
        doc.refreshIntervalHours ?? null,
      ],
    );
    return rows[0] ? toDocument(rows[0]) : undefined;
  }

  /** The base's documents, newest first; undefined when the account has no such base. */
  async listDocuments(
    accountId: string,
    baseId: string,
    limit: number,
    after: string,
    status?: DocumentStatus,
  ): Promise<Page<DocumentRecord> | undefined> {
    if (!(await this.getBase(accountId, baseId))) return undefined;
    const from = pagePosition(after);
    const params: unknown[] = [accountId, baseId, limit + 1];
    const where = [`d.account_id = $1`, `d.base_id = $2`];
    if (status) where.push(`d.status = $${params.push(status)}`);
    if (from) where.push(`(d.created_at, d.id) < ($${params.push(from.createdAt)}, $${params.push(from.id)})`);
    const rows: DocumentRow[] = await this.db.query(
      `SELECT ${DOCUMENT_COLUMNS} FROM documents d WHERE ${where.join(' AND ')} ORDER BY d.created_at DESC, d.id DESC LIMIT $3`,
      params,
    );
    return pageOf(rows.map(toDocument), limit);
  }

  async getDocument(accountId: string, baseId: string, id: string): Promise<DocumentRecord | undefined> {
    if (!isWellFormedId('doc', id)) return undefined;
    const [row] = await this.db.query(`SELECT ${DOCUMENT_COLUMNS} FROM documents d WHERE d.account_id = $1 AND d.base_id = $2 AND d.id = $3`, [
      accountId,
      baseId,
      id,
    ]);
    return row ? toDocument(row) : undefined;
  }

  /**
   * Removes the document and its chunks, its chunks' counts subtracted from the base's lexemes (under the base's
   * lock, as ingestion adds them), its chunks taken out of the champion lists: a list that lost some is refilled
   * from CHAMPION_REFILL of its lexeme's chunks, and the lists of lexemes no longer over CHAMPIONS_FROM go; false when
   * the account has no such document in that base.
   */
  async deleteDocument(accountId: string, baseId: string, id: string): Promise<boolean> {
    if (!isWellFormedId('doc', id) || !isWellFormedId('kb', baseId)) return false;
    return this.db.transaction(async (m) => {
      const [base] = await m.query(`SELECT id FROM knowledge_bases WHERE account_id = $1 AND id = $2 FOR UPDATE`, [accountId, baseId]);
      if (!base) return false;
      const [doc] = await m.query(`SELECT id FROM documents WHERE account_id = $1 AND base_id = $2 AND id = $3 FOR UPDATE`, [accountId, baseId, id]);
      if (!doc) return false;
      await this.removeChunks(m, baseId, id);
      await m.query(`DELETE FROM documents WHERE id = $1`, [id]);
      return true;
    });
  }

  /**
   * Takes a document's chunks out of its base (under the base's lock): their counts subtracted from the base's
   * lexemes, rows reaching 0 removed; the chunks taken out of the champion lists, a list that lost some refilled
   * from CHAMPION_REFILL of its lexeme's chunks, and the lists of lexemes no longer over CHAMPIONS_FROM dropped.
   * What deleting a document and replacing a re-fetched one's chunks both do.
   */
  private async removeChunks(m: EntityManager, baseId: string, documentId: string): Promise<void> {
    await m.query(
      `UPDATE lexemes l SET chunk_count = l.chunk_count - d.n FROM (${LEXEME_COUNTS_SELECT('c.document_id = $2')}) AS d
        WHERE l.base_id = $1 AND l.lexeme = d.lexeme`,
      [baseId, documentId],
    );
    await m.query(`DELETE FROM lexemes WHERE base_id = $1 AND chunk_count <= 0`, [baseId]);
    // TypeORM answers a DELETE with [rows, affected].
    const [lost]: [{ lexeme: string }[], number] = await m.query(
      `DELETE FROM champions WHERE chunk_id IN (SELECT id FROM chunks WHERE document_id = $1) RETURNING lexeme`,
      [documentId],
    );
    await m.query(
      `DELETE FROM champions h
        WHERE h.base_id = $1 AND h.lexeme IN (SELECT DISTINCT u.lexeme FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme) WHERE c.document_id = $2)
          AND NOT EXISTS (SELECT 1 FROM lexemes l WHERE l.base_id = $1 AND l.lexeme = h.lexeme AND l.chunk_count > ${CHAMPIONS_FROM})`,
      [baseId, documentId],
    );
    await m.query(`DELETE FROM chunks WHERE document_id = $1`, [documentId]);
    const short = [...new Set(lost.map((r) => r.lexeme))];
    if (short.length) {
      await this.fillChampions(m, baseId, short, CHAMPION_REFILL);
      await this.trimChampions(m, baseId, short);
    }
  }

  /**
   * Documents still `processing` that nobody holds (no lease, or one that ran out: its replica stopped), oldest
   * first: what a starting or sweeping ingestion queue takes up.
   */
  async orphanedDocumentIds(limit: number): Promise<string[]> {
    const rows: { id: string }[] = await this.db.query(
      `SELECT id FROM documents WHERE status = 'processing' AND (lease_until IS NULL OR lease_until < now()) ORDER BY created_at, id LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.id);
  }

  /** Takes a `processing` document for `leaseMs` (no other replica takes it meanwhile); undefined when gone or held. */
  async claimDocument(id: string, leaseMs: number): Promise<ClaimedDocument | undefined> {
    // TypeORM answers an UPDATE with [rows, affected].
    const [rows]: [(DocumentRow & { config: string; input_text: string | null; input_data: Buffer | null })[], number] = await this.db.query(
      `UPDATE documents d SET lease_until = now() + make_interval(secs => $2::double precision / 1000)
        FROM knowledge_bases b
       WHERE d.id = $1 AND b.id = d.base_id AND d.status = 'processing' AND (d.lease_until IS NULL OR d.lease_until < now())
       RETURNING ${DOCUMENT_COLUMNS}, b.config::text AS config, d.input_text, d.input_data`,
      [id, leaseMs],
    );
    const row = rows[0];
    if (!row) return undefined;
    return { ...toDocument(row), accountId: row.account_id, config: row.config, inputText: row.input_text, inputData: row.input_data };
  }

  /**
   * URL documents due for a re-fetch (their `next_refresh_at` passed) that nobody holds, most overdue first: what
   * the ingestion sweep takes up. Documents still `processing` are ingestion's.
   */
  async dueDocumentIds(limit: number): Promise<string[]> {
    const rows: { id: string }[] = await this.db.query(
      `SELECT id FROM documents
        WHERE next_refresh_at <= now() AND status <> 'processing' AND (lease_until IS NULL OR lease_until < now())
        ORDER BY next_refresh_at, id LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Takes a due URL document for a re-fetch for `leaseMs`, as claimDocument does for ingestion (the same lease: the
   * UPDATE re-checks it on the locked row, so of two replicas only one takes it); undefined when gone, held or not due.
   */
  async claimRefresh(id: string, leaseMs: number): Promise<RefreshingDocument | undefined> {
    const [rows]: [(DocumentRow & { content_sha256: string | null })[], number] = await this.db.query(
      `UPDATE documents d SET lease_until = now() + make_interval(secs => $2::double precision / 1000)
        WHERE d.id = $1 AND d.next_refresh_at <= now() AND d.status <> 'processing' AND (d.lease_until IS NULL OR d.lease_until < now())
       RETURNING ${DOCUMENT_COLUMNS}, d.content_sha256`,
      [id, leaseMs],
    );
    const row = rows[0];
    return row ? { ...toDocument(row), contentSha256: row.content_sha256 } : undefined;
  }

  /**
   * Stores the chunks and marks the document `ready`, in one transaction under the base's lock (so two documents
   * finishing together cannot both pass the limit): a document that would take the base past `maxBaseChunks` is
   * failed instead and stores nothing; a document deleted meanwhile stores nothing (`gone`). The input is dropped.
   */
  async completeDocument(id: string, content: DocumentContent, maxBaseChunks: number): Promise<CompleteOutcome> {
    return this.storeContent(id, content, maxBaseChunks, false);
  }

  /**
   * A re-fetched URL document's new content: its old chunks out and the new ones in, as deleteDocument and
   * completeDocument do, in one transaction under the base's lock, so a search sees the old chunks or the new ones.
   * `ready` afterwards (a document whose first ingestion failed becomes so); its title is kept unless it had none.
   * The base's limit counts the new chunks instead of the old ones; past it, the old content stays
   * (`refresh_failure_reason`). A document deleted meanwhile stores nothing (`gone`).
   */
  async refreshDocument(id: string, content: DocumentContent, maxBaseChunks: number): Promise<CompleteOutcome> {
    return this.storeContent(id, content, maxBaseChunks, true);
  }

  private async storeContent(id: string, content: DocumentContent, maxBaseChunks: number, refresh: boolean): Promise<CompleteOutcome> {
    const status = refresh ? `status <> 'processing'` : `status = 'processing'`;
    // Looked up before the transaction: a lookup on another connection inside it would wait on a one-backend server.
    const vectorType = content.vectors && (await this.vectorColumnType());
    return this.db.transaction(async (m) => {
      const [found] = await m.query(`SELECT base_id FROM documents WHERE id = $1 AND ${status}`, [id]);
      if (!found) return { status: 'gone' as const };
      const [base] = await m.query(`SELECT id, config::text AS config FROM knowledge_bases WHERE id = $1 FOR UPDATE`, [found.base_id]);
      // Under the base's lock: a delete that took it first has removed the document.
      const [doc] = base ? await m.query(`SELECT id FROM documents WHERE id = $1 AND ${status} FOR UPDATE`, [id]) : [];
      if (!doc) return { status: 'gone' as const };
      const [{ others }] = await m.query(`SELECT coalesce(sum(chunk_count), 0)::int AS others FROM documents WHERE base_id = $1 AND id <> $2`, [base.id, id]);
      if (others + content.chunks.length > maxBaseChunks) {
        const reason =
          `The knowledge base would hold ${others + content.chunks.length} chunks, over its limit of ${maxBaseChunks} ` +
          `(this document makes ${content.chunks.length}; the base's other documents have ${others}).`;
        if (refresh) await this.markRefreshFailed(m, id, reason);
        else await this.markFailed(m, id, reason, content.bytes);
        return { status: 'failed' as const, reason };
      }
      if (refresh) await this.removeChunks(m, base.id, id);
      await this.insertChunks(m, base, id, content, vectorType);
      await m.query(
        `UPDATE documents SET status = 'ready', failure_reason = NULL, refresh_failure_reason = NULL, title = CASE WHEN title = '' THEN $2 ELSE title END,
                characters = $3, chunk_count = $4, bytes = $5, content_type = CASE WHEN content_type = '' OR source = 'url' THEN $6 ELSE content_type END,
                content_sha256 = $7, fetched_at = CASE WHEN source = 'url' THEN now() END,
                next_refresh_at = CASE WHEN source = 'url' THEN now() + make_interval(hours => refresh_interval_hours) END,
                input_text = NULL, input_data = NULL, lease_until = NULL, updated_at = now()
          WHERE id = $1`,
        [id, clean(content.title), content.characters, content.chunks.length, content.bytes, content.contentType ?? '', content.contentSha256 ?? null],
      );
      return { status: 'ready' as const };
    });
  }

  /** A document's chunks into its base (under the base's lock): their vectors, vocabulary, lexeme counts and champion entries. */
  private async insertChunks(
    m: EntityManager,
    base: { id: string; config: string },
    id: string,
    content: DocumentContent,
    vectorType: string | undefined,
  ): Promise<void> {
    for (let i = 0; i < content.chunks.length; i += 1000) {
      const batch = content.chunks.slice(i, i + 1000);
      await m.query(
        `INSERT INTO chunks (base_id, document_id, position, heading, text, config)
         SELECT $1, $2, u.position, u.heading, u.text, $3::regconfig FROM unnest($4::int[], $5::text[], $6::text[]) AS u(position, heading, text)`,
        [base.id, id, base.config, batch.map((c) => c.position), batch.map((c) => clean(c.heading)), batch.map((c) => clean(c.text))],
      );
    }
    const vectors = content.vectors;
    if (vectors && vectors.vectors.length === content.chunks.length) {
      for (let i = 0; i < content.chunks.length; i += VECTOR_BATCH) {
        await this.insertVectors(
          m,
          vectorType,
          vectors.model,
          { documentId: id, positions: content.chunks.slice(i, i + VECTOR_BATCH).map((c) => c.position) },
          vectors.vectors.slice(i, i + VECTOR_BATCH),
        );
      }
    }
    await m.query(`INSERT INTO words (base_id, word) ${VOCABULARY_SELECT('c.document_id = $1')} ON CONFLICT DO NOTHING`, [id]);
    await m.query(
      `INSERT INTO lexemes (base_id, lexeme, chunk_count) ${LEXEME_COUNTS_SELECT('c.document_id = $1')}
       ON CONFLICT (base_id, lexeme) DO UPDATE SET chunk_count = lexemes.chunk_count + excluded.chunk_count`,
      [id],
    );
    await this.addChampions(m, base.id, id);
  }

  /** A re-fetch found the page as it was: the chunks stay; due again an interval from now. False when it is gone. */
  async markUnchanged(id: string): Promise<boolean> {
    const [, count] = await this.db.query(
      `UPDATE documents SET fetched_at = now(), next_refresh_at = now() + make_interval(hours => refresh_interval_hours), refresh_failure_reason = NULL,
              lease_until = NULL
        WHERE id = $1 AND status = 'ready'`,
      [id],
    );
    return count > 0;
  }

  /**
   * A re-fetch failed: a ready document keeps its chunks with `reason` as its refresh_failure_reason; one whose
   * first ingestion failed stays failed with `reason` as its failure_reason. Either is due again an interval from
   * now. False when it is gone.
   */
  async failRefresh(id: string, reason: string): Promise<boolean> {
    return this.markRefreshFailed(this.db.manager, id, reason);
  }

  private async markRefreshFailed(m: EntityManager, id: string, reason: string): Promise<boolean> {
    const [, count] = await m.query(
      `UPDATE documents SET failure_reason = CASE WHEN status = 'failed' THEN $2 ELSE failure_reason END,
              refresh_failure_reason = CASE WHEN status = 'failed' THEN NULL ELSE $2 END,
              next_refresh_at = now() + make_interval(hours => refresh_interval_hours), lease_until = NULL
        WHERE id = $1 AND status <> 'processing'`,
      [id, clean(reason).slice(0, 2000)],
    );
    return count > 0;
  }

  /**
   * Once a document's chunks and lexeme counts are in (under the base's lock): the champion list of each of its
   * lexemes now in more than CHAMPIONS_FROM chunks takes the document's chunks, or, for a lexeme that has just passed
   * CHAMPIONS_FROM, is built from every chunk of the base having it; each keeps its best CHAMPIONS_PER_LEXEME.
   */
  private async addChampions(m: EntityManager, baseId: string, documentId: string): Promise<void> {
    const listed: { lexeme: string; new_list: boolean; floor: number | null }[] = await m.query(
      `SELECT d.lexeme, l.chunk_count - d.n <= ${CHAMPIONS_FROM} AS new_list, l.champion_floor AS floor
         FROM (${LEXEME_COUNTS_SELECT('c.document_id = $2')}) AS d
         JOIN lexemes l ON l.base_id = $1 AND l.lexeme = d.lexeme
        WHERE l.chunk_count > ${CHAMPIONS_FROM}`,
      [baseId, documentId],
    );
    const grown = listed.filter((r) => !r.new_list);
    const fresh = listed.filter((r) => r.new_list).map((r) => r.lexeme);
    const touched = new Set(fresh);
    if (grown.length) {
      // Only the chunks weighing more than a full list's last (its floor) enter it: once a base is large, few do, and
      // only their lists need trimming (inserting every posting and trimming every list, then reading each list's
      // last instead of its floor, cost ~180-250 ms a document of 50 chunks at 40 k chunks). A chunk weighing the
      // same stays out, as ties go to the lower chunk id and chunks are numbered under the base's lock.
      const entered: { lexeme: string }[] = await m.query(
        `INSERT INTO champions (base_id, lexeme, chunk_id, weight)
         SELECT p.base_id, p.lexeme, p.chunk_id, p.weight FROM (${CHAMPION_WEIGHTS_SELECT('c.document_id = $1', 'TRUE')}) AS p
           JOIN unnest($2::text[], $3::real[]) AS g(lexeme, floor) ON g.lexeme = p.lexeme
          WHERE g.floor IS NULL OR p.weight > g.floor
         RETURNING lexeme`,
        [documentId, grown.map((r) => r.lexeme), grown.map((r) => r.floor)],
      );
      for (const r of entered) touched.add(r.lexeme);
    }
    if (fresh.length) await this.fillChampions(m, baseId, fresh);
    if (touched.size) await this.trimChampions(m, baseId, [...touched]);
  }

  /**
   * Adds to the champion lists of `lexemes` (those still over CHAMPIONS_FROM chunks) the base's chunks having each,
   * at most `bound` of them per lexeme, as the index yields them; trimChampions then keeps the best.
   */
  private async fillChampions(m: EntityManager, baseId: string, lexemes: string[], bound?: number): Promise<void> {
    await m.query(
      `INSERT INTO champions (base_id, lexeme, chunk_id, weight)
       SELECT p.base_id, p.lexeme, p.chunk_id, p.weight
         FROM unnest($2::text[], $3::tsquery[]) AS t(lexeme, query)
         JOIN lexemes l ON l.base_id = $1 AND l.lexeme = t.lexeme AND l.chunk_count > ${CHAMPIONS_FROM},
         LATERAL (SELECT s.id FROM chunks s WHERE s.base_id = $1 AND s.tsv @@ t.query ${bound ? `LIMIT ${bound}` : ''}) AS k,
         LATERAL (${CHAMPION_WEIGHTS_SELECT('c.id = k.id', 'u.lexeme = t.lexeme')}) AS p
       ON CONFLICT DO NOTHING`,
      [baseId, lexemes, lexemes.map(tsqueryLiteral)],
    );
  }

  /** Keeps the best CHAMPIONS_PER_LEXEME chunks of each list of `lexemes` (by weight, then chunk id), and their floors. */
  private async trimChampions(m: EntityManager, baseId: string, lexemes: string[]): Promise<void> {
    await m.query(
      `DELETE FROM champions h USING (
         SELECT lexeme, chunk_id, row_number() OVER (PARTITION BY lexeme ORDER BY weight DESC, chunk_id) AS rank
           FROM champions WHERE base_id = $1 AND lexeme = ANY($2::text[])
       ) AS r
       WHERE h.base_id = $1 AND h.lexeme = r.lexeme AND h.chunk_id = r.chunk_id AND r.rank > ${CHAMPIONS_PER_LEXEME}`,
      [baseId, lexemes],
    );
    await m.query(`UPDATE lexemes l SET champion_floor = ${CHAMPION_FLOOR('l.base_id', 'l.lexeme')} WHERE l.base_id = $1 AND l.lexeme = ANY($2::text[])`, [
      baseId,
      lexemes,
    ]);
  }

  /** Marks a `processing` document failed with `reason` (its input dropped); false when it is gone or settled. */
  async failDocument(id: string, reason: string, bytes?: number): Promise<boolean> {
    return this.markFailed(this.db.manager, id, reason, bytes);
  }

  private async markFailed(m: EntityManager, id: string, reason: string, bytes?: number): Promise<boolean> {
    // A URL document with an interval is tried again when it is due (a page that was down, a limit since freed).
    const [, count] = await m.query(
      `UPDATE documents SET status = 'failed', failure_reason = $2, bytes = coalesce($3, bytes), input_text = NULL, input_data = NULL,
              lease_until = NULL, updated_at = now(), next_refresh_at = now() + make_interval(hours => refresh_interval_hours)
        WHERE id = $1 AND status = 'processing'`,
      [id, clean(reason).slice(0, 2000), bytes ?? null],
    );
    return count > 0;
  }

  /** The account's bases among `ids` (in no particular order); ids it does not have are left out. */
  async existingBases(accountId: string, ids: string[]): Promise<{ id: string; config: string }[]> {
    const wellFormed = ids.filter((id) => isWellFormedId('kb', id));
    if (!wellFormed.length) return [];
    return this.db.query(`SELECT id, config::text AS config FROM knowledge_bases WHERE account_id = $1 AND id = ANY($2::text[])`, [accountId, wellFormed]);
  }

  /**
   * What a search needs to know of the query, in one statement (docs/knowledge.md, Search ranking, 1-3):
   * - its terms under `config`: each distinct word (as the `simple` configuration splits it) with its lexeme under
   *   `config`, one per lexeme (the first word having it), at most MAX_TERMS; stop words and a caller's fillers
   *   (spoken-fillers.ts: `um`, `like`, `dont`, `you know`) are left out unless the query has nothing else;
   * - the corrections of each term of FUZZY_MIN_LENGTH+ letters the bases' vocabulary lacks (a misspelling): at most
   *   CORRECTIONS_PER_WORD words of the vocabulary by trigram similarity (at least FUZZY_MIN_SIMILARITY, the
   *   session's threshold), best first, with their lexemes; also the word it is with two neighbouring letters
   *   swapped (TRANSPOSITION_SIMILARITY) or with a hyphen added or dropped (`wifi`/`wi-fi`, similarity 1), when
   *   some chunk has its lexeme; and, for any term, the other forms of an irregular form the stemmer leaves apart
   *   (irregular-forms.ts: `came` and `come`, similarity 1). A word's lexeme is its longest (lexemeOf). The terms
   *   the vocabulary has are set aside first, by its primary key (a range: as `=`, the planner took the trigram
   *   index, which answers `=` too, ~0.5 ms a term; `misspelt` is materialised: left to the planner, the trigram
   *   lookup ran for every term and the vocabulary test came after it); the trigram lookup is served from the
   *   trigram index or from the primary key (the bases' words, each compared: ~3 ms a term at 1,200 words on a
   *   busy machine) by cost;
   * - how many chunks of the bases have each of those lexemes (`counts`; absent: none), whether a base has it in too
   *   few chunks for a champion list (`listless`: which), and how many chunks the bases hold (`total`): the document
   *   frequencies kept beside the vocabulary (`lexemes`, primary key lookups).
   * One round trip instead of three: each part is well under a millisecond of execution, less than a trip through
   * the pool on a busy machine.
   */
  async queryTerms(config: string, baseIds: string[], query: string): Promise<QueryTerms> {
    const trgm = await this.trigram();
    const withoutPhrases = withoutFillerPhrases(config, query);
    const text = /[\p{L}\p{N}]/u.test(withoutPhrases) ? withoutPhrases : query;
    // Alternatives known before the statement: a word's irregular forms (always), its swapped letters and compound
    // spellings (if it is misspelt, when some chunk has their lexeme); the statement keeps those of its terms.
    const given = [
      ...irregularForms(config, text).map(({ word, form }) => ({ word, alternative: form, sim: 1, ifMisspelt: false })),
      ...swappedLetters(text).map(({ word, swapped }) => ({ word, alternative: swapped, sim: TRANSPOSITION_SIMILARITY, ifMisspelt: true })),
      ...compoundSpellings(text).map(({ word, spelling }) => ({ word, alternative: spelling, sim: 1, ifMisspelt: true })),
    ];
    const rows: { kind: number; word: string | null; lexeme: string | null; sim: number | null; n: string | number | null; listless: string[] | null }[] = await this.db.query(
      `WITH q AS (
         SELECT u.word, u.ord,
                CASE WHEN u.word = ANY($4::text[]) THEN NULL ELSE ${lexemeOf('u.word')} END AS lexeme
           FROM unnest(tsvector_to_array(to_tsvector('simple', $3))) WITH ORDINALITY AS u(word, ord)
       ),
       terms AS (
         SELECT d.word, d.lexeme, d.ord FROM (
           SELECT DISTINCT ON (c.lexeme) c.word, c.lexeme, c.ord
             FROM (SELECT q.word, coalesce(q.lexeme, q.word) AS lexeme, q.ord FROM q
                    WHERE q.lexeme IS NOT NULL OR NOT EXISTS (SELECT 1 FROM q WHERE q.lexeme IS NOT NULL)) AS c
            ORDER BY c.lexeme, c.ord
         ) AS d ORDER BY d.ord LIMIT ${MAX_TERMS}
       ),
       misspelt AS MATERIALIZED (
         SELECT t.ord, t.word FROM terms t
          WHERE length(t.word) >= ${FUZZY_MIN_LENGTH}
            AND NOT EXISTS (SELECT 1 FROM words e WHERE e.base_id = ANY($2::text[]) AND e.word >= t.word AND e.word <= t.word)
       ),
       alike AS (
         SELECT m.ord, m.word, w.word AS fixed, w.sim
           FROM misspelt m
           CROSS JOIN LATERAL (
             SELECT v.word, ${trgm}.similarity(v.word, m.word) AS sim FROM words v
              WHERE v.base_id = ANY($2::text[]) AND v.word OPERATOR(${trgm}.%) m.word
              ORDER BY sim DESC, v.word LIMIT ${CORRECTIONS_PER_WORD}
           ) AS w
       ),
       given AS (
         SELECT a.word, a.alternative, a.sim, a.if_misspelt FROM unnest($5::text[], $6::text[], $7::real[], $8::boolean[]) AS a(word, alternative, sim, if_misspelt)
       ),
       alternatives AS (
         SELECT t.ord, t.word, g.alternative AS fixed, g.sim FROM terms t JOIN given g ON g.word = t.word AND NOT g.if_misspelt
         UNION ALL
         SELECT m.ord, m.word, g.alternative, g.sim FROM misspelt m JOIN given g ON g.word = m.word AND g.if_misspelt
          WHERE EXISTS (SELECT 1 FROM lexemes l WHERE l.base_id = ANY($2::text[]) AND l.lexeme = ${lexemeOf('g.alternative')})
       ),
       found AS (
         SELECT 1 AS kind, t.ord, t.word, NULL::text AS fixed, t.lexeme, NULL::real AS sim FROM terms t
         UNION ALL
         SELECT 2, f.ord, f.word, f.fixed, ${lexemeOf('f.fixed')}, f.sim
           FROM (SELECT * FROM alike UNION ALL SELECT * FROM alternatives) AS f
       )
       SELECT 0 AS kind, 0::bigint AS ord, NULL::text AS word, NULL::text AS fixed, NULL::text AS lexeme, NULL::real AS sim,
              (SELECT coalesce(sum(d.chunk_count), 0) FROM documents d WHERE d.base_id = ANY($2::text[]) AND d.status = 'ready') AS n,
              NULL::text[] AS listless
       UNION ALL
       SELECT f.kind, f.ord, f.word, f.fixed, f.lexeme, f.sim, k.n, k.listless
         FROM found f
         CROSS JOIN LATERAL (
           SELECT sum(l.chunk_count) AS n, array_agg(l.base_id) FILTER (WHERE l.chunk_count <= ${CHAMPIONS_FROM}) AS listless
             FROM lexemes l WHERE l.base_id = ANY($2::text[]) AND l.lexeme = f.lexeme
         ) AS k
        WHERE f.lexeme IS NOT NULL
       ORDER BY kind, ord, sim DESC, fixed`,
      [config, baseIds, text, spokenFillers(config), given.map((g) => g.word), given.map((g) => g.alternative), given.map((g) => g.sim), given.map((g) => g.ifMisspelt)],
    );
    const out: QueryTerms = { terms: [], corrections: [], total: 0, counts: new Map(), listless: new Map() };
    for (const r of rows) {
      if (r.kind === 0) out.total = Number(r.n);
      else if (r.word !== null && r.lexeme !== null) {
        if (r.n !== null) out.counts.set(r.lexeme, Number(r.n));
        if (r.listless) out.listless.set(r.lexeme, r.listless);
        if (r.kind === 1) out.terms.push({ word: r.word, lexeme: r.lexeme });
        else out.corrections.push({ word: r.word, lexeme: r.lexeme, similarity: Number(r.sim) });
      }
    }
    return out;
  }

  /**
   * Lexical search over the chunks of `baseIds` (all of one text-search configuration). A chunk matches on any of
   * the query's terms, or on a word of the bases' vocabulary like a misspelt term (see corrections). Each term has
   * a document frequency `df` (the chunks having its lexeme, or for a misspelt term the most of its corrections')
   * and weighs `idf = ln(1 + N / max(df, 1))` (N: the bases' chunks). Candidates come from the rare terms only
   * (df ≤ max(RARE_SHARE × N, RARE_CHUNKS)) through the tsvector GIN index, at most RANKED matching chunks; when no
   * term is rare, from the terms' champion lists (the CHAMPIONS_PER_LEXEME chunks each weighs most in). They are
   * ranked by `ts_rank_cd` against every term and the best CANDIDATES scored
   *
   *   score = 0.8 × coverage + 0.2 × density
   *
   * coverage: over the query's terms, the IDF-weighted share `Σ idf × match / Σ idf`, where match is 1 when the
   * chunk has the term's lexeme, else the trigram similarity of the best correction it has (a misspelt term counts
   * partly), else 0; density: `ts_rank_cd(tsv, any-term query, 1|32)` (heading matches weigh more, long chunks are
   * evened out), in 0-1. Best first; ties by document id, then position.
   */
  async search(config: string, params: SearchParams): Promise<SearchHitRecord[]> {
    const statement = await this.searchStatement(config, params);
    if (!statement) return [];
    const rows: (HitRow & { score: number })[] = await this.db.query(statement.sql, statement.values);
    return rows.map((r) => toHit(r, Number(r.score)));
  }

  /**
   * search's last statement, with what went into it (the query's terms, their corrections and document frequencies,
   * looked up on the way); undefined when nothing can match. bench/knowledge.mjs --explain plans it.
   */
  async searchStatement(config: string, params: SearchParams): Promise<SearchStatement | undefined> {
    if (!params.baseIds.length) return undefined;
    const { terms, corrections: fixes, total, counts, listless } = await this.queryTerms(config, params.baseIds, params.query);
    if (!terms.length) return undefined;
    // Each term's alternatives: its own lexeme (weight 1) and its corrections' (their similarity).
    const perTerm = terms.map((t) => {
      const own = new Map<string, number>([[t.lexeme, 1]]);
      for (const f of fixes) if (f.word === t.word && !own.has(f.lexeme)) own.set(f.lexeme, f.similarity);
      return own;
    });
    const df = perTerm.map((own) => Math.max(0, ...[...own.keys()].map((l) => counts.get(l) ?? 0)));
    // A term no chunk has (nor a correction of it) matches nothing; it weighs as a term of one chunk.
    const idf = df.map((n) => Math.log(1 + total / Math.max(n, 1)));
    const known = terms.map((_, i) => i).filter((i) => df[i] > 0);
    if (!known.length) return undefined;
    known.sort((a, b) => df[a] - df[b] || a - b);
    const rareLimit = Math.max(RARE_SHARE * total, RARE_CHUNKS);
    const rare = known.filter((i) => df[i] <= rareLimit);
    // No rare term: every term is common and has a champion list in each base where it is over CHAMPIONS_FROM.
    const chosen = rare.length ? rare : known;
    const candidateLexemes = new Set(chosen.flatMap((i) => [...perTerm[i].keys()].filter((l) => (counts.get(l) ?? 0) > 0)));

    const alternatives = new Set<string>();
    const termIndex: number[] = [];
    const altQuery: string[] = [];
    const altWeight: number[] = [];
    perTerm.forEach((own, i) => {
      for (const [lexeme, weight] of own) {
        termIndex.push(i);
        altQuery.push(tsqueryLiteral(lexeme));
        altWeight.push(weight * idf[i]);
        alternatives.add(lexeme);
      }
    });
    const anyTerm = [...alternatives].map(tsqueryLiteral).join(' | ');
    const candidateQuery = [...candidateLexemes].map(tsqueryLiteral).join(' | ');
    const idfSum = idf.reduce((a, b) => a + b, 0);
    // The champion lists of the terms, and in a base where a lexeme is in CHAMPIONS_FROM chunks or fewer (no list
    // there: a common term's correction or irregular form, or a term rare in one of several bases), its chunks: per
    // such base its lexemes OR-ed, as values the planner sees, so that it takes the GIN index. (Matched against
    // lexemes of a joined table, it scanned the base's every chunk instead, reading each one's tsv: 180-430 ms at
    // 100 k chunks, docs/knowledge-bench.md.)
    const listlessIn = new Map<string, string[]>();
    for (const lexeme of candidateLexemes) for (const baseId of listless.get(lexeme) ?? []) listlessIn.set(baseId, [...(listlessIn.get(baseId) ?? []), lexeme]);
    const listlessValues = [...listlessIn].flatMap(([baseId, lexemes]) => [baseId, lexemes.map(tsqueryLiteral).join(' | ')]);
    const fromListless = [...listlessIn.keys()].map((_, i) => `UNION SELECT s.id FROM chunks s WHERE s.base_id = $${10 + 2 * i} AND s.tsv @@ $${11 + 2 * i}::tsquery`);
    const fromChampions = `SELECT c.id, c.tsv FROM (
           SELECT h.chunk_id AS id FROM champions h WHERE h.base_id = ANY($1::text[]) AND h.lexeme = ANY($9::text[])
           ${fromListless.join('\n           ')}
         ) AS k JOIN chunks c ON c.id = k.id`;
    const fromRareTerms = `SELECT c.id, c.tsv FROM chunks c WHERE c.base_id = ANY($1::text[]) AND c.tsv @@ $9::tsquery LIMIT ${RANKED}`;
    const candidateValues = rare.length ? [candidateQuery] : [[...candidateLexemes], ...listlessValues];
    // Each candidate's tsv is read once, into memory (v: `|| ''` copies it, OFFSET 0 keeps the copy from being inlined),
    // and the scores once (MATERIALIZED). Referenced as c.tsv, it was read from TOAST again for every alternative of
    // every term in coverage and for each use of the score (filter and sort): at 100 k chunks, 200 candidates of a
    // question of 14 alternatives were scored in 21 ms, in 7 ms so (docs/knowledge-bench.md).
    return {
      sql: `WITH candidates AS (
       SELECT m.id FROM (
         ${rare.length ? fromRareTerms : fromChampions}
       ) AS m
        ORDER BY ts_rank_cd(m.tsv, $2::tsquery) DESC, m.id
        LIMIT ${CANDIDATES}
     ),
     scored AS MATERIALIZED (
       SELECT c.id::text AS chunk_id, c.document_id, c.base_id, d.title, c.heading, c.text, c.position,
              round((${COVERAGE_WEIGHT} * coverage.value + ${1 - COVERAGE_WEIGHT} * ts_rank_cd(v.tsv, $2::tsquery, 1 | 32))::numeric, 4)::float8 AS score
         FROM candidates
         JOIN chunks c ON c.id = candidates.id
         JOIN documents d ON d.id = c.document_id,
         LATERAL (SELECT c.tsv || ''::tsvector AS tsv OFFSET 0) AS v,
         LATERAL (
           SELECT coalesce(sum(best), 0) / $3 AS value FROM (
             SELECT max(CASE WHEN v.tsv @@ a.query THEN a.weight ELSE 0 END) AS best
               FROM unnest($4::int[], $5::tsquery[], $6::float8[]) AS a(term, query, weight)
              GROUP BY a.term
           ) AS per_term
         ) AS coverage
     )
     SELECT * FROM scored WHERE score > 0 AND score >= $7 ORDER BY score DESC, document_id, position LIMIT $8`,
      values: [params.baseIds, anyTerm, idfSum, termIndex, altQuery, altWeight, params.minScore, params.limit, ...candidateValues],
      anyTerm,
      candidateQuery,
      candidateSource: rare.length ? 'rare terms' : 'champion lists',
      frequencies: terms.map((t, i) => ({ lexeme: t.lexeme, df: df[i] })),
      total,
    };
  }

  /** The vectors of `model` the chunks have (chunks without one are absent from the map). */
  async chunkVectors(chunkIds: string[], model: string): Promise<Map<string, Float32Array>> {
    if (!chunkIds.length) return new Map();
    const rows: { chunk_id: string; embedding: Buffer }[] = await this.db.query(
      `SELECT chunk_id::text AS chunk_id, embedding FROM chunk_vectors WHERE chunk_id = ANY($1::bigint[]) AND model = $2`,
      [chunkIds, model],
    );
    return new Map(rows.map((r) => [r.chunk_id, unpackVector(r.embedding)]));
  }

  /**
   * Chunks of ready documents without a vector of `model` (ingested before embeddings were configured, while the
   * provider failed, or under another model), oldest first: what the sweep's backfill embeds.
   */
  async chunksWithoutVectors(model: string, limit: number): Promise<{ id: string; heading: string; text: string }[]> {
    return this.db.query(
      `SELECT c.id::text AS id, c.heading, c.text FROM chunks c
         JOIN documents d ON d.id = c.document_id AND d.status = 'ready'
        WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id AND v.model = $1)
        ORDER BY c.id LIMIT $2`,
      [model, limit],
    );
  }

  /** Stores (or replaces) the chunks' vectors; chunks deleted meanwhile are skipped. */
  async storeVectors(model: string, chunkIds: string[], vectors: number[][]): Promise<void> {
    await this.insertVectors(this.db.manager, await this.vectorColumnType(), model, { chunkIds }, vectors);
  }

  /**
   * Chunks' vectors, the chunks named by id or by their document's positions: packed for the rerank, and, where the
   * `embedding_index` column is (pgvector: its `type`), also as pgvector's text form for the HNSW index.
   */
  private async insertVectors(
    m: EntityManager,
    type: string | undefined,
    model: string,
    keys: { documentId: string; positions: number[] } | { chunkIds: string[] },
    vectors: number[][],
  ): Promise<void> {
    const byPosition = 'documentId' in keys;
    await m.query(
      `INSERT INTO chunk_vectors (chunk_id, model, embedding${type ? ', embedding_index' : ''})
       SELECT c.id, $1, u.embedding${type ? `, u.literal::${type}` : ''} FROM unnest($2::bigint[], $3::bytea[], $4::text[]) AS u(key, embedding, literal)
         JOIN chunks c ON ${byPosition ? 'c.document_id = $5 AND c.position = u.key' : 'c.id = u.key AND $5::text IS NULL'}
       ON CONFLICT (chunk_id) DO UPDATE SET model = excluded.model, embedding = excluded.embedding${type ? ', embedding_index = excluded.embedding_index' : ''}`,
      [
        model,
        byPosition ? keys.positions : keys.chunkIds,
        vectors.map(packVector),
        type ? vectors.map(vectorLiteral) : null,
        byPosition ? keys.documentId : null,
      ],
    );
  }

  /**
   * Makes pgvector's candidates possible where the database has (or may create) the `vector` extension: creates it
   * in this schema when the server has it available and it is not installed (as pg_trgm; managed offerings allow it
   * to the database's owner), then adds `chunk_vectors.embedding_index` of its type. Run at start-up when embeddings
   * are configured, not as a migration, because the extension may become available after the schema was migrated.
   * Answers the extension's version, or why it cannot be used.
   */
  async enableVectorIndex(): Promise<{ version: string } | { reason: string }> {
    let [ext]: { schema: string; version: string }[] = await this.db.query(VECTOR_EXTENSION);
    if (!ext) {
      const [available] = await this.db.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`);
      if (!available) return { reason: 'the database server does not have the vector extension (pgvector)' };
      try {
        await this.db.query(`CREATE EXTENSION IF NOT EXISTS vector SCHEMA knowledge`);
      } catch (error) {
        return { reason: `creating the vector extension failed: ${(error as Error).message}` };
      }
      [ext] = await this.db.query(VECTOR_EXTENSION);
      if (!ext) return { reason: 'the vector extension could not be found after it was created' };
    }
    this.vectorColumn = undefined;
    // Only when missing: ALTER TABLE takes its lock (waiting behind searches, and holding later ones) even when the
    // column is there, and every replica runs this at start-up.
    if (!(await this.vectorColumnType())) {
      await this.db.query(`ALTER TABLE chunk_vectors ADD COLUMN IF NOT EXISTS embedding_index ${quoteIdent(ext.schema)}.vector`);
      this.vectorColumn = undefined;
    }
    return { version: ext.version };
  }

  /** The `embedding_index` column's type, schema-qualified (`"knowledge".vector`), or undefined when it is not there. */
  private vectorColumnType(): Promise<string | undefined> {
    return (this.vectorColumn ??= this.db
      .query(
        `SELECT n.nspname AS schema, e.extversion AS version FROM pg_attribute a
           JOIN pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = t.typnamespace
           JOIN pg_extension e ON e.extname = 'vector'
          WHERE a.attrelid = 'chunk_vectors'::regclass AND a.attname = 'embedding_index' AND NOT a.attisdropped`,
      )
      .then(
        ([row]: { schema: string; version: string }[]) => {
          this.vectorVersion = row?.version;
          return row ? `${quoteIdent(row.schema)}.vector` : undefined;
        },
        (error: unknown) => {
          // Not remembered: the next write or search looks again.
          this.vectorColumn = undefined;
          throw error;
        },
      ));
  }

  /**
   * Vectors of `model` stored before `embedding_index` existed: up to `limit` of them get it from their packed form.
   * Answers how many. Nothing without the column.
   */
  async fillVectorIndex(model: string, limit: number): Promise<number> {
    const type = await this.vectorColumnType();
    if (!type) return 0;
    const rows: { chunk_id: string; embedding: Buffer }[] = await this.db.query(
      `SELECT chunk_id::text AS chunk_id, embedding FROM chunk_vectors WHERE model = $1 AND embedding_index IS NULL ORDER BY chunk_id LIMIT $2`,
      [model, limit],
    );
    if (!rows.length) return 0;
    await this.db.query(
      `UPDATE chunk_vectors v SET embedding_index = u.literal::${type} FROM unnest($1::bigint[], $2::text[]) AS u(id, literal)
        WHERE v.chunk_id = u.id AND v.embedding_index IS NULL`,
      [rows.map((r) => r.chunk_id), rows.map((r) => vectorLiteral(unpackVector(r.embedding)))],
    );
    return rows.length;
  }

  /**
   * The HNSW index of `model`'s vectors (a partial expression index: the column has no fixed dimensions, each model
   * has its own), built when missing once the model has vectors, CONCURRENTLY (ingestion and search go on) and by one
   * replica at a time (an advisory lock; the others answer `building`); an index left invalid by a failed build is
   * dropped and built again. `vector` up to 2,000 dimensions, `halfvec` up to 4,000 (pgvector's HNSW limits).
   */
  async ensureVectorIndex(model: string): Promise<'ready' | 'building' | 'no vectors' | 'unsupported'> {
    const type = await this.vectorColumnType();
    if (!type) return 'unsupported';
    const index = await this.wantedVectorIndex(model, type);
    if (index === 'no vectors') return index;
    if (!index) return 'unsupported';
    const state = await this.indexState(index.name);
    if (state === 'valid') {
      this.vectorIndexes.set(model, { index, checkedAt: Date.now() });
      return 'ready';
    }
    const runner = this.db.createQueryRunner();
    try {
      const [{ locked }] = await runner.query(`SELECT pg_try_advisory_lock(hashtext('knowledge:vector-index:' || $1)) AS locked`, [index.name]);
      if (!locked) return 'building';
      try {
        // A concurrent build that failed leaves an invalid index, which IF NOT EXISTS would keep.
        if ((await this.indexState(index.name)) === 'invalid') await runner.query(`DROP INDEX CONCURRENTLY IF EXISTS ${quoteIdent(index.name)}`);
        await runner.query(
          `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${quoteIdent(index.name)} ON chunk_vectors USING hnsw ((${index.expression}) ${index.ops})
            WHERE model = ${sqlLiteral(model)}`,
        );
      } finally {
        await runner.query(`SELECT pg_advisory_unlock(hashtext('knowledge:vector-index:' || $1))`, [index.name]);
      }
    } finally {
      await runner.release();
    }
    this.vectorIndexes.set(model, { index, checkedAt: Date.now() });
    return 'ready';
  }

  private async indexState(name: string): Promise<'valid' | 'invalid' | 'absent'> {
    const [row]: { valid: boolean }[] = await this.db.query(
      `SELECT i.indisvalid AS valid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
        WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`,
      [name],
    );
    return !row ? 'absent' : row.valid ? 'valid' : 'invalid';
  }

  /**
   * The `limit` chunks of the bases nearest to `vector` by cosine distance through `model`'s HNSW index (approximate;
   * pgvector 0.8+ scans on until enough chunks of these bases are found), each with its cosine; or what is missing:
   * pgvector, or the model's index (none yet, or of another dimension). Whether the index exists is looked up again
   * at most every VECTOR_INDEX_RECHECK_MS while it does not.
   */
  async nearestChunks(baseIds: string[], model: string, vector: number[], limit: number): Promise<NearestChunks> {
    if (!(await this.vectorColumnType())) return { missing: 'pgvector' };
    const index = await this.vectorIndex(model);
    if (!index || index.dims !== vector.length) return { missing: 'index' };
    if (!baseIds.length) return { hits: [] };
    const rows: (HitRow & { distance: number })[] = await this.db.transaction(
      async (m) => {
        const settings = [`set_config('hnsw.ef_search', $1, true)`];
        if (this.vectorVersion && compareVersions(this.vectorVersion, '0.8.0') >= 0) settings.push(`set_config('hnsw.iterative_scan', 'relaxed_order', true)`);
        await m.query(`SELECT ${settings.join(', ')}`, [String(Math.max(40, limit))]);
        return m.query(
          `SELECT c.id::text AS chunk_id, c.document_id, c.base_id, d.title, c.heading, c.text, c.position,
                  (${index.expression}) OPERATOR(${index.schema}.<=>) $1::${index.cast} AS distance
             FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id JOIN documents d ON d.id = c.document_id
            WHERE v.model = ${sqlLiteral(model)} AND c.base_id = ANY($2::text[])
            ORDER BY (${index.expression}) OPERATOR(${index.schema}.<=>) $1::${index.cast}
            LIMIT $3`,
          [vectorLiteral(vector), baseIds, limit],
        );
      },
    );
    return { hits: rows.map((r) => ({ ...toHit(r, 0), cosine: 1 - Number(r.distance) })) };
  }

  private async vectorIndex(model: string): Promise<VectorIndex | undefined> {
    const known = this.vectorIndexes.get(model);
    if (known?.index) return known.index;
    if (known && Date.now() - known.checkedAt < VECTOR_INDEX_RECHECK_MS) return undefined;
    const type = await this.vectorColumnType();
    let index: VectorIndex | undefined;
    if (type) {
      const wanted = await this.wantedVectorIndex(model, type);
      if (wanted && wanted !== 'no vectors' && (await this.indexState(wanted.name)) === 'valid') index = wanted;
    }
    this.vectorIndexes.set(model, { index, checkedAt: Date.now() });
    return index;
  }

  /** The index `model`'s stored vectors call for (by their dimensions), or undefined when pgvector's HNSW cannot index them. */
  private async wantedVectorIndex(model: string, type: string): Promise<VectorIndex | 'no vectors' | undefined> {
    const [row]: { dims: number }[] = await this.db.query(`SELECT length(embedding) / 4 AS dims FROM chunk_vectors WHERE model = $1 LIMIT 1`, [model]);
    return row ? vectorIndexOf(model, row.dims, type) : 'no vectors';
  }

  /** Forgets what is known of the vector indexes (after an index was dropped, say). */
  forgetVectorIndexes(): void {
    this.vectorIndexes.clear();
    this.vectorColumn = undefined;
  }
}

const VECTOR_EXTENSION = `SELECT n.nspname AS schema, e.extversion AS version FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
  WHERE e.extname = 'vector'`;

/** How often an absent vector index is looked for again by search (the sweep builds it). */
const VECTOR_INDEX_RECHECK_MS = 60_000;

export interface VectorIndex {
  name: string;
  dims: number;
  /** The extension's schema, quoted. */
  schema: string;
  /** `vector(n)` or `halfvec(n)`, schema-qualified. */
  cast: string;
  /** The indexed expression: the column cast to `cast`. */
  expression: string;
  ops: string;
}

/** The HNSW index for `model`'s vectors of `dims` dimensions (the column's type `type`), or undefined past 4,000. */
function vectorIndexOf(model: string, dims: number, type: string): VectorIndex | undefined {
  const schema = type.slice(0, type.lastIndexOf('.'));
  const kind = dims <= 2000 ? 'vector' : dims <= 4000 ? 'halfvec' : undefined;
  if (!kind || dims < 1) return undefined;
  const cast = `${schema}.${kind}(${dims})`;
  const name = `chunk_vectors_hnsw_${createHash('sha256').update(model).digest('hex').slice(0, 12)}_${dims}`;
  return { name, dims, schema, cast, expression: `embedding_index::${cast}`, ops: `${schema}.${kind}_cosine_ops` };
}

/** pgvector's text form of a vector. */
function vectorLiteral(vector: ArrayLike<number>): string {
  return `[${Array.prototype.join.call(vector, ',')}]`;
}

/** A string as an SQL literal (a model name in a partial index's predicate, which the planner must see as a constant). */
function sqlLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}
