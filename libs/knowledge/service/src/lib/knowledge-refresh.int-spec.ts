import { createHash } from 'node:crypto';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { parseEgressAllowlist } from '@parley/egress';
import { chunkDocument, extractDocument, fetchDocument } from '@parley/knowledge-ingest';
import { FakeOpenAiServer, OpenAiCompatibleEmbeddings } from '@parley/llm';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { DocumentIngestor } from './document-ingestor';
import { KnowledgeEmbeddings } from './embeddings';
import { IngestFunctions } from './ingest-port';
import { IngestionQueue } from './ingestion-queue';
import { KnowledgeDomain } from './knowledge.domain';
import { openKnowledgeDatabase } from './knowledge.module';
import { DocumentRecord, KnowledgeRepository } from './knowledge.repository';
import { KnowledgeLimits } from './limits';
import { knowledgeRefreshesTotal } from './metrics';
import { CHAMPIONS_FROM, KnowledgeRefresh1764900000006 } from './migrations';
import { recomputedChampions, recountedLexemeCounts, storedChampions, storedLexemeCounts } from './testing/consistency';
import { counted } from './testing/metrics';

const ACME = 'acct_acme';
const HOUR_MS = 3_600_000;

/** A page as the test server answers it; `hold` keeps the answer back until it settles. */
interface Page {
  status: number;
  body: string;
  type: string;
  hold?: Promise<void>;
}

const markdown = (body: string): Page => ({ status: 200, body, type: 'text/markdown; charset=utf-8' });

const RETURNS = `# Returns

## Refund policy
You can return any item within 30 days of delivery for a full refund, paid to the original card within five days.

## Xylophones
Xylophones and other instruments are refunded only when unplayed, in their original packaging, with every mallet and the receipt.
`;

const RETURNS_NOW = `# Returns

## Refund policy
You can return any item within 60 days of delivery for a full refund, paid to the original card within two days.

## Zeppelins
Zeppelin tours are refunded up to a week before departure, or moved to another date when the weather keeps the airship grounded.
`;

/** A date's milliseconds; NaN for none (which no expectation matches). */
const ms = (date: Date | null) => date?.getTime() ?? NaN;

const refreshes = (outcome: string) => counted(knowledgeRefreshesTotal, outcome);

