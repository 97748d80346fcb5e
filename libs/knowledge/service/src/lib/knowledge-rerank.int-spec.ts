import { DataSource } from 'typeorm';
import { FakeOpenAiServer, OpenAiCompatibleEmbeddings } from '@parley/llm';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { DocumentIngestor } from './document-ingestor';
import { KnowledgeEmbeddings } from './embeddings';
import { SECTION_INGEST, TEST_LIMITS } from './testing/ingest';
import { IngestionQueue } from './ingestion-queue';
import { KnowledgeDomain } from './knowledge.domain';
import { openKnowledgeDatabase } from './knowledge.module';
import { KnowledgeRepository } from './knowledge.repository';
import { knowledgeEmbeddingsTotal, knowledgeRerankTotal } from './metrics';
import { counted } from './testing/metrics';

const ACME = 'acct_acme';
const QUERY = 'How do I get my money back for a broken item?';
// Long enough that the local server's answer always comes in time on a loaded machine (at 120 ms a search was once
// answered in lexical order under CI-like load); the timeout test makes its answer later than this.
const QUERY_TIMEOUT_MS = 1000;

// The fake embedding is a bag of words: these make the refund chunk close to the question although it shares one
// word with it, while the gift-card chunk shares three words (lexically best) but is about something else.
const SYNONYMS = { refund: 'money', return: 'back', broken: 'defect', faulty: 'defect' };

const HELP = `# Help

## Gift cards
Gift cards cannot be exchanged for money and never come back. Get one for a friend, a colleague or a neighbour at any of our shops.

## Refund policy
Return a faulty item for a full refund.

## Opening hours
Our support line is open Monday to Friday from 9 am to 6 pm, and on Saturday mornings from 10 am to noon, except on holidays.
`;

