import { Inject, Injectable, Optional } from '@nestjs/common';
import type { EgressPolicy } from '@parley/egress';
import { serviceLogger } from '@parley/observability';
import { isDatabaseUnavailable } from '@parley/persistence';
import { DocumentInput, INGEST_FUNCTIONS, IngestFunctions, inputBytes, inputContentType, inputSha256, isIngestError } from './ingest-port';
import { EMBED_BATCH, KNOWLEDGE_EMBEDDINGS, KnowledgeEmbeddings } from './embeddings';
import { ChunkVectors, DocumentContent, KnowledgeRepository, RefreshingDocument, StoredChunk } from './knowledge.repository';
import { FETCH_TIMEOUT_MS, INGEST_LEASE_MS, KNOWLEDGE_LIMITS, KnowledgeLimits } from './limits';
import { knowledgeEmbeddingsTotal, knowledgeRefreshesTotal } from './metrics';

export const INGEST_EGRESS = Symbol('INGEST_EGRESS');

const log = serviceLogger('knowledge');

export type IngestOutcome = 'ready' | 'failed' | 'skipped' | 'retry';
/** `skipped`: gone, held by another replica or no longer due; `retry`: stopping or the database away (the lease runs out). */
export type RefreshOutcome = 'changed' | 'unchanged' | 'failed' | 'skipped' | 'retry';

/**
 * One document's ingestion: take it (a lease, so one replica works on it), turn its input into chunks through the
 * ingest library, store them (or the reason it failed); and a URL document's re-fetch, the same way. Owns no
 * timers; the IngestionQueue runs it.
 */
@Injectable()
export class DocumentIngestor {
  constructor(
    private readonly repository: KnowledgeRepository,
    @Inject(INGEST_FUNCTIONS) private readonly ingest: IngestFunctions,
    @Inject(KNOWLEDGE_LIMITS) private readonly limits: KnowledgeLimits,
    @Inject(INGEST_EGRESS) private readonly egress: EgressPolicy,
    @Optional() @Inject(KNOWLEDGE_EMBEDDINGS) private readonly embeddings: KnowledgeEmbeddings | null = null,
  ) {}

  async run(documentId: string, signal?: AbortSignal): Promise<IngestOutcome> {
    const doc = await this.repository.claimDocument(documentId, INGEST_LEASE_MS);
    if (!doc) return 'skipped';
    let bytes: number | undefined;
    try {
      let input: DocumentInput;
      if (doc.source === 'url') {
        input = await this.fetch(doc.url ?? '', signal);
      } else if (doc.source === 'file') {
        input = { kind: 'file', data: doc.inputData ?? Buffer.alloc(0), contentType: doc.contentType };
      } else {
        input = { kind: 'text', text: doc.inputText ?? '', contentType: doc.contentType as 'text/plain' | 'text/markdown' | 'text/csv' };
      }
      bytes = inputBytes(input);
      const outcome = await this.repository.completeDocument(doc.id, await this.content(doc.id, doc.url, input, signal), this.limits.maxBaseChunks);
      return outcome.status === 'gone' ? 'skipped' : outcome.status;
    } catch (error) {
      // Stopping, or the database away: the document stays `processing` and is taken up again (lease expiry).
      if (signal?.aborted || isDatabaseUnavailable(error)) return 'retry';
      await this.repository.failDocument(doc.id, this.failureReason(error, documentId, 'ingesting a document failed'), bytes);
      return 'failed';
    }
  }

  /**
   * A due URL document's re-fetch (docs/knowledge.md, Re-fetching URL documents): taken under the ingestion lease;
   * the same body (by digest) keeps its chunks; another is extracted, chunked and embedded as at ingestion and
   * replaces them; a failure keeps them, with the reason. Stopping leaves the document as it was (its lease runs
   * out and a later sweep takes it up).
   */
  async refresh(documentId: string, signal?: AbortSignal): Promise<RefreshOutcome> {
    const doc = await this.repository.claimRefresh(documentId, INGEST_LEASE_MS);
    if (!doc) return 'skipped';
    const outcome = await this.refetch(doc, signal);
    if (outcome === 'changed' || outcome === 'unchanged' || outcome === 'failed') knowledgeRefreshesTotal.inc({ outcome });
    return outcome;
  }

