import { DataSource } from 'typeorm';
import { FakeOpenAiServer, OpenAiCompatibleEmbeddings } from '@parley/llm';
import { PgvectorServer } from '@parley/testing';
import { DocumentIngestor } from './document-ingestor';
import { KnowledgeEmbeddings } from './embeddings';
import { SECTION_INGEST, TEST_LIMITS } from './testing/ingest';
import { counted } from './testing/metrics';
import { IngestionQueue } from './ingestion-queue';
import { KnowledgeDomain } from './knowledge.domain';
import { KNOWLEDGE_SCHEMA, openKnowledgeDatabase } from './knowledge.module';
import { FUZZY_MIN_SIMILARITY, KnowledgeRepository } from './knowledge.repository';
import { knowledgeVectorCandidatesTotal } from './metrics';

const ACME = 'acct_acme';
const GLOBEX = 'acct_globex';
const MODEL = 'fake-embedding';
// Shares no word with its answer (nor a typo of one): lexical search cannot find it, its meaning can.
const QUESTION = 'What does postage set me back?';

// The fake embedding is a bag of words; these put the question next to the shipping section.
const SYNONYMS = { postage: 'shipping', set: 'cost', back: 'cost', costs: 'cost', price: 'cost' };

const HELP = `# Help

## Shipping costs
Standard shipping is free on orders over 50 euros. Express shipping costs 9 euros.

## Gift cards
Gift cards can be used in our shops and online, and never expire.

## Opening hours
Our support line is open Monday to Friday from 9 am to 6 pm.
`;

const counter = (outcome: string) => counted(knowledgeVectorCandidatesTotal, outcome);