describe('knowledge search with a semantic rerank (real PostgreSQL, OpenAI-protocol embeddings server)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: KnowledgeRepository;
  let server: FakeOpenAiServer;
  let queue: IngestionQueue;
  let lexicalQueue: IngestionQueue;
  /** Embeddings configured. */
  let domain: KnowledgeDomain;
  /** The same bases without embeddings: the lexical order. */
  let lexical: KnowledgeDomain;
  const limits = TEST_LIMITS;
  const ingest = SECTION_INGEST;

  beforeAll(async () => {
    db = await createTestDatabase('parley_knowledge_rerank');
    ds = await openKnowledgeDatabase(db.url);
    repo = new KnowledgeRepository(ds);
    server = new FakeOpenAiServer({ synonyms: SYNONYMS, embeddingDimensions: 256 });
    await server.start();
  });

  beforeEach(() => {
    server.replyEmbeddings(() => undefined);
    const embeddings = new KnowledgeEmbeddings(
      new OpenAiCompatibleEmbeddings({ baseURL: server.baseURL, model: 'fake-embedding', batchSize: 2, maxRetries: 0, timeoutMs: 5000 }),
      QUERY_TIMEOUT_MS,
    );
    queue = new IngestionQueue(new DocumentIngestor(repo, ingest, limits, { allow: [] } as never, embeddings), repo, 2, 60_000);
    domain = new KnowledgeDomain(repo, queue, limits, embeddings);
    lexicalQueue = new IngestionQueue(new DocumentIngestor(repo, ingest, limits, { allow: [] } as never), repo, 2, 60_000);
    lexical = new KnowledgeDomain(repo, lexicalQueue, limits);
  });

  afterEach(async () => {
    await queue.stop();
    await lexicalQueue.stop();
    await ds.query(`DELETE FROM knowledge_bases`);
  });

  afterAll(async () => {
    await server?.stop();
    await ds?.destroy();
    await db?.drop();
  });

  async function helpBase(via: 'embedded' | 'lexical' = 'embedded') {
    const base = await domain.createBase(ACME, { name: 'Help', language: 'en' });
    const doc = await (via === 'embedded' ? domain : lexical).addDocument(ACME, base.id, { title: 'Help', text: { text: HELP, contentType: 'text/markdown' } });
    await queue.idle();
    await lexicalQueue.idle();
    return { base, doc: (await repo.getDocument(ACME, base.id, doc.id))! };
  }

  it('embeds the chunks at ingestion in batches, and a paraphrased question gets the right chunk first after rerank', async () => {
    const embedded = await counted(knowledgeEmbeddingsTotal, 'embedded');
    const reranked = await counted(knowledgeRerankTotal, 'reranked');
    const { base, doc } = await helpBase();
    expect(doc).toMatchObject({ status: 'ready', chunkCount: 3 });
    // 3 chunks in batches of 2, each text its headings then its text.
    const inputs = server.embeddingRequests.map((r) => r.body.input);
    expect(inputs).toEqual([[expect.stringMatching(/^Help > Gift cards\n/), expect.stringMatching(/^Help > Refund policy\n/)], [expect.stringMatching(/^Help > Opening hours\n/)]]);
    const [{ n, dims }] = await ds.query(`SELECT count(*)::int AS n, min(length(embedding) / 4) AS dims FROM chunk_vectors WHERE model = 'fake-embedding'`);
    expect([n, dims]).toEqual([3, 256]);
    expect(await counted(knowledgeEmbeddingsTotal, 'embedded')).toBe(embedded + 1);

    const lexicalHits = await lexical.search(ACME, { baseIds: [base.id], query: QUERY });
    expect(lexicalHits.map((h) => h.heading)).toEqual(['Help > Gift cards', 'Help > Refund policy']);

    const hits = await domain.search(ACME, { baseIds: [base.id], query: QUERY });
    expect(hits.map((h) => h.heading)).toEqual(['Help > Refund policy', 'Help > Gift cards']);
    expect(await counted(knowledgeRerankTotal, 'reranked')).toBe(reranked + 1);
    // The final score is 0.5 × lexical + 0.5 × max(0, cosine), rounded to 4 decimals.
    const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
    const q = server.embeddingOf(QUERY, 256);
    for (const hit of hits) {
      const lex = lexicalHits.find((h) => h.heading === hit.heading)!.score;
      const chunk = server.embeddingOf(`${hit.heading}\n${hit.text}`, 256);
      expect(hit.score).toBeCloseTo(0.5 * lex + 0.5 * Math.max(0, cosine(q, chunk)), 3);
    }
    // min_score applies to the final score.
    const floor = (hits[0].score + hits[1].score) / 2;
    expect((await domain.search(ACME, { baseIds: [base.id], query: QUERY, minScore: floor })).map((h) => h.heading)).toEqual(['Help > Refund policy']);
    // Same question, same answer.
    expect(await domain.search(ACME, { baseIds: [base.id], query: QUERY })).toEqual(hits);

    // Vectors go with their document.
    await domain.deleteDocument(ACME, base.id, doc.id);
    expect((await ds.query(`SELECT count(*)::int AS n FROM chunk_vectors`))[0].n).toBe(0);
  });

  it('answers in lexical order within the timeout when the query embedding is late, and when it fails', async () => {
    const { base } = await helpBase();
    const lexicalHits = await lexical.search(ACME, { baseIds: [base.id], query: QUERY });
    const timeouts = await counted(knowledgeRerankTotal, 'timeout');
    const failures = await counted(knowledgeRerankTotal, 'failed');

    server.replyEmbeddings(() => ({ delayMs: 2000 }));
    const started = performance.now();
    const late = await domain.search(ACME, { baseIds: [base.id], query: QUERY });
    const elapsed = performance.now() - started;
    expect(late).toEqual(lexicalHits);
    expect(elapsed).toBeGreaterThanOrEqual(QUERY_TIMEOUT_MS - 5);
    expect(elapsed).toBeLessThan(QUERY_TIMEOUT_MS + 150);
    expect(await counted(knowledgeRerankTotal, 'timeout')).toBe(timeouts + 1);
    // The late request was abandoned, not left running.
    expect(await server.embeddingRequests.at(-1)!.ended).toBe('closed');

    server.replyEmbeddings(() => ({ status: 503, body: { error: { message: 'overloaded', type: 'server_error' } } }));
    expect(await domain.search(ACME, { baseIds: [base.id], query: QUERY })).toEqual(lexicalHits);
    expect(await counted(knowledgeRerankTotal, 'failed')).toBe(failures + 1);
  });

  it('an embedding failure at ingestion leaves the document ready and searchable lexically', async () => {
    const failed = await counted(knowledgeEmbeddingsTotal, 'failed');
    const unembedded = await counted(knowledgeRerankTotal, 'unembedded');
    server.replyEmbeddings(() => ({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } }));
    const { base, doc } = await helpBase();
    expect(doc).toMatchObject({ status: 'ready', chunkCount: 3, failureReason: null });
    expect((await ds.query(`SELECT count(*)::int AS n FROM chunk_vectors`))[0].n).toBe(0);
    expect(await counted(knowledgeEmbeddingsTotal, 'failed')).toBe(failed + 1);

    server.replyEmbeddings(() => undefined);
    const lexicalHits = await lexical.search(ACME, { baseIds: [base.id], query: QUERY });
    expect(lexicalHits.length).toBeGreaterThan(0);
    expect(await domain.search(ACME, { baseIds: [base.id], query: QUERY })).toEqual(lexicalHits);
    expect(await counted(knowledgeRerankTotal, 'unembedded')).toBe(unembedded + 1);

    // The sweep embeds what has no vector, once the provider answers again.
    const backfilled = await counted(knowledgeEmbeddingsTotal, 'backfilled');
    await queue.sweep();
    expect((await ds.query(`SELECT count(*)::int AS n FROM chunk_vectors`))[0].n).toBe(3);
    expect(await counted(knowledgeEmbeddingsTotal, 'backfilled')).toBe(backfilled + 3);
    expect((await domain.search(ACME, { baseIds: [base.id], query: QUERY }))[0].heading).toBe('Help > Refund policy');
  });

  it('the sweep backfills a few chunks at a time, stops at a failure, and re-embeds chunks of another model', async () => {
    const { base } = await helpBase('lexical');
    const ingestor = new DocumentIngestor(
      repo,
      ingest,
      limits,
      { allow: [] } as never,
      new KnowledgeEmbeddings(new OpenAiCompatibleEmbeddings({ baseURL: server.baseURL, model: 'old-model', maxRetries: 0 }), QUERY_TIMEOUT_MS),
    );
    expect(await ingestor.backfillVectors(2)).toBe(2);
    expect(await ingestor.backfillVectors(10)).toBe(1);
    expect(await ingestor.backfillVectors(10)).toBe(0);
    expect((await ds.query(`SELECT model, count(*)::int AS n FROM chunk_vectors GROUP BY model`))).toEqual([{ model: 'old-model', n: 3 }]);

    server.replyEmbeddings(() => ({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } }));
    await queue.sweep();
    expect((await ds.query(`SELECT model, count(*)::int AS n FROM chunk_vectors GROUP BY model`))).toEqual([{ model: 'old-model', n: 3 }]);

    server.replyEmbeddings(() => undefined);
    await queue.sweep();
    expect((await ds.query(`SELECT model, count(*)::int AS n FROM chunk_vectors GROUP BY model`))).toEqual([{ model: 'fake-embedding', n: 3 }]);
    expect((await domain.search(ACME, { baseIds: [base.id], query: QUERY }))[0].heading).toBe('Help > Refund policy');
  });

  it('documents ingested before embeddings were configured have no vectors and keep their lexical scores, ranked with the reranked ones by score', async () => {
    const { base } = await helpBase('lexical');
    expect((await ds.query(`SELECT count(*)::int AS n FROM chunk_vectors`))[0].n).toBe(0);
    await domain.addDocument(ACME, base.id, { title: 'Refunds', text: { text: '## Refund policy\nReturn a faulty item for a full refund.', contentType: 'text/markdown' } });
    await queue.idle();
    const lexicalHits = await lexical.search(ACME, { baseIds: [base.id], query: QUERY });
    const hits = await domain.search(ACME, { baseIds: [base.id], query: QUERY });
    const old = lexicalHits.filter((h) => h.title === 'Help');
    for (const h of old) expect(hits.find((x) => x.documentId === h.documentId && x.position === h.position)?.score).toBe(h.score);
    const fresh = hits.find((h) => h.title === 'Refunds')!;
    const freshLexical = lexicalHits.find((h) => h.title === 'Refunds')!.score;
    const cosine = server.embeddingOf(QUERY, 256).reduce((sum, x, i) => sum + x * server.embeddingOf(`Refund policy\n${fresh.text}`, 256)[i], 0);
    expect(fresh.score).toBeCloseTo(0.5 * freshLexical + 0.5 * cosine, 3);
    expect(hits.map((h) => h.score)).toEqual([...hits.map((h) => h.score)].sort((a, b) => b - a));
  });
});
