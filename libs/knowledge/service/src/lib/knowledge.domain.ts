import { Inject, Injectable, Optional } from '@nestjs/common';
import { FieldProblem } from '@parley/contracts';
import { Page } from '@parley/persistence';
import { serviceLogger } from '@parley/observability';
import { AppError } from '@parley/rpc';
import { dot, KNOWLEDGE_EMBEDDINGS, KnowledgeEmbeddings, LEXICAL_WEIGHT, RERANK_CANDIDATES } from './embeddings';
import { IngestionQueue } from './ingestion-queue';
import {
  BaseRecord,
  DocumentRecord,
  DocumentSource,
  DocumentStatus,
  KnowledgeRepository,
  NearHit,
  NewDocument,
  SearchHitRecord,
} from './knowledge.repository';
import { DEFAULT_LANGUAGE, LANGUAGE_TAG, textSearchConfig } from './language';
import { KNOWLEDGE_LIMITS, KnowledgeLimits } from './limits';
import { knowledgeRerankTotal, knowledgeVectorCandidatesTotal } from './metrics';

const log = serviceLogger('knowledge');

export const NAME_MAX = 200;
export const DESCRIPTION_MAX = 2000;
export const TITLE_MAX = 500;
export const URL_MAX = 2000;
export const QUERY_MAX = 1000;
export const SEARCH_LIMIT_MAX = 50;
export const SEARCH_LIMIT_DEFAULT = 5;
export const TEXT_CONTENT_TYPES = ['text/plain', 'text/markdown', 'text/csv'] as const;
export const DOCUMENT_STATUSES: DocumentStatus[] = ['processing', 'ready', 'failed'];
/** A URL document's re-fetch interval, in hours: hourly to every 30 days. */
export const REFRESH_INTERVAL_MIN_HOURS = 1;
export const REFRESH_INTERVAL_MAX_HOURS = 720;
/** Bases one in-call search may name. */
export const SEARCH_BASES_MAX = 20;

export interface BaseInput {
  name: string;
  description?: string;
  language?: string;
  metadata?: Record<string, string>;
}

export interface DocumentInputFields {
  title?: string;
  metadata?: Record<string, string>;
  text?: { text: string; contentType?: string };
  url?: string;
  file?: { data: Buffer; contentType: string };
  /** URL documents only: re-fetched every so many hours; absent or null: never. */
  refreshIntervalHours?: number | null;
}

export interface SearchInput {
  baseIds: string[];
  query: string;
  limit?: number;
  minScore?: number;
}

/**
 * Knowledge bases: their rules and limits. SQL lives in the repository; ingestion is handed to the queue.
 */
@Injectable()
export class KnowledgeDomain {
  constructor(
    private readonly repository: KnowledgeRepository,
    private readonly queue: IngestionQueue,
    @Inject(KNOWLEDGE_LIMITS) private readonly limits: KnowledgeLimits,
    @Optional() @Inject(KNOWLEDGE_EMBEDDINGS) private readonly embeddings: KnowledgeEmbeddings | null = null,
  ) {}

  async createBase(accountId: string, input: BaseInput): Promise<BaseRecord> {
    const problems: FieldProblem[] = [];
    const name = (input.name ?? '').trim();
    if (!name || name.length > NAME_MAX) problems.push({ field: 'name', message: `must be between 1 and ${NAME_MAX} characters long` });
    if ((input.description ?? '').length > DESCRIPTION_MAX) problems.push({ field: 'description', message: `must be at most ${DESCRIPTION_MAX} characters long` });
    const language = input.language || DEFAULT_LANGUAGE;
    if (!LANGUAGE_TAG.test(language)) problems.push({ field: 'language', message: 'must be a BCP-47 language tag such as en or fr-CA' });
    if (problems.length) throw AppError.validation(problems);
    const config = await this.repository.resolveConfig(textSearchConfig(language));
    const base = await this.repository.createBase(
      accountId,
      { name, description: input.description ?? '', language, config, metadata: input.metadata ?? {} },
      this.limits.maxBasesPerAccount,
    );
    if (!base) {
      throw new AppError('validation_error', `The account has ${this.limits.maxBasesPerAccount} knowledge bases, its limit; delete one first.`, [
        { field: 'name', message: `cannot be added: the account has reached its limit of ${this.limits.maxBasesPerAccount} knowledge bases` },
      ]);
    }
    return base;
  }

  async getBase(accountId: string, id: string): Promise<BaseRecord> {
    const base = await this.repository.getBase(accountId, id);
    if (!base) throw AppError.notFound('knowledge base');
    return base;
  }

  listBases(accountId: string, limit: number, after: string): Promise<Page<BaseRecord>> {
    return this.repository.listBases(accountId, limit, after);
  }

  async deleteBase(accountId: string, id: string): Promise<void> {
    if (!(await this.repository.deleteBase(accountId, id))) throw AppError.notFound('knowledge base');
  }

