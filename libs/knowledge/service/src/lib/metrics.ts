import { Counter } from 'prom-client';

/**
 * Chunk embedding (EMBEDDINGS_MODEL set): documents at ingestion, `embedded` or `failed` (the document is ready
 * lexical-only); and `backfilled`, chunks without a vector embedded by the sweep.
 */
export const knowledgeEmbeddingsTotal = new Counter({
  name: 'parley_knowledge_embeddings_total',
  help: 'Documents embedded at ingestion by outcome (embedded, failed: ready without vectors); chunks embedded later by the sweep (backfilled)',
  labelNames: ['outcome'] as const,
});

/**
 * Searches with embeddings configured, by how they were ranked: `reranked`; `timeout` (the query's embedding came
 * later than EMBEDDINGS_QUERY_TIMEOUT_MS) or `failed` (it failed), both answered in lexical order; `unembedded` (no
 * candidate had a vector of the model).
 */
export const knowledgeRerankTotal = new Counter({
  name: 'parley_knowledge_rerank_total',
  help: 'Knowledge searches with embeddings configured, by outcome (reranked, timeout, failed, unembedded)',
  labelNames: ['outcome'] as const,
});

/**
 * Scheduled re-fetches of URL documents by outcome: `changed` (new chunks stored; also a failed document that
 * became ready), `unchanged` (same body: chunks kept), `failed` (the previous content kept, or a failed document
 * still failed).
 */
export const knowledgeRefreshesTotal = new Counter({
  name: 'parley_knowledge_refreshes_total',
  help: 'Scheduled re-fetches of URL documents by outcome (changed, unchanged, failed)',
  labelNames: ['outcome'] as const,
});

/**
 * Searches with embeddings configured on a database with pgvector, by what the vector candidates did: `searched`
 * (the nearest chunks joined the lexical ones), `unindexed` (no HNSW index of the model yet: rerank only), `failed`
 * (the nearest-chunks statement failed: rerank only). Searches whose query embedding was late or failed are not counted.
 */
export const knowledgeVectorCandidatesTotal = new Counter({
  name: 'parley_knowledge_vector_candidates_total',
  help: 'Knowledge searches with pgvector, by what the vector candidates did (searched, unindexed, failed)',
  labelNames: ['outcome'] as const,
});
