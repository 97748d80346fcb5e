import { Inject, Injectable, Optional } from '@nestjs/common';
import type { EgressPolicy } from '@parley/egress';
import { serviceLogger } from '@parley/observability';
import { isDatabaseUnavailable } from '@parley/persistence';
import { DocumentInput, INGEST_FUNCTIONS, IngestFunctions, inputBytes, inputContentType, isIngestError } from './ingest-port';
import { EMBED_BATCH, KNOWLEDGE_EMBEDDINGS, KnowledgeEmbeddings } from './embeddings';
import { ChunkVectors, KnowledgeRepository, StoredChunk } from './knowledge.repository';
import { FETCH_TIMEOUT_MS, INGEST_LEASE_MS, KNOWLEDGE_LIMITS, KnowledgeLimits } from './limits';
import { knowledgeEmbeddingsTotal } from './metrics';

export const INGEST_EGRESS = Symbol('INGEST_EGRESS');

const log = serviceLogger('knowledge');

export type IngestOutcome = 'ready' | 'failed' | 'skipped' | 'retry';

/**
 * One document's ingestion: take it (a lease, so one replica works on it), turn its input into chunks through the
 * ingest library, store them (or the reason it failed). Owns no timers; the IngestionQueue runs it.
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
        input = await this.ingest.fetchDocument(doc.url ?? '', { egress: this.egress, signal, maxBytes: this.limits.maxDocumentBytes, timeoutMs: FETCH_TIMEOUT_MS });
      } else if (doc.source === 'file') {
        input = { kind: 'file', data: doc.inputData ?? Buffer.alloc(0), contentType: doc.contentType };
      } else {
        input = { kind: 'text', text: doc.inputText ?? '', contentType: doc.contentType as 'text/plain' | 'text/markdown' | 'text/csv' };
      }
      bytes = inputBytes(input);
      const extracted = await this.ingest.extractDocument(input, { maxCharacters: this.limits.maxDocumentCharacters });
      const chunks = this.ingest.chunkDocument(extracted);
      if (signal?.aborted) return 'retry';
      const vectors = await this.embed(doc.id, chunks, signal);
      if (signal?.aborted) return 'retry';
      const outcome = await this.repository.completeDocument(
        doc.id,
        { title: extracted.title || doc.url || '', characters: extracted.characters, bytes, chunks, contentType: inputContentType(input), vectors },
        this.limits.maxBaseChunks,
      );
      return outcome.status === 'gone' ? 'skipped' : outcome.status;
    } catch (error) {
      // Stopping, or the database away: the document stays `processing` and is taken up again (lease expiry).
      if (signal?.aborted || isDatabaseUnavailable(error)) return 'retry';
      const reason = isIngestError(error) ? error.message : 'The document could not be ingested (internal error).';
      if (!isIngestError(error)) log.error({ err: error, documentId }, 'ingesting a document failed');
      await this.repository.failDocument(doc.id, reason, bytes);
      return 'failed';
    }
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