  /**
   * Which of `ids` name knowledge bases of this account: what an agent (in the same deployable) may reference. A
   * malformed id or another account's base is left out, as a missing one.
   */
  async existingBases(accountId: string, ids: string[]): Promise<Set<string>> {
    const wanted = [...new Set(ids)];
    if (!wanted.length) return new Set();
    return new Set((await this.repository.existingBases(accountId, wanted)).map((b) => b.id));
  }

  /** Stores the document `processing` and queues its ingestion; answers at once. */
  async addDocument(accountId: string, baseId: string, input: DocumentInputFields): Promise<DocumentRecord> {
    const doc = this.newDocument(input);
    if (doc.bytes > this.limits.maxDocumentBytes) {
      throw new AppError('payload_too_large', `The document is ${doc.bytes} bytes, over the limit of ${this.limits.maxDocumentBytes}.`);
    }
    const stored = await this.repository.addDocument(accountId, baseId, doc);
    if (!stored) throw AppError.notFound('knowledge base');
    this.queue.enqueue(stored.id);
    return stored;
  }

  private newDocument(input: DocumentInputFields): NewDocument {
    const problems: FieldProblem[] = [];
    const given = [input.text && 'text', input.url !== undefined && 'url', input.file && 'file'].filter(Boolean) as DocumentSource[];
    if (given.length !== 1) {
      throw AppError.validation([{ field: 'text', message: 'exactly one of text, url or file must be given' }]);
    }
    const title = (input.title ?? '').trim();
    if (title.length > TITLE_MAX) problems.push({ field: 'title', message: `must be at most ${TITLE_MAX} characters long` });
    const metadata = input.metadata ?? {};
    const source = given[0];
    let doc: NewDocument;
    if (source === 'text') {
      const text = input.text!;
      const contentType = text.contentType || 'text/plain';
      if (!title) problems.push({ field: 'title', message: 'is required for a text document' });
      if (!text.text) problems.push({ field: 'text', message: 'must not be empty' });
      if (!(TEXT_CONTENT_TYPES as readonly string[]).includes(contentType)) {
        problems.push({ field: 'content_type', message: `must be one of ${TEXT_CONTENT_TYPES.join(', ')}` });
      }
      doc = { title, source, contentType, bytes: Buffer.byteLength(text.text ?? ''), metadata, inputText: text.text };
    } else if (source === 'url') {
      const url = input.url ?? '';
      let ok = false;
      try {
        ok = ['http:', 'https:'].includes(new URL(url).protocol) && url.length <= URL_MAX;
      } catch {
        ok = false;
      }
      if (!ok) problems.push({ field: 'url', message: `must be an absolute http(s) URL of at most ${URL_MAX} characters` });
      doc = { title, source, url, contentType: '', bytes: 0, metadata, refreshIntervalHours: input.refreshIntervalHours ?? undefined };
    } else {
      const file = input.file!;
      if (!file.contentType) problems.push({ field: 'file.content_type', message: 'is required' });
      if (!file.data?.length) problems.push({ field: 'file.data', message: 'must not be empty' });
      doc = { title, source, contentType: (file.contentType ?? '').toLowerCase(), bytes: file.data?.length ?? 0, metadata, inputData: file.data };
    }
    const interval = input.refreshIntervalHours;
    if (interval !== undefined && interval !== null) {
      if (source !== 'url') problems.push({ field: 'refresh_interval_hours', message: 'only applies to url documents' });
      else if (!Number.isInteger(interval) || interval < REFRESH_INTERVAL_MIN_HOURS || interval > REFRESH_INTERVAL_MAX_HOURS) {
        problems.push({ field: 'refresh_interval_hours', message: `must be an integer from ${REFRESH_INTERVAL_MIN_HOURS} to ${REFRESH_INTERVAL_MAX_HOURS}` });
      }
    }
    if (problems.length) throw AppError.validation(problems);
    return doc;
  }

  async listDocuments(accountId: string, baseId: string, limit: number, after: string, status?: string): Promise<Page<DocumentRecord>> {
    if (status && !DOCUMENT_STATUSES.includes(status as DocumentStatus)) {
      throw new AppError('invalid_request', `status must be one of ${DOCUMENT_STATUSES.join(', ')}.`);
    }
    const page = await this.repository.listDocuments(accountId, baseId, limit, after, (status || undefined) as DocumentStatus | undefined);
    if (!page) throw AppError.notFound('knowledge base');
    return page;
  }

  async deleteDocument(accountId: string, baseId: string, id: string): Promise<void> {
    if (!(await this.repository.deleteDocument(accountId, baseId, id))) throw AppError.notFound('document');
  }

