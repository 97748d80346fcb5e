import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiOkResponse, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { FieldProblem, knowledgeV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { isWellFormedId } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { NoBody } from '../http/no-body';
import { Operation } from '../http/operation';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import { ResourceId } from '../http/resource-id';
import {
  DeletedDocumentDto,
  DeletedKnowledgeBaseDto,
  DOCUMENT_STATUSES,
  DocumentDto,
  DocumentInputDto,
  DocumentListDto,
  KnowledgeBaseDto,
  KnowledgeBaseInputDto,
  KnowledgeBaseListDto,
  KnowledgeChunkDto,
  SearchInputDto,
  SearchResultListDto,
} from './knowledge.dto';
import { KnowledgeClient } from './knowledge.client';

/** The route whose body may carry a whole document (its own body limit, see http/setup). */
export const DOCUMENTS_ROUTE = '/v1/knowledge_bases/:id/documents';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function presentBase(b: knowledgeV1.KnowledgeBase | undefined): KnowledgeBaseDto {
  if (!b) throw new Error('knowledge service answered without a base');
  return {
    id: b.id,
    object: 'knowledge_base',
    name: b.name,
    description: b.description,
    language: b.language,
    metadata: b.metadata ?? {},
    document_count: Number(b.document_count),
    chunk_count: Number(b.chunk_count),
    created_at: b.created_at,
    updated_at: b.updated_at,
  };
}

export function presentDocument(d: knowledgeV1.Document | undefined): DocumentDto {
  if (!d) throw new Error('knowledge service answered without a document');
  return {
    id: d.id,
    object: 'knowledge_document',
    knowledge_base_id: d.knowledge_base_id,
    title: d.title || null,
    source: d.source,
    ...(d.url ? { url: d.url } : {}),
    content_type: d.content_type || null,
    status: d.status,
    ...(d.status === 'failed' ? { failure_reason: d.failure_reason } : {}),
    characters: Number(d.characters),
    chunk_count: Number(d.chunk_count),
    bytes: Number(d.bytes),
    metadata: d.metadata ?? {},
    // proto3 has no null: 0 and empty strings are none.
    refresh_interval_hours: d.refresh_interval_hours || null,
    fetched_at: d.fetched_at || null,
    next_refresh_at: d.next_refresh_at || null,
    refresh_failure_reason: d.refresh_failure_reason || null,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

const DOC_PARAM = ApiParam({ name: 'doc', required: true, schema: { type: 'string' }, description: 'The document (doc_…).' });

@ApiTags('Knowledge bases')
@ResourceId('kb', 'knowledge base')
@Controller('v1/knowledge_bases')
export class KnowledgeBasesController {
  constructor(
    private readonly knowledge: KnowledgeClient,
    private readonly cursors: CursorCodec,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {}

  @Get()
  @Operation({ summary: 'List knowledge bases, newest first', permission: 'knowledge:read', list: true })
  @ApiOkResponse({ type: KnowledgeBaseListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<KnowledgeBaseDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('knowledge_bases', who.accountId, c));
    const page = await this.knowledge.call('listBases', (s, md) => s.listBases({ account_id: who.accountId, limit, after }, md));
    return {
      object: 'list',
      data: page.data.map(presentBase),
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode('knowledge_bases', who.accountId, page.next) } : {}),
    };
  }

  @Post()
  @Operation({
    summary: 'Create a knowledge base',
    description: 'An account holds at most KNOWLEDGE_MAX_BASES_PER_ACCOUNT bases (100 by default); one more answers 422 `validation_error`.',
    permission: 'knowledge:write',
    idempotent: true,
    problems: ['validation_error', 'payload_too_large', 'unsupported_media_type', 'idempotency_conflict'],
  })
  @ApiCreatedResponse({ type: KnowledgeBaseDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: KnowledgeBaseInputDto): Promise<KnowledgeBaseDto> {
    const res = await this.knowledge.call('createBase', (s, md) =>
      s.createBase(
        { account_id: who.accountId, name: body.name, description: body.description ?? '', language: body.language ?? '', metadata: body.metadata ?? {} },
        md,
      ),
    );
    return presentBase(res.base);
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve a knowledge base', permission: 'knowledge:read', problems: ['not_found'] })
  @ApiOkResponse({ type: KnowledgeBaseDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<KnowledgeBaseDto> {
    const res = await this.knowledge.call('getBase', (s, md) => s.getBase({ account_id: who.accountId, id }, md));
    return presentBase(res.base);
  }

  @Delete(':id')
  @HttpCode(200)
  @Operation({
    summary: 'Delete a knowledge base and everything in it',
    description: 'Its documents and their chunks go with it, in one transaction.',
    permission: 'knowledge:write',
    problems: ['not_found'],
  })
  @ApiOkResponse({ type: DeletedKnowledgeBaseDto })
  @NoBody()
  async remove(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedKnowledgeBaseDto> {
    const res = await this.knowledge.call('deleteBase', (s, md) => s.deleteBase({ account_id: who.accountId, id }, md));
    return { id: res.id, object: 'knowledge_base', deleted: true };
  }

  @Get(':id/documents')
  @Operation({ summary: "List a knowledge base's documents, newest first", permission: 'knowledge:read', list: true, query: ['status'], problems: ['not_found'] })
  @ApiQuery({ name: 'status', required: false, schema: { type: 'string', enum: [...DOCUMENT_STATUSES] }, description: 'Only documents in this status.' })
  @ApiOkResponse({ type: DocumentListDto })
  async listDocuments(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>): Promise<ListEnvelope<DocumentDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode(`knowledge_documents:${id}`, who.accountId, c));
    const status = query['status'] === undefined ? '' : String(query['status']);
    if (status && !(DOCUMENT_STATUSES as readonly string[]).includes(status)) {
      throw new AppError('invalid_request', `status must be one of ${DOCUMENT_STATUSES.join(', ')}.`);
    }
    const page = await this.knowledge.call('listDocuments', (s, md) =>
      s.listDocuments({ account_id: who.accountId, knowledge_base_id: id, limit, after, status }, md),
    );
    return {
      object: 'list',
      data: page.data.map(presentDocument),
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode(`knowledge_documents:${id}`, who.accountId, page.next) } : {}),
    };
  }

  @Post(':id/documents')
  @HttpCode(202)
  @Operation({
    summary: 'Add a document (ingested in the background)',
    description:
      'Give exactly one of `text` (with `title`), `url` or `file` (base64). Answers 202 at once with the document ' +
      '`processing`; poll it in the list until `ready` (searchable) or `failed` (with `failure_reason`). A document of ' +
      'more than KNOWLEDGE_MAX_DOCUMENT_BYTES (10 MB by default; a file counted once decoded) answers 413 ' +
      '`payload_too_large`; one yielding more than KNOWLEDGE_MAX_DOCUMENT_CHARACTERS of text, or that would take the ' +
      'base past KNOWLEDGE_MAX_BASE_CHUNKS chunks, fails with the reason and stores nothing. A `url` document with ' +
      '`refresh_interval_hours` is fetched again at that pace, its chunks replaced when the page changed.',
    permission: 'knowledge:write',
    idempotent: true,
    problems: ['not_found', 'validation_error', 'payload_too_large', 'unsupported_media_type', 'idempotency_conflict'],
  })
  @ApiAcceptedResponse({ type: DocumentDto, description: 'Stored and `processing`.' })
  async addDocument(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: DocumentInputDto): Promise<DocumentDto> {
    const given = (['text', 'url', 'file'] as const).filter((k) => body[k] !== undefined);
    const problems: FieldProblem[] = [];
    if (given.length !== 1) problems.push({ field: given[1] ?? 'text', message: 'exactly one of text, url or file must be given' });
    if (body.text !== undefined && body.title === undefined) problems.push({ field: 'title', message: 'is required with text' });
    if (body.content_type !== undefined && body.text === undefined) problems.push({ field: 'content_type', message: 'is only read with text' });
    const interval = body.refresh_interval_hours ?? undefined;
    if (interval !== undefined && body.url === undefined) problems.push({ field: 'refresh_interval_hours', message: 'only applies to url documents' });
    if (body.file && !BASE64.test(body.file.data)) problems.push({ field: 'file.data', message: 'must be base64' });
    if (problems.length) throw AppError.validation(problems);
    const max = this.config.KNOWLEDGE_MAX_DOCUMENT_BYTES;
    const data = body.file ? Buffer.from(body.file.data, 'base64') : undefined;
    const bytes = data ? data.length : body.text !== undefined ? Buffer.byteLength(body.text) : 0;
    if (bytes > max) throw new AppError('payload_too_large', `The document is ${bytes} bytes, over the limit of ${max}.`);
    const res = await this.knowledge.call('addDocument', (s, md) =>
      s.addDocument(
        {
          account_id: who.accountId,
          knowledge_base_id: id,
          title: body.title ?? '',
          metadata: body.metadata ?? {},
          ...(body.text !== undefined ? { text: { text: body.text, content_type: body.content_type ?? 'text/plain' } } : {}),
          ...(body.url !== undefined ? { url: body.url } : {}),
          ...(body.file && data ? { file: { data, content_type: body.file.content_type } } : {}),
          refresh_interval_hours: interval ?? 0,
        },
        md,
      ),
    );
    return presentDocument(res.document);
  }

  @Delete(':id/documents/:doc')
  @HttpCode(200)
  @Operation({ summary: 'Delete a document and its chunks', permission: 'knowledge:write', problems: ['not_found'] })
  @DOC_PARAM
  @ApiOkResponse({ type: DeletedDocumentDto })
  @NoBody()
  async removeDocument(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Param('doc') doc: string): Promise<DeletedDocumentDto> {
    if (!isWellFormedId('doc', doc)) throw AppError.notFound('document');
    const res = await this.knowledge.call('deleteDocument', (s, md) => s.deleteDocument({ account_id: who.accountId, knowledge_base_id: id, id: doc }, md));
    return { id: res.id, object: 'knowledge_document', deleted: true };
  }

  @Post(':id/search')
  @HttpCode(200)
  @Operation({
    summary: 'Search a knowledge base',
    description:
      'Lexical search: a chunk matches on any of the query\'s terms (stemmed by the base\'s language; a misspelt word ' +
      'still matches by trigram similarity) and ranks by how many of them it holds, then how densely. Best first; ' +
      'ties in document and position order.',
    permission: 'knowledge:read',
    problems: ['not_found', 'validation_error', 'unsupported_media_type'],
  })
  @ApiOkResponse({ type: SearchResultListDto })
  async search(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: SearchInputDto): Promise<SearchResultListDto> {
    const res = await this.knowledge.call('search', (s, md) =>
      s.search({ account_id: who.accountId, knowledge_base_ids: [id], query: body.query, limit: body.limit ?? 5, min_score: body.min_score ?? 0 }, md),
    );
    const data: KnowledgeChunkDto[] = res.hits.map((h) => ({
      object: 'knowledge_chunk',
      document_id: h.document_id,
      title: h.title,
      heading: h.heading,
      text: h.text,
      score: h.score,
    }));
    return { object: 'list', data, has_more: false };
  }
}