describe('knowledge search with pgvector candidates (PGlite with pgvector over the wire, OpenAI-protocol embeddings server)', () => {
  let pg: PgvectorServer;
  let ds: DataSource;
  let repo: KnowledgeRepository;
  let server: FakeOpenAiServer;
  let queue: IngestionQueue;
  let domain: KnowledgeDomain;
  let lexical: KnowledgeDomain;
  const limits = TEST_LIMITS;
  const ingest = SECTION_INGEST;

  beforeAll(async () => {
    pg = await PgvectorServer.start({ search_path: KNOWLEDGE_SCHEMA, 'pg_trgm.similarity_threshold': String(FUZZY_MIN_SIMILARITY) });
    ds = await openKnowledgeDatabase(pg.url);
    server = new FakeOpenAiServer({ synonyms: SYNONYMS, embeddingDimensions: 128 });
    await server.start();
  }, 60_000);

  beforeEach(() => {
    repo = new KnowledgeRepository(ds);
    const embeddings = new KnowledgeEmbeddings(new OpenAiCompatibleEmbeddings({ baseURL: server.baseURL, model: MODEL, maxRetries: 0, timeoutMs: 5000 }), 2000);
    queue = new IngestionQueue(new DocumentIngestor(repo, ingest, limits, { allow: [] } as never, embeddings), repo, 2, 60_000);
    domain = new KnowledgeDomain(repo, queue, limits, embeddings);
    lexical = new KnowledgeDomain(repo, queue, limits);
  });

  afterEach(async () => {
    await queue.stop();
    await ds.query(`DELETE FROM knowledge_bases`);
    await ds.query(`DELETE FROM chunk_vectors`);
    for (const { indexname } of await ds.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'chunk_vectors' AND indexname LIKE 'chunk_vectors_hnsw_%'`)) {
      await ds.query(`DROP INDEX "${indexname}"`);
    }
  });

  afterAll(async () => {
    await server?.stop();
    await ds?.destroy();
    await pg?.stop();
  });

  async function helpBase(accountId = ACME) {
    const base = await domain.createBase(accountId, { name: 'Help', language: 'en' });
    await domain.addDocument(accountId, base.id, { title: 'Help', text: { text: HELP, contentType: 'text/markdown' } });
    await queue.idle();
    return base;
  }

  it('enables the vector extension and its column, once and again', async () => {
    expect(await repo.enableVectorIndex()).toEqual({ version: expect.stringMatching(/^0\.\d+\.\d+$/) });
    expect(await new KnowledgeRepository(ds).enableVectorIndex()).toEqual({ version: expect.any(String) });
    const [column] = await ds.query(
      `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = 'chunk_vectors'::regclass AND attname = 'embedding_index'`,
    );
    expect(column.type).toMatch(/vector$/);
  });

  it('finds a question sharing no word with its answer through the HNSW index, scored 0.5 × cosine, and only in the bases asked', async () => {
    await repo.enableVectorIndex();
    const base = await helpBase();
    const other = await helpBase(GLOBEX);
    // Ingestion stored each chunk's vector in both forms.
    const [{ chunks }] = await ds.query(`SELECT count(*)::int AS chunks FROM chunks`);
    const [stored] = await ds.query(`SELECT count(*)::int AS n, count(embedding_index)::int AS indexed FROM chunk_vectors WHERE model = $1`, [MODEL]);
    expect(stored).toEqual({ n: chunks, indexed: chunks });

    expect(await lexical.search(ACME, { baseIds: [base.id], query: QUESTION })).toEqual([]);
    // No index yet: the lexical candidates alone (none), counted.
    const unindexed = await counter('unindexed');
    expect(await domain.search(ACME, { baseIds: [base.id], query: QUESTION })).toEqual([]);
    expect(await counter('unindexed')).toBe(unindexed + 1);

    // The sweep builds the model's index.
    await queue.sweep();
    const indexes: { indexname: string; indexdef: string }[] = await ds.query(`SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'chunk_vectors_hnsw_%'`);
    expect(indexes).toEqual([{ indexname: expect.stringMatching(/_128$/), indexdef: expect.stringMatching(/USING hnsw .*vector\(128\).*vector_cosine_ops.*WHERE \(model = 'fake-embedding'::text\)/) }]);

    const searched = await counter('searched');
    repo.forgetVectorIndexes();
    const hits = await domain.search(ACME, { baseIds: [base.id], query: QUESTION, limit: 3 });
    expect(hits[0]).toMatchObject({ baseId: base.id, heading: 'Help > Shipping costs', title: 'Help' });
    expect(hits.every((h) => h.baseId === base.id)).toBe(true);
    expect(await counter('searched')).toBe(searched + 1);
    const cosine = server.embeddingOf(QUESTION, 128).reduce((s, x, i) => s + x * server.embeddingOf(`Help > Shipping costs\n${hits[0].text}`, 128)[i], 0);
    expect(hits[0].score).toBeCloseTo(0.5 * cosine, 3);
    // The other account's identical base is never searched.
    expect((await domain.search(GLOBEX, { baseIds: [other.id], query: QUESTION, limit: 50 })).every((h) => h.baseId === other.id)).toBe(true);

    // The statement is served by the index (sequential scans off: on 6 rows the planner would rightly read them all).
    const plan = await ds.transaction(async (m) => {
      await m.query(`SET LOCAL enable_seqscan = off`);
      const literal = `[${server.embeddingOf(QUESTION, 128).join(',')}]`;
      const rows: { 'QUERY PLAN': string }[] = await m.query(
        `EXPLAIN SELECT chunk_id FROM chunk_vectors WHERE model = 'fake-embedding'
          ORDER BY embedding_index::knowledge.vector(128) OPERATOR(knowledge.<=>) $1::knowledge.vector(128) LIMIT 5`,
        [literal],
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain(`Index Scan using ${indexes[0].indexname}`);

    // A chunk found both ways is counted once, with its lexical score added.
    const both = await domain.search(ACME, { baseIds: [base.id], query: 'shipping costs', limit: 10 });
    expect(both.filter((h) => h.heading === 'Help > Shipping costs')).toHaveLength(1);
    const lexicalScore = (await lexical.search(ACME, { baseIds: [base.id], query: 'shipping costs' }))[0].score;
    expect(both[0].score).toBeGreaterThan(0.5 * lexicalScore);
  });

  it('gives vectors stored before the column existed their indexed form in the sweep, and drops them with their document', async () => {
    await ds.query(`ALTER TABLE chunk_vectors DROP COLUMN IF EXISTS embedding_index`);
    repo.forgetVectorIndexes();
    const base = await helpBase();
    const [{ chunks }] = await ds.query(`SELECT count(*)::int AS chunks FROM chunks`);
    expect((await ds.query(`SELECT count(*)::int AS n FROM chunk_vectors`))[0].n).toBe(chunks);

    await repo.enableVectorIndex();
    expect((await ds.query(`SELECT count(embedding_index)::int AS n FROM chunk_vectors`))[0].n).toBe(0);
    await queue.sweep();
    expect((await ds.query(`SELECT count(embedding_index)::int AS n FROM chunk_vectors`))[0].n).toBe(chunks);
    expect((await domain.search(ACME, { baseIds: [base.id], query: QUESTION }))[0].heading).toBe('Help > Shipping costs');

    const [doc] = (await domain.listDocuments(ACME, base.id, 10, '')).items;
    await domain.deleteDocument(ACME, base.id, doc.id);
    expect((await ds.query(`SELECT count(*)::int AS n FROM chunk_vectors`))[0].n).toBe(0);
    expect(await domain.search(ACME, { baseIds: [base.id], query: QUESTION })).toEqual([]);
  });

  it('indexes the vectors of a model of more than 2,000 dimensions in half precision, and finds by them', async () => {
    const large = new FakeOpenAiServer({ synonyms: SYNONYMS, embeddingDimensions: 3072 });
    await large.start();
    try {
      await repo.enableVectorIndex();
      const embeddings = new KnowledgeEmbeddings(new OpenAiCompatibleEmbeddings({ baseURL: large.baseURL, model: 'fake-large', maxRetries: 0, timeoutMs: 5000 }), 2000);
      const largeQueue = new IngestionQueue(new DocumentIngestor(repo, ingest, limits, { allow: [] } as never, embeddings), repo, 2, 60_000);
      const largeDomain = new KnowledgeDomain(repo, largeQueue, limits, embeddings);
      const base = await largeDomain.createBase(ACME, { name: 'Help', language: 'en' });
      await largeDomain.addDocument(ACME, base.id, { title: 'Help', text: { text: HELP, contentType: 'text/markdown' } });
      await largeQueue.idle();
      await largeQueue.sweep();
      await largeQueue.stop();
      const [index] = await ds.query(`SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'chunk_vectors_hnsw_%'`);
      expect(index.indexdef).toMatch(/halfvec\(3072\).*halfvec_cosine_ops.*'fake-large'/);
      expect((await largeDomain.search(ACME, { baseIds: [base.id], query: QUESTION }))[0].heading).toBe('Help > Shipping costs');
    } finally {
      await large.stop();
    }
  });

  it('rebuilds an index a failed build left invalid', async () => {
    await repo.enableVectorIndex();
    await helpBase();
    await queue.sweep();
    const [{ indexname }] = await ds.query(`SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunk_vectors_hnsw_%'`);
    await ds.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = '${indexname}'::regclass`);
    expect(await repo.ensureVectorIndex(MODEL)).toBe('ready');
    expect((await ds.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = '${indexname}'::regclass`))[0].indisvalid).toBe(true);
  });
});
