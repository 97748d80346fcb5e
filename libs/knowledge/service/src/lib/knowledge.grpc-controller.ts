import { Controller } from '@nestjs/common';
import { knowledgeV1 } from '@parley/contracts';
import { pageLimit } from '@parley/rpc';
import { KnowledgeDomain } from './knowledge.domain';
import { BaseRecord, DocumentRecord } from './knowledge.repository';

const { KnowledgeServiceControllerMethods } = knowledgeV1;

export function toBase(b: BaseRecord): knowledgeV1.KnowledgeBase {
  return {
    id: b.id,
    account_id: b.accountId,
    name: b.name,
    description: b.description,
    language: b.language,
    metadata: b.metadata,
    document_count: b.documentCount,
    chunk_count: b.chunkCount,
    created_at: b.createdAt.toISOString(),
    updated_at: b.updatedAt.toISOString(),
  };
}

export function toDocument(d: DocumentRecord): knowledgeV1.Document {
  return {
    id: d.id,
    knowledge_base_id: d.baseId,
    title: d.title,
    source: d.source,
    url: d.url ?? '',
    content_type: d.contentType,
    status: d.status,
    failure_reason: d.failureReason ?? '',
    characters: d.characters,
    chunk_count: d.chunkCount,
    bytes: d.bytes,
    metadata: d.metadata,
    refresh_interval_hours: d.refreshIntervalHours ?? 0,
    fetched_at: d.fetchedAt?.toISOString() ?? '',
    next_refresh_at: d.nextRefreshAt?.toISOString() ?? '',
    refresh_failure_reason: d.refreshFailureReason ?? '',
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
  };
}

@Controller()
@KnowledgeServiceControllerMethods()
export class KnowledgeGrpcController implements knowledgeV1.KnowledgeServiceController {
  constructor(private readonly domain: KnowledgeDomain) {}

  async createBase(req: knowledgeV1.CreateBaseRequest): Promise<knowledgeV1.CreateBaseResponse> {
    const base = await this.domain.createBase(req.account_id, { name: req.name, description: req.description, language: req.language, metadata: req.metadata });
    return { base: toBase(base) };
  }

  async listBases(req: knowledgeV1.ListBasesRequest): Promise<knowledgeV1.ListBasesResponse> {
    const page = await this.domain.listBases(req.account_id, pageLimit(req.limit), req.after);
    return { data: page.items.map(toBase), has_more: page.hasMore, next: page.next };
  }

  async getBase(req: knowledgeV1.GetBaseRequest): Promise<knowledgeV1.GetBaseResponse> {
    return { base: toBase(await this.domain.getBase(req.account_id, req.id)) };
  }

  async deleteBase(req: knowledgeV1.DeleteBaseRequest): Promise<knowledgeV1.DeleteBaseResponse> {
    await this.domain.deleteBase(req.account_id, req.id);
    return { id: req.id, deleted: true };
  }

  async addDocument(req: knowledgeV1.AddDocumentRequest): Promise<knowledgeV1.AddDocumentResponse> {
    const doc = await this.domain.addDocument(req.account_id, req.knowledge_base_id, {
      title: req.title,
      metadata: req.metadata,
      ...(req.text ? { text: { text: req.text.text, contentType: req.text.content_type } } : {}),
      ...(req.url !== undefined && req.url !== null ? { url: req.url } : {}),
      ...(req.file ? { file: { data: Buffer.from(req.file.data), contentType: req.file.content_type } } : {}),
      // 0 means never (proto3's default).
      refreshIntervalHours: req.refresh_interval_hours || null,
    });
    return { document: toDocument(doc) };
  }

  async listDocuments(req: knowledgeV1.ListDocumentsRequest): Promise<knowledgeV1.ListDocumentsResponse> {
    const page = await this.domain.listDocuments(req.account_id, req.knowledge_base_id, pageLimit(req.limit), req.after, req.status);
    return { data: page.items.map(toDocument), has_more: page.hasMore, next: page.next };
  }

  async deleteDocument(req: knowledgeV1.DeleteDocumentRequest): Promise<knowledgeV1.DeleteDocumentResponse> {
    await this.domain.deleteDocument(req.account_id, req.knowledge_base_id, req.id);
    return { id: req.id, deleted: true };
  }

  async search(req: knowledgeV1.SearchRequest): Promise<knowledgeV1.SearchResponse> {
    const hits = await this.domain.search(req.account_id, { baseIds: req.knowledge_base_ids, query: req.query, limit: req.limit, minScore: req.min_score });
    return {
      hits: hits.map((h) => ({
        document_id: h.documentId,
        knowledge_base_id: h.baseId,
        title: h.title,
        heading: h.heading,
        text: h.text,
        score: h.score,
        position: h.position,
      })),
    };
  }
}
