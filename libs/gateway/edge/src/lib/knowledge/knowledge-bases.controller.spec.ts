import 'reflect-metadata';
import { knowledgeV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { AppError } from '@parley/rpc';
import { Principal } from '../auth/api-keys.repository';
import { CursorCodec } from '../http/pagination';
import { BodyValidationPipe } from '../http/validation';
import { fakeRpcClient } from '../testing/fake-rpc-client';
import { gatewayOpenApiDocument } from '../testing/gateway-openapi';
import { KnowledgeBasesController } from './knowledge-bases.controller';
import { KnowledgeClient } from './knowledge.client';
import { DocumentInputDto } from './knowledge.dto';

type Service = knowledgeV1.KnowledgeServiceClient;

const base = (over: Partial<knowledgeV1.KnowledgeBase> = {}): knowledgeV1.KnowledgeBase => ({
  id: 'kb_1',
  account_id: 'acme',
  name: 'Help',
  description: '',
  language: 'en',
  metadata: {},
  document_count: 2,
  chunk_count: 7,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  ...over,
});

const doc = (over: Partial<knowledgeV1.Document> = {}): knowledgeV1.Document => ({
  id: 'doc_1',
  knowledge_base_id: 'kb_1',
  title: 'FAQ',
  source: 'text',
  url: '',
  content_type: 'text/markdown',
  status: 'processing',
  failure_reason: '',
  // int64 fields arrive as strings (proto-loader longs: String).
  characters: '0' as unknown as number,
  chunk_count: 0,
  bytes: '120' as unknown as number,
  metadata: {},
  refresh_interval_hours: 0,
  fetched_at: '',
  next_refresh_at: '',
  refresh_failure_reason: '',
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  ...over,
});

const who = { accountId: 'acme' } as Principal;
const cursors = new CursorCodec('unit-test-secret-key-0000000000000001');
const config = { KNOWLEDGE_MAX_DOCUMENT_BYTES: 1024 } as ServiceConfig;

function controller(answers: Partial<Record<keyof Service, unknown>>) {
  const { client, requests } = fakeRpcClient<Service, KnowledgeClient>(answers);
  return { c: new KnowledgeBasesController(client, cursors, config), requests };
}

const refusal = (p: Promise<unknown>) => p.then(() => undefined, (e: AppError) => ({ code: e.code, errors: e.errors }));

describe('KnowledgeBasesController', () => {
  it('creates a base with the defaults filled in and presents it', async () => {
    const { c, requests } = controller({ createBase: { base: base({ metadata: { team: 'a' } }) } });
    const res = await c.create(who, { name: 'Help', metadata: { team: 'a' } });
    expect(requests.createBase).toEqual({ account_id: 'acme', name: 'Help', description: '', language: '', metadata: { team: 'a' } });
    expect(res).toEqual({
      id: 'kb_1',
      object: 'knowledge_base',
      name: 'Help',
      description: '',
      language: 'en',
      metadata: { team: 'a' },
      document_count: 2,
      chunk_count: 7,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
    });
  });

  it('lists bases with a signed cursor bound to the list and account', async () => {
    const { c, requests } = controller({ listBases: { data: [base()], has_more: true, next: '2026-01-01T00:00:00.000Z|kb_1' } });
    const page = await c.list(who, { limit: '1' });
    expect(page).toMatchObject({ object: 'list', has_more: true, data: [{ id: 'kb_1' }] });
    expect(cursors.decode('knowledge_bases', 'acme', page.next_cursor!)).toBe('2026-01-01T00:00:00.000Z|kb_1');
    await c.list(who, { starting_after: page.next_cursor });
    expect(requests.listBases).toEqual({ account_id: 'acme', limit: 20, after: '2026-01-01T00:00:00.000Z|kb_1' });
    expect(() => cursors.decode('knowledge_bases', 'globex', page.next_cursor!)).toThrow();
  });

  it('adds a text document: 202 shape, processing, int64 sizes as numbers, no failure_reason or url', async () => {
    const { c, requests } = controller({ addDocument: { document: doc() } });
    const res = await c.addDocument(who, 'kb_1', { title: 'FAQ', text: '# FAQ', content_type: 'text/markdown', metadata: { v: '1' } });
    expect(requests.addDocument).toEqual({
      account_id: 'acme',
      knowledge_base_id: 'kb_1',
      title: 'FAQ',
      metadata: { v: '1' },
      text: { text: '# FAQ', content_type: 'text/markdown' },
      refresh_interval_hours: 0,
    });
    expect(res).toEqual({
      id: 'doc_1',
      object: 'knowledge_document',
      knowledge_base_id: 'kb_1',
      title: 'FAQ',
      source: 'text',
      content_type: 'text/markdown',
      status: 'processing',
      characters: 0,
      chunk_count: 0,
      bytes: 120,
      metadata: {},
      refresh_interval_hours: null,
      fetched_at: null,
      next_refresh_at: null,
      refresh_failure_reason: null,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
    });
  });

  it('adds a URL document with a re-fetch interval and presents when it was fetched, is due and why its last re-fetch failed', async () => {
    const refreshed = doc({
      source: 'url',
      url: 'https://example.com/help',
      status: 'ready',
      refresh_interval_hours: 24,
      fetched_at: '2026-01-02T00:00:00.000Z',
      next_refresh_at: '2026-01-03T00:00:00.000Z',
      refresh_failure_reason: 'the URL answered HTTP 503',
    });
    const { c, requests } = controller({ addDocument: { document: refreshed } });
    const res = await c.addDocument(who, 'kb_1', { url: 'https://example.com/help', refresh_interval_hours: 24 });
    expect(requests.addDocument).toEqual({ account_id: 'acme', knowledge_base_id: 'kb_1', title: '', metadata: {}, url: 'https://example.com/help', refresh_interval_hours: 24 });
    expect(res).toMatchObject({
      url: 'https://example.com/help',
      refresh_interval_hours: 24,
      fetched_at: '2026-01-02T00:00:00.000Z',
      next_refresh_at: '2026-01-03T00:00:00.000Z',
      refresh_failure_reason: 'the URL answered HTTP 503',
    });
    await c.addDocument(who, 'kb_1', { url: 'https://example.com/help', refresh_interval_hours: null });
    expect((requests.addDocument as knowledgeV1.AddDocumentRequest).refresh_interval_hours).toBe(0);
  });

  it('refuses a re-fetch interval (422 on refresh_interval_hours) with text or a file, out of 1-720 or not a whole number; null is never', async () => {
    const { c, requests } = controller({});
    const onInterval = { code: 'validation_error', errors: [{ field: 'refresh_interval_hours', message: 'only applies to url documents' }] };
    expect(await refusal(c.addDocument(who, 'kb_1', { title: 'x', text: 'a', refresh_interval_hours: 24 }))).toEqual(onInterval);
    expect(await refusal(c.addDocument(who, 'kb_1', { file: { data: 'eA==', content_type: 'text/plain' }, refresh_interval_hours: 1 }))).toEqual(onInterval);
    expect(requests.addDocument).toBeUndefined();
    const pipe = new BodyValidationPipe();
    const validated = (refresh_interval_hours: unknown) =>
      pipe.transform({ url: 'https://example.com/help', refresh_interval_hours }, { type: 'body', metatype: DocumentInputDto, data: undefined }).then(
        () => 'ok',
        (e: AppError) => ({ code: e.code, fields: e.errors?.map((x) => x.field) }),
      );
    for (const hours of [0, 721, 1.5, -1, '24', true]) expect(await validated(hours)).toEqual({ code: 'validation_error', fields: ['refresh_interval_hours'] });
    for (const hours of [1, 720, null, undefined]) expect(await validated(hours)).toBe('ok');
  });

  it('decodes a base64 file and sends its bytes; a failed document carries its reason', async () => {
    const { c, requests } = controller({ addDocument: { document: doc({ source: 'file', status: 'failed', failure_reason: 'not a PDF', title: '' }) } });
    const res = await c.addDocument(who, 'kb_1', { file: { data: Buffer.from('%PDF-1.7').toString('base64'), content_type: 'application/pdf' } });
    expect((requests.addDocument as knowledgeV1.AddDocumentRequest).file).toEqual({ data: Buffer.from('%PDF-1.7'), content_type: 'application/pdf' });
    expect(res).toMatchObject({ title: null, status: 'failed', failure_reason: 'not a PDF' });
  });

  it('refuses bodies without exactly one source, text without a title, bad base64 (422) and oversize documents (413)', async () => {
    const { c } = controller({});
    expect(await refusal(c.addDocument(who, 'kb_1', { title: 'x' }))).toMatchObject({ code: 'validation_error' });
    expect(await refusal(c.addDocument(who, 'kb_1', { title: 'x', text: 'a', url: 'https://example.com' }))).toMatchObject({
      code: 'validation_error',
      errors: [{ field: 'url', message: expect.any(String) }],
    });
    expect(await refusal(c.addDocument(who, 'kb_1', { text: 'a' }))).toMatchObject({ errors: [{ field: 'title' }] });
    expect(await refusal(c.addDocument(who, 'kb_1', { url: 'https://example.com', content_type: 'text/csv' }))).toMatchObject({ errors: [{ field: 'content_type' }] });
    expect(await refusal(c.addDocument(who, 'kb_1', { file: { data: 'not base64!', content_type: 'application/pdf' } }))).toMatchObject({
      errors: [{ field: 'file.data' }],
    });
    expect(await refusal(c.addDocument(who, 'kb_1', { title: 'big', text: 'x'.repeat(1025) }))).toMatchObject({ code: 'payload_too_large' });
    expect(await refusal(c.addDocument(who, 'kb_1', { file: { data: Buffer.alloc(1025).toString('base64'), content_type: 'application/pdf' } }))).toMatchObject({
      code: 'payload_too_large',
    });
  });

  it('lists documents with a status filter and refuses an unknown status', async () => {
    const { c, requests } = controller({ listDocuments: { data: [doc({ status: 'ready' })], has_more: false, next: '' } });
    const page = await c.listDocuments(who, 'kb_1', { status: 'ready' });
    expect(requests.listDocuments).toEqual({ account_id: 'acme', knowledge_base_id: 'kb_1', limit: 20, after: '', status: 'ready' });
    expect(page).toEqual({ object: 'list', data: [expect.objectContaining({ id: 'doc_1', status: 'ready' })], has_more: false });
    expect(await refusal(c.listDocuments(who, 'kb_1', { status: 'done' }))).toMatchObject({ code: 'invalid_request' });
  });

  it('deletes a document (404 at once for an id that cannot be one) and a base', async () => {
    const { c, requests } = controller({ deleteDocument: { id: 'doc_1', deleted: true }, deleteBase: { id: 'kb_1', deleted: true } });
    expect(await refusal(c.removeDocument(who, 'kb_1', 'nope'))).toMatchObject({ code: 'not_found' });
    expect(requests.deleteDocument).toBeUndefined();
    expect(await c.removeDocument(who, 'kb_1', 'doc_0123456789012345678901')).toEqual({ id: 'doc_1', object: 'knowledge_document', deleted: true });
    expect(await c.remove(who, 'kb_1')).toEqual({ id: 'kb_1', object: 'knowledge_base', deleted: true });
  });

  it('searches one base with the defaults and answers a list of knowledge_chunk', async () => {
    const hit = { document_id: 'doc_1', knowledge_base_id: 'kb_1', title: 'FAQ', heading: 'Refunds', text: 'Within 30 days.', score: 0.9, position: 3 };
    const { c, requests } = controller({ search: { hits: [hit] } });
    const res = await c.search(who, 'kb_1', { query: 'refund' });
    expect(requests.search).toEqual({ account_id: 'acme', knowledge_base_ids: ['kb_1'], query: 'refund', limit: 5, min_score: 0 });
    expect(res).toEqual({
      object: 'list',
      data: [{ object: 'knowledge_chunk', document_id: 'doc_1', title: 'FAQ', heading: 'Refunds', text: 'Within 30 days.', score: 0.9 }],
      has_more: false,
    });
  });

  it('publishes the eight routes in OpenAPI with their permissions, no 501, and examples', async () => {
    const document = await gatewayOpenApiDocument();
    const ops = {
      'get /v1/knowledge_bases': 'knowledge:read',
      'post /v1/knowledge_bases': 'knowledge:write',
      'get /v1/knowledge_bases/{id}': 'knowledge:read',
      'delete /v1/knowledge_bases/{id}': 'knowledge:write',
      'get /v1/knowledge_bases/{id}/documents': 'knowledge:read',
      'post /v1/knowledge_bases/{id}/documents': 'knowledge:write',
      'delete /v1/knowledge_bases/{id}/documents/{doc}': 'knowledge:write',
      'post /v1/knowledge_bases/{id}/search': 'knowledge:read',
    };
    for (const [key, permission] of Object.entries(ops)) {
      const [method, path] = key.split(' ');
      const op = (document.paths[path] as Record<string, { 'x-permission': string; responses: Record<string, unknown> }>)?.[method];
      expect({ key, permission: op?.['x-permission'], planned: op?.responses['501'] }).toEqual({ key, permission, planned: undefined });
    }
    const added = (document.paths['/v1/knowledge_bases/{id}/documents'] as Record<string, { responses: Record<string, unknown> }>).post;
    expect(added.responses['202']).toBeDefined();
    const schemas = document.components?.schemas as Record<string, { properties: Record<string, { example?: unknown }> }>;
    expect(schemas['KnowledgeBaseDto'].properties['id'].example).toMatch(/^kb_/);
    expect(schemas['DocumentDto'].properties['id'].example).toMatch(/^doc_/);
    const nullable = { type: expect.arrayContaining(['null']), example: expect.anything(), description: expect.any(String) };
    for (const field of ['refresh_interval_hours', 'fetched_at', 'next_refresh_at', 'refresh_failure_reason']) {
      expect({ field, schema: schemas['DocumentDto'].properties[field] }).toEqual({ field, schema: expect.objectContaining(nullable) });
    }
    expect(schemas['DocumentInputDto'].properties['refresh_interval_hours']).toMatchObject({ ...nullable, type: ['integer', 'null'], minimum: 1, maximum: 720 });
    expect(schemas['KnowledgeChunkDto'].properties['score'].example).toBeDefined();
  });
});