describe('re-fetching URL documents (real PostgreSQL, pages served on 127.0.0.1)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: KnowledgeRepository;
  let server: Server;
  let origin: string;
  const pages = new Map<string, Page>();
  const requests = new Map<string, number>();
  let limits: KnowledgeLimits;
  let queues: IngestionQueue[];
  let queue: IngestionQueue;
  let domain: KnowledgeDomain;

  const ingest: IngestFunctions = {
    extractDocument,
    // Small chunks, so that each section is a chunk of its own.
    chunkDocument: (d) => chunkDocument(d, { maxChars: 200, overlapChars: 0 }),
    fetchDocument,
  };

  /** One replica: its ingestor and queue (fetching through the outbound guard, 127.0.0.1 allowed). */
  function replica(embeddings?: KnowledgeEmbeddings): IngestionQueue {
    const ingestor = new DocumentIngestor(repo, ingest, limits, parseEgressAllowlist('127.0.0.1').policy, embeddings);
    const q = new IngestionQueue(ingestor, repo, 2, 60_000);
    queues.push(q);
    return q;
  }

  async function document(baseId: string, id: string): Promise<DocumentRecord> {
    const doc = await repo.getDocument(ACME, baseId, id);
    if (!doc) throw new Error(`document ${id} is gone`);
    return doc;
  }

  async function addUrl(baseId: string, path: string, refreshIntervalHours?: number): Promise<DocumentRecord> {
    const doc = await domain.addDocument(ACME, baseId, { url: `${origin}${path}`, refreshIntervalHours });
    await queue.idle();
    return document(baseId, doc.id);
  }

  const chunkIds = async (id: string) =>
    ((await ds.query(`SELECT id::text FROM chunks WHERE document_id = $1 ORDER BY position`, [id])) as { id: string }[]).map((r) => r.id);
  const makeDue = (id: string) => ds.query(`UPDATE documents SET next_refresh_at = now() - interval '1 second' WHERE id = $1`, [id]);
  const found = async (baseId: string, query: string) => (await domain.search(ACME, { baseIds: [baseId], query })).map((h) => h.text);

  /** A base with the returns page added as a URL document re-fetched every `hours`, ready, and its chunks. */
  async function returnsPage(hours: number): Promise<{ baseId: string; doc: DocumentRecord; before: string[] }> {
    const base = await domain.createBase(ACME, { name: 'Help' });
    pages.set('/returns', markdown(RETURNS));
    const doc = await addUrl(base.id, '/returns', hours);
    return { baseId: base.id, doc, before: await chunkIds(doc.id) };
  }

  /**
   * Makes the returns page's document due with the page changed, and sweeps until its re-fetch has asked for the
   * page, whose answer is held back until the returned function is called.
   */
  async function refetchHeld(id: string): Promise<() => void> {
    let release!: () => void;
    pages.set('/returns', { ...markdown(RETURNS_NOW), hold: new Promise<void>((resolve) => (release = resolve)) });
    const asked = requests.get('/returns') ?? 0;
    await makeDue(id);
    await queue.sweep();
    while (requests.get('/returns') === asked) await new Promise((r) => setTimeout(r, 10));
    return release;
  }

  /** One sweep of `q` and everything it took up. */
  async function sweep(q = queue): Promise<void> {
    await q.sweep();
    await q.idle();
  }

  async function expectConsistent(baseId: string): Promise<void> {
    expect(await storedLexemeCounts(ds, baseId)).toEqual(await recountedLexemeCounts(ds, baseId));
    expect(await storedChampions(ds, baseId)).toEqual(await recomputedChampions(ds, baseId));
  }

  beforeAll(async () => {
    db = await createTestDatabase('parley_knowledge_refresh');
    ds = await openKnowledgeDatabase(db.url);
    repo = new KnowledgeRepository(ds);
    server = createServer((req, res) => {
      const path = req.url ?? '/';
      requests.set(path, (requests.get(path) ?? 0) + 1);
      const page = pages.get(path) ?? { status: 404, body: 'not found', type: 'text/plain' };
      void (page.hold ?? Promise.resolve()).then(() => {
        res.writeHead(page.status, { 'content-type': page.type });
        res.end(page.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    pages.clear();
    requests.clear();
    limits = { maxDocumentBytes: 64 * 1024, maxDocumentCharacters: 100_000, maxBaseChunks: 1000, maxBasesPerAccount: 5 };
    queues = [];
    queue = replica();
    domain = new KnowledgeDomain(repo, queue, limits);
  });

  afterEach(async () => {
    await Promise.all(queues.map((q) => q.stop()));
    await ds.query(`DELETE FROM knowledge_bases`);
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await ds?.destroy();
    await db?.drop();
  });

  it('migrates the refresh columns and the partial index of due documents, and back', async () => {
    const shape = async () => ({
      columns: ((await ds.query(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = 'knowledge' AND table_name = 'documents'
            AND column_name IN ('refresh_interval_hours', 'fetched_at', 'next_refresh_at', 'content_sha256', 'refresh_failure_reason') ORDER BY column_name`,
      )) as { column_name: string }[]).map((r) => r.column_name),
      index: ((await ds.query(`SELECT indexdef FROM pg_indexes WHERE schemaname = 'knowledge' AND indexname = 'documents_refresh_due'`)) as { indexdef: string }[]).map(
        (r) => r.indexdef,
      ),
    });
    expect(await shape()).toEqual({
      columns: ['content_sha256', 'fetched_at', 'next_refresh_at', 'refresh_failure_reason', 'refresh_interval_hours'],
      index: [expect.stringMatching(/\(next_refresh_at\) WHERE \(next_refresh_at IS NOT NULL\)/)],
    });
    const runner = ds.createQueryRunner();
    try {
      await new KnowledgeRefresh1764900000006().down(runner);
      expect(await shape()).toEqual({ columns: [], index: [] });
      await new KnowledgeRefresh1764900000006().up(runner);
    } finally {
      await runner.release();
    }
    expect((await shape()).columns).toHaveLength(5);
  });

  it('fetches a URL document with its interval: fetched_at, the body digest and next_refresh_at an interval later', async () => {
    const { baseId, doc } = await returnsPage(24);
    expect(doc).toMatchObject({ status: 'ready', refreshIntervalHours: 24, refreshFailureReason: null, contentType: 'text/markdown; charset=utf-8' });
    expect(ms(doc.nextRefreshAt) - ms(doc.fetchedAt)).toBe(24 * HOUR_MS);
    const [{ sha }] = await ds.query(`SELECT content_sha256 AS sha FROM documents WHERE id = $1`, [doc.id]);
    expect(sha).toBe(createHash('sha256').update(RETURNS).digest('hex'));
    // Without an interval: fetched, never due.
    const once = await addUrl(baseId, '/returns');
    expect(once).toMatchObject({ status: 'ready', refreshIntervalHours: null, nextRefreshAt: null, fetchedAt: expect.any(Date) });
  });

  it('replaces the chunks of a changed page: search finds the new words, not the old, and the counts and champion lists equal a recount', async () => {
    const base = await domain.createBase(ACME, { name: 'Orders' });
    // Enough chunks sharing words (over CHAMPIONS_FROM) that those words have champion lists, some in the page.
    const sections = (n: number, from: number, line: (i: number) => string) =>
      Array.from({ length: n }, (_, i) => `## Part ${from + i}\n${line(from + i)} The parcel leaves the warehouse in a box.`).join('\n\n');
    const plain = await domain.addDocument(ACME, base.id, {
      title: 'Plain',
      text: { text: `# Plain\n\n${sections(80, 0, () => 'Your order ships by courier within two days of payment.')}\n`, contentType: 'text/markdown' },
    });
    pages.set('/orders', markdown(`${RETURNS}\n${sections(60, 100, (i) => `Order ${i} ships by courier, order tracking by email.`)}\n`));
    const doc = await addUrl(base.id, '/orders', 6);
    expect((await document(base.id, plain.id)).status).toBe('ready');
    const counted = await storedLexemeCounts(ds, base.id);
    expect([counted.get('courier'), counted.get('order')].every((n) => (n ?? 0) > CHAMPIONS_FROM)).toBe(true);
    expect((await storedChampions(ds, base.id)).some((c) => c.lexeme === 'courier')).toBe(true);
    await expectConsistent(base.id);
    const before = await chunkIds(doc.id);
    expect(await found(base.id, 'xylophones')).not.toEqual([]);

    pages.set('/orders', markdown(`${RETURNS_NOW}\n${sections(40, 200, (i) => `Order order ${i} arrives by zeppelin, weather permitting, at the landing field.`)}\n`));
    const changed = await refreshes('changed');
    await makeDue(doc.id);
    await sweep();

    const now = await document(base.id, doc.id);
    expect(now).toMatchObject({ status: 'ready', title: doc.title, refreshFailureReason: null, failureReason: null });
    expect(now.chunkCount).toBe(42);
    expect(now.characters).not.toBe(doc.characters);
    expect(ms(now.fetchedAt)).toBeGreaterThan(ms(doc.fetchedAt));
    expect(ms(now.nextRefreshAt) - ms(now.fetchedAt)).toBe(6 * HOUR_MS);
    expect(now.updatedAt.getTime()).toBeGreaterThan(doc.updatedAt.getTime());
    expect(await chunkIds(doc.id)).toHaveLength(42);
    expect((await chunkIds(doc.id)).some((id) => before.includes(id))).toBe(false);
    expect(await found(base.id, 'xylophones')).toEqual([]);
    expect((await found(base.id, 'zeppelin')).join(' ')).toMatch(/Zeppelin tours/);
    expect((await domain.getBase(ACME, base.id)).chunkCount).toBe((await document(base.id, plain.id)).chunkCount + 42);
    // courier is now in the text document's chunks only, too few for a list; order's list lost the page's old chunks.
    const recounted = await storedLexemeCounts(ds, base.id);
    expect(recounted.get('courier')).toBeLessThanOrEqual(CHAMPIONS_FROM);
    expect(recounted.get('order')).toBeGreaterThan(CHAMPIONS_FROM);
    const lists = await storedChampions(ds, base.id);
    expect(lists.some((c) => c.lexeme === 'courier')).toBe(false);
    expect(lists.some((c) => c.lexeme === 'order')).toBe(true);
    await expectConsistent(base.id);
    expect(await refreshes('changed')).toBe(changed + 1);
  });

  it('embeds the new chunks of a changed page when embeddings are configured; the old vectors go with their chunks', async () => {
    const embedder = new FakeOpenAiServer({ embeddingDimensions: 16 });
    await embedder.start();
    try {
      const embeddings = new KnowledgeEmbeddings(new OpenAiCompatibleEmbeddings({ baseURL: embedder.baseURL, model: 'fake-embedding', maxRetries: 0 }), 1000);
      queue = replica(embeddings);
      domain = new KnowledgeDomain(repo, queue, limits, embeddings);
      const { doc, before } = await returnsPage(24);
      const vectors = async () =>
        ((await ds.query(`SELECT v.chunk_id::text AS id FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id WHERE v.model = 'fake-embedding' ORDER BY c.position`)) as { id: string }[]).map(
          (r) => r.id,
        );
      expect(await vectors()).toEqual(before);
      pages.set('/returns', markdown(RETURNS_NOW));
      await makeDue(doc.id);
      await sweep();
      const after = await chunkIds(doc.id);
      expect(after.some((id) => before.includes(id))).toBe(false);
      expect(await vectors()).toEqual(after);
      expect((await ds.query(`SELECT count(*)::int AS n FROM chunk_vectors`))[0].n).toBe(after.length);
    } finally {
      await embedder.stop();
    }
  });

  it('keeps the same chunks of an unchanged page and moves fetched_at and next_refresh_at on', async () => {
    const { baseId, doc, before } = await returnsPage(24);
    const unchanged = await refreshes('unchanged');
    await makeDue(doc.id);
    await sweep();
    const now = await document(baseId, doc.id);
    expect(requests.get('/returns')).toBe(2);
    expect(await chunkIds(doc.id)).toEqual(before);
    expect(now).toMatchObject({ status: 'ready', chunkCount: doc.chunkCount, refreshFailureReason: null, updatedAt: doc.updatedAt });
    expect(ms(now.fetchedAt)).toBeGreaterThan(ms(doc.fetchedAt));
    expect(ms(now.nextRefreshAt) - ms(now.fetchedAt)).toBe(24 * HOUR_MS);
    expect(await refreshes('unchanged')).toBe(unchanged + 1);
  });

  it('keeps the old chunks of a page that now fails (500, too large, over the base limit), ready with refresh_failure_reason, until it is back', async () => {
    const { baseId, doc, before } = await returnsPage(12);
    const failed = await refreshes('failed');

    const failWith = async (page: Page, reason: RegExp) => {
      pages.set('/returns', page);
      await makeDue(doc.id);
      await sweep();
      const now = await document(baseId, doc.id);
      expect(now).toMatchObject({ status: 'ready', failureReason: null, refreshFailureReason: expect.stringMatching(reason), fetchedAt: doc.fetchedAt });
      expect(ms(now.nextRefreshAt)).toBeGreaterThan(Date.now() + 11 * HOUR_MS);
      expect(await chunkIds(doc.id)).toEqual(before);
      expect((await found(baseId, 'xylophones')).join(' ')).toMatch(/Xylophones/);
    };
    await failWith({ status: 500, body: 'down', type: 'text/plain' }, /HTTP 500/);
    await failWith(markdown(`${RETURNS_NOW}\n${'Zeppelin. '.repeat(8000)}`), /larger than the limit/);
    limits.maxBaseChunks = 1;
    await failWith(markdown(RETURNS_NOW), /over its limit of 1 \(this document makes 2; the base's other documents have 0\)/);
    expect(await refreshes('failed')).toBe(failed + 3);
    await expectConsistent(baseId);

    // The page as it was: unchanged, the reason cleared.
    pages.set('/returns', markdown(RETURNS));
    await makeDue(doc.id);
    await sweep();
    expect(await document(baseId, doc.id)).toMatchObject({ status: 'ready', refreshFailureReason: null });
    expect(await chunkIds(doc.id)).toEqual(before);
  });

  it('retries a URL document whose first ingestion failed at its time: failed again with the new reason, then ready', async () => {
    const base = await domain.createBase(ACME, { name: 'Help' });
    pages.set('/returns', { status: 503, body: 'maintenance', type: 'text/plain' });
    const doc = await addUrl(base.id, '/returns', 2);
    expect(doc).toMatchObject({ status: 'failed', failureReason: expect.stringMatching(/HTTP 503/), fetchedAt: null, chunkCount: 0 });
    expect(ms(doc.nextRefreshAt)).toBeGreaterThan(Date.now() + HOUR_MS);

    pages.delete('/returns');
    await makeDue(doc.id);
    await sweep();
    const again = await document(base.id, doc.id);
    expect(again).toMatchObject({ status: 'failed', failureReason: expect.stringMatching(/HTTP 404/), refreshFailureReason: null, chunkCount: 0 });

    pages.set('/returns', markdown(RETURNS));
    await makeDue(doc.id);
    await sweep();
    const ready = await document(base.id, doc.id);
    expect(ready).toMatchObject({ status: 'ready', failureReason: null, refreshFailureReason: null, title: 'Returns', chunkCount: 2 });
    expect(ms(ready.nextRefreshAt) - ms(ready.fetchedAt)).toBe(2 * HOUR_MS);
    expect((await found(base.id, 'xylophones')).join(' ')).toMatch(/Xylophones/);
    await expectConsistent(base.id);
  });

  it('does not fetch a document before it is due, nor one without an interval', async () => {
    const base = await domain.createBase(ACME, { name: 'Help' });
    pages.set('/later', markdown(RETURNS));
    pages.set('/never', markdown(RETURNS));
    const later = await addUrl(base.id, '/later', 1);
    const never = await addUrl(base.id, '/never');
    await ds.query(`UPDATE documents SET fetched_at = fetched_at - interval '59 minutes', next_refresh_at = next_refresh_at - interval '59 minutes' WHERE id = $1`, [later.id]);
    await ds.query(`UPDATE documents SET fetched_at = fetched_at - interval '30 days' WHERE id = $1`, [never.id]);
    await sweep();
    await sweep();
    expect([requests.get('/later'), requests.get('/never')]).toEqual([1, 1]);
    await makeDue(later.id);
    await sweep();
    expect([requests.get('/later'), requests.get('/never')]).toEqual([2, 1]);
  });

  it('stores nothing for a document deleted during its refresh', async () => {
    const { baseId, doc } = await returnsPage(24);
    const other = await domain.addDocument(ACME, baseId, { title: 'FAQ', text: { text: RETURNS_NOW, contentType: 'text/markdown' } });
    await queue.idle();
    const release = await refetchHeld(doc.id);
    await domain.deleteDocument(ACME, baseId, doc.id);
    release();
    await queue.idle();
    expect(await repo.getDocument(ACME, baseId, doc.id)).toBeUndefined();
    expect(await chunkIds(doc.id)).toEqual([]);
    expect((await domain.getBase(ACME, baseId)).chunkCount).toBe((await document(baseId, other.id)).chunkCount);
    await expectConsistent(baseId);
  });

  it('leaves a document as it was when its replica stops mid-refresh; another takes it up once the lease runs out', async () => {
    const { baseId, doc, before } = await returnsPage(24);
    const release = await refetchHeld(doc.id);
    await queue.stop();
    release();
    const left = await document(baseId, doc.id);
    expect(left).toMatchObject({ status: 'ready', fetchedAt: doc.fetchedAt, refreshFailureReason: null });
    expect(ms(left.nextRefreshAt)).toBeLessThan(Date.now());
    expect(await chunkIds(doc.id)).toEqual(before);

    // Held by the stopped replica until its lease runs out (simulated).
    const next = replica();
    await sweep(next);
    expect(requests.get('/returns')).toBe(2);
    await ds.query(`UPDATE documents SET lease_until = now() - interval '1 second' WHERE id = $1`, [doc.id]);
    await sweep(next);
    expect(requests.get('/returns')).toBe(3);
    expect((await found(baseId, 'zeppelin')).join(' ')).toMatch(/Zeppelin tours/);
  });

  it('fetches a due document once when two replicas sweep at once', async () => {
    const { baseId, doc } = await returnsPage(24);
    pages.set('/returns', markdown(RETURNS_NOW));
    const other = replica();
    await makeDue(doc.id);
    await Promise.all([queue.sweep(), other.sweep()]);
    await Promise.all([queue.idle(), other.idle()]);
    expect(requests.get('/returns')).toBe(2);
    expect(await document(baseId, doc.id)).toMatchObject({ status: 'ready', chunkCount: 2 });
    await expectConsistent(baseId);
    // Both replicas found it due and queued it: the claim lets one of them fetch it.
    await makeDue(doc.id);
    queue.enqueue(doc.id, 'refresh');
    other.enqueue(doc.id, 'refresh');
    await Promise.all([queue.idle(), other.idle()]);
    expect(requests.get('/returns')).toBe(3);
  });
});
