import type { ServiceConfig } from '@parley/config';

export interface KnowledgeLimits {
  maxDocumentBytes: number;
  maxDocumentCharacters: number;
  maxBaseChunks: number;
  maxBasesPerAccount: number;
}

export const KNOWLEDGE_LIMITS = Symbol('KNOWLEDGE_LIMITS');

export function knowledgeLimits(c: ServiceConfig): KnowledgeLimits {
  return {
    maxDocumentBytes: c.KNOWLEDGE_MAX_DOCUMENT_BYTES,
    maxDocumentCharacters: c.KNOWLEDGE_MAX_DOCUMENT_CHARACTERS,
    maxBaseChunks: c.KNOWLEDGE_MAX_BASE_CHUNKS,
    maxBasesPerAccount: c.KNOWLEDGE_MAX_BASES_PER_ACCOUNT,
  };
}

/** Documents ingested at once per replica; the rest wait their turn. */
export const INGEST_CONCURRENCY = 2;
/** How long a replica holds a document it ingests before another may take it up (a replica that died). */
export const INGEST_LEASE_MS = 10 * 60_000;
/** How often a replica looks for documents left `processing` by a replica that stopped. */
export const INGEST_SWEEP_MS = 60_000;
/** URL documents due for a re-fetch that a sweep takes up, at most (per replica; the rest wait for the next sweep). */
export const REFRESHES_PER_SWEEP = 20;
/** A URL document's fetch must finish within this. */
export const FETCH_TIMEOUT_MS = 30_000;
/** Chunks without a vector embedded per sweep when embeddings are configured (4 requests of 64). */
export const BACKFILL_CHUNKS_PER_SWEEP = 256;
/** Stored vectors given their pgvector form per sweep (no provider call: a read and an update). */
export const VECTOR_INDEX_FILL_PER_SWEEP = 5000;