  private async refetch(doc: RefreshingDocument, signal?: AbortSignal): Promise<RefreshOutcome> {
    try {
      const input = await this.fetch(doc.url ?? '', signal);
      if (inputSha256(input) === doc.contentSha256) return (await this.repository.markUnchanged(doc.id)) ? 'unchanged' : 'skipped';
      const outcome = await this.repository.refreshDocument(doc.id, await this.content(doc.id, doc.url, input, signal), this.limits.maxBaseChunks);
      return outcome.status === 'ready' ? 'changed' : outcome.status === 'gone' ? 'skipped' : 'failed';
    } catch (error) {
      if (signal?.aborted || isDatabaseUnavailable(error)) return 'retry';
      return (await this.repository.failRefresh(doc.id, this.failureReason(error, doc.id, 're-fetching a document failed'))) ? 'failed' : 'skipped';
    }
  }

  /** A URL document's page, through the outbound guard, within the document limits and the fetch deadline. */
  private fetch(url: string, signal?: AbortSignal): Promise<DocumentInput> {
    return this.ingest.fetchDocument(url, { egress: this.egress, signal, maxBytes: this.limits.maxDocumentBytes, timeoutMs: FETCH_TIMEOUT_MS });
  }

  /** The input extracted, chunked and embedded (when configured): what the repository stores. Throws when stopping. */
  private async content(documentId: string, url: string | null, input: DocumentInput, signal?: AbortSignal): Promise<DocumentContent> {
    const extracted = await this.ingest.extractDocument(input, { maxCharacters: this.limits.maxDocumentCharacters });
    const chunks = this.ingest.chunkDocument(extracted);
    signal?.throwIfAborted();
    const vectors = await this.embed(documentId, chunks, signal);
    signal?.throwIfAborted();
    return {
      title: extracted.title || url || '',
      characters: extracted.characters,
      bytes: inputBytes(input),
      chunks,
      contentType: inputContentType(input),
      vectors,
      ...(url ? { contentSha256: inputSha256(input) } : {}),
    };
  }

  /** An IngestError's message; anything else is logged and given as an internal error. */
  private failureReason(error: unknown, documentId: string, what: string): string {
    if (isIngestError(error)) return error.message;
    log.error({ err: error, documentId }, what);
    return 'The document could not be ingested (internal error).';
  }

  /**
   * The chunks' vectors when embeddings are configured; undefined when not, or when embedding failed: the document
   * is then ready without vectors (ranked lexically), the reason logged and counted.
   */
  private async embed(documentId: string, chunks: StoredChunk[], signal?: AbortSignal): Promise<ChunkVectors | undefined> {
    if (!this.embeddings || !chunks.length) return undefined;
    try {
      const vectors = await this.embeddings.embedChunks(chunks, signal);
      knowledgeEmbeddingsTotal.inc({ outcome: 'embedded' });
      return { model: this.embeddings.model, vectors };
    } catch (error) {
      if (signal?.aborted) return undefined;
      knowledgeEmbeddingsTotal.inc({ outcome: 'failed' });
      log.warn({ err: error, documentId, chunks: chunks.length }, 'embedding a document failed; it is searched lexically only');
      return undefined;
    }
  }

  /**
   * Embeds up to `limit` chunks of ready documents that have no vector of the configured model (documents ingested
   * before embeddings were configured or while the provider failed, or under another model), oldest first, in
   * batches; stops at the first failure (logged; the next sweep tries again). Answers how many were stored.
   */
  async backfillVectors(limit: number, signal?: AbortSignal): Promise<number> {
    if (!this.embeddings) return 0;
    const model = this.embeddings.model;
    const chunks = await this.repository.chunksWithoutVectors(model, limit);
    let stored = 0;
    for (let i = 0; i < chunks.length && !signal?.aborted; i += EMBED_BATCH) {
      const batch = chunks.slice(i, i + EMBED_BATCH);
      try {
        const vectors = await this.embeddings.embedChunks(batch, signal);
        await this.repository.storeVectors(
          model,
          batch.map((c) => c.id),
          vectors,
        );
        stored += batch.length;
      } catch (error) {
        if (!signal?.aborted) log.warn({ err: error, chunks: batch.length }, 'embedding chunks without vectors failed; the next sweep tries again');
        break;
      }
    }
    if (stored) knowledgeEmbeddingsTotal.inc({ outcome: 'backfilled' }, stored);
    return stored;
  }

  /**
   * Where the database has pgvector: gives vectors stored before the index column existed their indexed form (up to
   * `limit`), then builds the model's HNSW index if it is missing. Answers the index's state.
   */
  async maintainVectorIndex(limit: number): Promise<Awaited<ReturnType<KnowledgeRepository['ensureVectorIndex']>> | undefined> {
    if (!this.embeddings) return undefined;
    const model = this.embeddings.model;
    const filled = await this.repository.fillVectorIndex(model, limit);
    if (filled) log.info({ vectors: filled }, 'indexed stored vectors for vector search');
    return this.repository.ensureVectorIndex(model);
  }
}
