import { AppError } from '@parley/rpc';
import { IngestionQueue } from './ingestion-queue';
import { KnowledgeDomain } from './knowledge.domain';
import { KnowledgeRepository, SearchHitRecord } from './knowledge.repository';
import { textSearchConfig } from './language';

const limits = { maxDocumentBytes: 100, maxDocumentCharacters: 1000, maxBaseChunks: 10, maxBasesPerAccount: 2 };

function domain(repo: Partial<KnowledgeRepository> = {}) {
  const enqueued: string[] = [];
  const queue = { enqueue: (id: string) => enqueued.push(id) } as unknown as IngestionQueue;
  return { d: new KnowledgeDomain(repo as KnowledgeRepository, queue, limits), enqueued };
}

const problems = (p: Promise<unknown>) => p.then(() => undefined, (e: AppError) => ({ code: e.code, fields: e.errors?.map((x) => x.field) }));

const hit = (documentId: string, position: number, score: number, baseId = 'kb_a'): SearchHitRecord => ({
  documentId,
  baseId,
  title: '',
  heading: '',
  text: '',
  position,
  score,
});

describe('KnowledgeDomain', () => {
  it('maps languages to text-search configurations', () => {
    expect(['en', 'en-US', 'fr-CA', 'de', 'pt-BR', 'sv', 'zh', 'tlh'].map(textSearchConfig)).toEqual([
      'english',
      'english',
      'french',
      'german',
      'portuguese',
      'swedish',
      'simple',
      'simple',
    ]);
  });

  it('refuses documents without exactly one source, text without a title, bad URLs and text content types', async () => {
    const { d } = domain({ addDocument: jest.fn() });
    expect(await problems(d.addDocument('a', 'kb_x', { title: 't' }))).toEqual({ code: 'validation_error', fields: ['text'] });
    expect(await problems(d.addDocument('a', 'kb_x', { title: 't', text: { text: 'x' }, url: 'https://e.com' }))).toMatchObject({ fields: ['text'] });
    expect(await problems(d.addDocument('a', 'kb_x', { text: { text: 'x' } }))).toEqual({ code: 'validation_error', fields: ['title'] });
    expect(await problems(d.addDocument('a', 'kb_x', { url: 'ftp://e.com/x' }))).toEqual({ code: 'validation_error', fields: ['url'] });
    expect(await problems(d.addDocument('a', 'kb_x', { title: 't', text: { text: 'x', contentType: 'application/json' } }))).toEqual({
      code: 'validation_error',
      fields: ['content_type'],
    });
    expect(await problems(d.addDocument('a', 'kb_x', { file: { data: Buffer.alloc(101), contentType: 'application/pdf' } }))).toMatchObject({
      code: 'payload_too_large',
    });
  });

  it('takes a re-fetch interval of 1 to 720 whole hours for a URL document only; absent or null is never', async () => {
    const addDocument = jest.fn().mockResolvedValue({ id: 'doc_1' });
    const { d } = domain({ addDocument });
    const refused = (input: Parameters<KnowledgeDomain['addDocument']>[2]) => problems(d.addDocument('a', 'kb_x', input));
    const onField = { code: 'validation_error', fields: ['refresh_interval_hours'] };
    for (const hours of [0, 721, 1.5, -3]) expect(await refused({ url: 'https://e.com/', refreshIntervalHours: hours })).toEqual(onField);
    expect(await refused({ title: 't', text: { text: 'x' }, refreshIntervalHours: 24 })).toEqual(onField);
    expect(await refused({ file: { data: Buffer.from('x'), contentType: 'text/plain' }, refreshIntervalHours: 24 })).toEqual(onField);
    await expect(d.addDocument('a', 'kb_x', { title: 't', text: { text: 'x' }, refreshIntervalHours: 5 })).rejects.toMatchObject({
      errors: [{ field: 'refresh_interval_hours', message: 'only applies to url documents' }],
    });
    expect(addDocument).not.toHaveBeenCalled();
    for (const hours of [1, 720]) await d.addDocument('a', 'kb_x', { url: 'https://e.com/', refreshIntervalHours: hours });
    await d.addDocument('a', 'kb_x', { url: 'https://e.com/', refreshIntervalHours: null });
    await d.addDocument('a', 'kb_x', { title: 't', text: { text: 'x' }, refreshIntervalHours: null });
    expect(addDocument.mock.calls.map((c) => c[2].refreshIntervalHours)).toEqual([1, 720, undefined, undefined]);
  });

  it('queues a stored document and answers it at once; a missing base is not found', async () => {
    const stored = { id: 'doc_1', status: 'processing' };
    const { d, enqueued } = domain({ addDocument: jest.fn().mockResolvedValueOnce(stored).mockResolvedValueOnce(undefined) });
    expect(await d.addDocument('a', 'kb_x', { title: 't', text: { text: 'hello', contentType: 'text/markdown' } })).toBe(stored);
    expect(enqueued).toEqual(['doc_1']);
    expect(await problems(d.addDocument('a', 'kb_x', { url: 'https://example.com/' }))).toMatchObject({ code: 'not_found' });
  });

  it('validates a search, 404s one missing base, skips missing ones among several, and merges languages by score', async () => {
    const search = jest.fn(async (config: string) => (config === 'english' ? [hit('doc_b', 2, 0.5), hit('doc_a', 1, 0.9)] : [hit('doc_a', 0, 0.5, 'kb_f')]));
    const existing = jest.fn(async (_a: string, ids: string[]) =>
      ids.filter((id) => id !== 'kb_missing').map((id) => ({ id, config: id === 'kb_f' ? 'french' : 'english' })),
    );
    const { d } = domain({ existingBases: existing, search });
    expect(await problems(d.search('a', { baseIds: ['kb_a'], query: ' ', limit: 51, minScore: 2 }))).toEqual({
      code: 'validation_error',
      fields: ['query', 'limit', 'min_score'],
    });
    expect(await problems(d.search('a', { baseIds: ['kb_missing'], query: 'x' }))).toMatchObject({ code: 'not_found' });
    const hits = await d.search('a', { baseIds: ['kb_a', 'kb_f', 'kb_missing'], query: 'refund', limit: 2 });
    expect(hits.map((h) => [h.documentId, h.position, h.score])).toEqual([
      ['doc_a', 1, 0.9],
      ['doc_a', 0, 0.5],
    ]);
    expect(search).toHaveBeenCalledWith('english', { baseIds: ['kb_a'], query: 'refund', limit: 2, minScore: 0 });
    expect(search).toHaveBeenCalledWith('french', { baseIds: ['kb_f'], query: 'refund', limit: 2, minScore: 0 });
  });
});