  /**
   * One base (the public route): not_found when the account has no such base. Several (the in-call path): only
   * those the account has are searched. Bases of different languages are searched each under its own
   * configuration and their hits merged by score.
   */
  async search(accountId: string, input: SearchInput): Promise<SearchHitRecord[]> {
    const problems: FieldProblem[] = [];
    const query = (input.query ?? '').trim();
    if (!query || query.length > QUERY_MAX) problems.push({ field: 'query', message: `must be between 1 and ${QUERY_MAX} characters long` });
    const limit = input.limit || SEARCH_LIMIT_DEFAULT;
    if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_LIMIT_MAX) problems.push({ field: 'limit', message: `must be an integer from 1 to ${SEARCH_LIMIT_MAX}` });
    const minScore = input.minScore ?? 0;
    if (!(minScore >= 0 && minScore <= 1)) problems.push({ field: 'min_score', message: 'must be a number from 0 to 1' });
    const ids = [...new Set(input.baseIds)];
    if (!ids.length || ids.length > SEARCH_BASES_MAX) problems.push({ field: 'knowledge_base_ids', message: `must name 1 to ${SEARCH_BASES_MAX} bases` });
    if (problems.length) throw AppError.validation(problems);

    const bases = await this.repository.existingBases(accountId, ids);
    if (ids.length === 1 && !bases.length) throw AppError.notFound('knowledge base');
    const byConfig = new Map<string, string[]>();
    for (const b of bases) byConfig.set(b.config, [...(byConfig.get(b.config) ?? []), b.id]);
    if (!byConfig.size) return [];
    // With embeddings, the query's vector is asked for at once, alongside the lexical statements, and the best
    // RERANK_CANDIDATES lexical hits (min_score not applied yet: it applies to the final score) are reranked; where the
    // database has pgvector, the chunks nearest to the query's vector join them as candidates once it arrives.
    const queryVector = this.embeddings?.queryVector(query);
    const candidates = queryVector ? Math.max(limit, RERANK_CANDIDATES) : limit;
    const [groups, nearest] = await Promise.all([
      Promise.all(
        [...byConfig].map(([config, baseIds]) => this.repository.search(config, { baseIds, query, limit: candidates, minScore: queryVector ? 0 : minScore })),
      ),
      queryVector && this.nearest(bases.map((b) => b.id), queryVector, candidates),
    ]);
    let hits = groups.flat();
    if (queryVector && this.embeddings && (hits.length || nearest?.length)) hits = await this.rerank(hits, nearest ?? [], await queryVector, this.embeddings.model);
    return hits
      .filter((h) => h.score >= minScore)
      .sort(byScore)
      .slice(0, limit);
  }

  /** The chunks nearest to the query's vector (pgvector's index), or undefined: no vector, no index, a failure. */
  private async nearest(baseIds: string[], queryVector: Promise<number[] | undefined>, limit: number): Promise<NearHit[] | undefined> {
    const vector = await queryVector;
    if (!vector || !this.embeddings) return undefined;
    try {
      const near = await this.repository.nearestChunks(baseIds, this.embeddings.model, vector, limit);
      if ('hits' in near) knowledgeVectorCandidatesTotal.inc({ outcome: 'searched' });
      else if (near.missing === 'index') knowledgeVectorCandidatesTotal.inc({ outcome: 'unindexed' });
      return 'hits' in near ? near.hits : undefined;
    } catch (error) {
      knowledgeVectorCandidatesTotal.inc({ outcome: 'failed' });
      log.warn({ err: error }, 'searching the nearest chunks failed; the lexical candidates are reranked alone');
      return undefined;
    }
  }

  /**
   * The lexical candidates and the nearest chunks, each chunk once: LEXICAL_WEIGHT × lexical (0 for a chunk only the
   * vector index found) + (1 − LEXICAL_WEIGHT) × max(0, cosine), rounded to 4 decimals; a lexical candidate without a
   * vector of the model keeps its lexical score. No query vector (late, failed): the lexical candidates as they are.
   */
  private async rerank(hits: SearchHitRecord[], nearest: NearHit[], query: number[] | undefined, model: string): Promise<SearchHitRecord[]> {
    if (!query) return hits;
    const near = new Map(nearest.map((h) => [h.chunkId, h]));
    const vectors = await this.repository.chunkVectors(
      hits.flatMap((h) => (h.chunkId && !near.has(h.chunkId) ? [h.chunkId] : [])),
      model,
    );
    let reranked = 0;
    const score = (lexical: number, cosine: number) => Math.round((LEXICAL_WEIGHT * lexical + (1 - LEXICAL_WEIGHT) * Math.max(0, Math.min(1, cosine))) * 1e4) / 1e4;
    const out = hits.map((h) => {
      const found = h.chunkId ? near.get(h.chunkId) : undefined;
      if (found) near.delete(h.chunkId!);
      const vector = h.chunkId ? vectors.get(h.chunkId) : undefined;
      const cosine = found ? found.cosine : vector ? dot(query, vector) : undefined;
      if (cosine === undefined) return h;
      reranked++;
      return { ...h, score: score(h.score, cosine) };
    });
    for (const { cosine, ...h } of near.values()) {
      reranked++;
      out.push({ ...h, score: score(0, cosine) });
    }
    knowledgeRerankTotal.inc({ outcome: reranked ? 'reranked' : 'unembedded' });
    return out;
  }
}

/** Best first; ties by document id, then position (deterministic). */
function byScore(a: SearchHitRecord, b: SearchHitRecord): number {
  return b.score - a.score || (a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : a.position - b.position);
}
