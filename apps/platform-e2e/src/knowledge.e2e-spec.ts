import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { ApiClient, eventually, RunningPlatform } from '@parley/testing';

const OWNER = 'vsk_know_owner_key_0000000001';
const STRANGER = 'vsk_know_stranger_key_000001';

const PAGE = `<!doctype html><html><head><title>Gift cards | Example Shop</title></head><body>
<nav><a href="/">Home</a> <a href="/help">Help</a></nav>
<article><h1>Gift cards</h1>
<p>Gift cards never expire and can be spent on anything in the shop, online or in a store.</p>
<h2>Lost gift cards</h2>
<p>A lost gift card can be blocked and replaced by our support team if you still have the purchase receipt.</p>
</article><footer>© Example Shop</footer></body></html>`;

const HANDBOOK = `# Customer handbook

## Refund policy
You can return any item within 30 days of delivery for a full refund. Refunds are paid to the original card within
five business days of the parcel reaching our warehouse.

## Shipping
Standard shipping is free on orders over 50 euros. Express delivery costs 9 euros and arrives the next business day.

## Warranty
Every appliance carries a two-year warranty covering manufacturing defects. Damage from misuse is not covered.
`;

// Standalone (one process), and distributed: the gateway reaches KnowledgeService on the agents process's gRPC port.
// Distributed needs a NATS server: without NATS_URL (the README's `npm test` on a bare machine) only standalone runs.
const MODES = process.env['NATS_URL'] ? (['standalone', 'distributed'] as const) : (['standalone'] as const);
describe.each(MODES)('knowledge bases on the running platform (%s)', (mode) => {
  let platform: RunningPlatform;
  let owner: ApiClient;
  let stranger: ApiClient;
  let site: Server;
  let siteUrl: string;

  beforeAll(async () => {
    // A web page the platform may fetch: the outbound guard lets http through to a host EGRESS_ALLOWLIST names.
    site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/help/gift-cards`;
    platform = await RunningPlatform.start({
      mode,
      bootstrapKeys: [`acme:owner:${OWNER}`, `umbrella:owner:${STRANGER}`],
      env: { KNOWLEDGE_MAX_DOCUMENT_BYTES: '2000000', EGRESS_ALLOWLIST: '127.0.0.1' },
    });
    owner = platform.api(OWNER);
    stranger = platform.api(STRANGER);
  });

  afterAll(async () => {
    await platform?.stop();
    site?.close();
  });

  it('ingests a web page by URL (the article, its title) and refuses an address the outbound guard does not allow', async () => {
    const kb = (await owner.post('/v1/knowledge_bases', { name: 'Web' })).body.id as string;
    const page = await owner.post(`/v1/knowledge_bases/${kb}/documents`, { url: siteUrl });
    expect(page.status).toBe(202);
    expect(page.body).toMatchObject({ source: 'url', url: siteUrl, status: 'processing', title: null });
    const blocked = await owner.post(`/v1/knowledge_bases/${kb}/documents`, { url: 'http://10.1.2.3/private' });
    const settled = async (id: string, status: string) =>
      eventually(
        async () => (await owner.get(`/v1/knowledge_bases/${kb}/documents?status=${status}`)).body.data.find((d: { id: string }) => d.id === id),
        20_000,
        `document ${id} ${status}`,
      );
    const ready = await settled(page.body.id, 'ready');
    expect(ready.title).toMatch(/Gift cards/);
    expect(ready.content_type).toBe('text/html');
    expect(ready.bytes).toBe(Buffer.byteLength(PAGE));
    expect((await settled(blocked.body.id, 'failed')).failure_reason).toEqual(expect.any(String));
    const hits = await owner.post(`/v1/knowledge_bases/${kb}/search`, { query: 'I lost my gift card, can it be replaced?' });
    expect(hits.body.data[0].text).toContain('blocked and replaced');
    expect(hits.body.data.map((h: { text: string }) => h.text).join(' ')).not.toContain('© Example Shop');
  });

  it('creates a base, ingests a markdown document, finds the right chunk (with a typo too), lists and deletes', async () => {
    const created = await owner.post('/v1/knowledge_bases', { name: 'Support', description: 'Public handbook', metadata: { team: 'care' } }, { 'idempotency-key': 'kb-create-1' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ object: 'knowledge_base', name: 'Support', language: 'en', metadata: { team: 'care' }, document_count: 0, chunk_count: 0 });
    const kb = created.body.id as string;
    expect(kb).toMatch(/^kb_/);
    const replay = await owner.post('/v1/knowledge_bases', { name: 'Support', description: 'Public handbook', metadata: { team: 'care' } }, { 'idempotency-key': 'kb-create-1' });
    expect(replay.body.id).toBe(kb);

    const added = await owner.post(`/v1/knowledge_bases/${kb}/documents`, { title: 'Handbook', text: HANDBOOK, content_type: 'text/markdown' });
    expect(added.status).toBe(202);
    expect(added.body).toMatchObject({ object: 'knowledge_document', knowledge_base_id: kb, status: 'processing', source: 'text', title: 'Handbook' });
    const docId = added.body.id as string;

    const ready = await eventually(
      async () => {
        const list = await owner.get(`/v1/knowledge_bases/${kb}/documents?status=ready`);
        return list.body.data.find((d: { id: string }) => d.id === docId);
      },
      20_000,
      'the document to be ready',
    );
    expect(ready.chunk_count).toBeGreaterThan(0);
    expect((await owner.get(`/v1/knowledge_bases/${kb}`)).body).toMatchObject({ document_count: 1, chunk_count: ready.chunk_count });

    const hits = await owner.post(`/v1/knowledge_bases/${kb}/search`, { query: 'How many days do I have to return something?', limit: 2 });
    expect(hits.status).toBe(200);
    expect(hits.body).toMatchObject({ object: 'list', has_more: false });
    expect(hits.body.data[0]).toMatchObject({ object: 'knowledge_chunk', document_id: docId, title: 'Handbook' });
    expect(hits.body.data[0].text).toContain('30 days');
    expect(hits.body.data[0].score).toBeGreaterThan(0);

    const typo = await owner.post(`/v1/knowledge_bases/${kb}/search`, { query: 'warrenty for my aplliance', limit: 1 });
    expect(typo.body.data[0].text).toContain('two-year warranty');

    expect((await owner.post(`/v1/knowledge_bases/${kb}/search`, { query: 'warranty', min_score: 1 })).body.data).toEqual([]);

    const list = await owner.get('/v1/knowledge_bases');
    expect(list.body).toMatchObject({ object: 'list', has_more: false });
    expect(list.body.data.map((b: { id: string }) => b.id)).toContain(kb);

    const removedDoc = await owner.delete(`/v1/knowledge_bases/${kb}/documents/${docId}`);
    expect(removedDoc.body).toEqual({ id: docId, object: 'knowledge_document', deleted: true });
    expect((await owner.post(`/v1/knowledge_bases/${kb}/search`, { query: 'warranty' })).body.data).toEqual([]);
    expect((await owner.delete(`/v1/knowledge_bases/${kb}`)).body).toEqual({ id: kb, object: 'knowledge_base', deleted: true });
    expect((await owner.get(`/v1/knowledge_bases/${kb}`)).status).toBe(404);
  });

  it("answers 404 for another account's base and documents, and touches nothing", async () => {
    const kb = (await owner.post('/v1/knowledge_bases', { name: 'Private' })).body.id as string;
    const doc = (await owner.post(`/v1/knowledge_bases/${kb}/documents`, { title: 'Note', text: 'Internal escalation number is 4242.' })).body.id as string;
    for (const res of [
      await stranger.get(`/v1/knowledge_bases/${kb}`),
      await stranger.get(`/v1/knowledge_bases/${kb}/documents`),
      await stranger.post(`/v1/knowledge_bases/${kb}/search`, { query: 'escalation' }),
      await stranger.post(`/v1/knowledge_bases/${kb}/documents`, { title: 'x', text: 'x' }),
      await stranger.delete(`/v1/knowledge_bases/${kb}/documents/${doc}`),
      await stranger.delete(`/v1/knowledge_bases/${kb}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.code).toBe('not_found');
    }
    expect((await stranger.get('/v1/knowledge_bases')).body.data).toEqual([]);
    expect((await owner.get(`/v1/knowledge_bases/${kb}`)).status).toBe(200);
  });

  it('answers problem+json on bad input: 422 fields, 400 unknown field, 413 over the document limit, a failed document with its reason', async () => {
    const kb = (await owner.post('/v1/knowledge_bases', { name: 'Checks' })).body.id as string;
    const bad = await owner.post('/v1/knowledge_bases', { name: '', language: 'not a tag' });
    expect(bad.status).toBe(422);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['language', 'name']);
    expect((await owner.post('/v1/knowledge_bases', { name: 'x', colour: 'red' })).status).toBe(400);

    const neither = await owner.post(`/v1/knowledge_bases/${kb}/documents`, { title: 'x' });
    expect(neither.status).toBe(422);
    expect((await owner.post(`/v1/knowledge_bases/${kb}/search`, { query: '' })).status).toBe(422);
    expect((await owner.post(`/v1/knowledge_bases/${kb}/search`, { query: 'x', limit: 51 })).status).toBe(422);

    const big = await owner.post(`/v1/knowledge_bases/${kb}/documents`, { file: { data: Buffer.alloc(2_050_000, 65).toString('base64'), content_type: 'text/plain' } });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');

    // Past the default 1 MB body limit, under the document limit: the documents route takes it.
    const large = Buffer.from('The quick brown fox jumps over the lazy dog. '.repeat(25_000));
    const accepted = await owner.post(`/v1/knowledge_bases/${kb}/documents`, { title: 'Large', file: { data: large.toString('base64'), content_type: 'text/plain' } });
    expect(accepted.status).toBe(202);
    expect(accepted.body.bytes).toBe(large.length);

    const corrupt = await owner.post(`/v1/knowledge_bases/${kb}/documents`, { file: { data: Buffer.from('%PDF-1.7 broken').toString('base64'), content_type: 'application/pdf' } });
    expect(corrupt.status).toBe(202);
    const failed = await eventually(
      async () => {
        const res = await owner.get(`/v1/knowledge_bases/${kb}/documents?status=failed`);
        return res.body.data.find((d: { id: string }) => d.id === corrupt.body.id);
      },
      20_000,
      'the corrupt PDF to fail',
    );
    expect(failed.failure_reason).toEqual(expect.any(String));
    expect(failed.chunk_count).toBe(0);
  });
});
