import type { ServiceConfig } from '@parley/config';
import { FakeEmbeddings, FakeOpenAiServer } from '@parley/llm';
import { dot, KnowledgeEmbeddings, knowledgeEmbeddings, normalise, packVector, unpackVector } from './embeddings';

describe('knowledge embeddings', () => {
  it('packs vectors as float32 little-endian and reads them back, aligned or not', () => {
    const v = [0.5, -0.25, 1, 0];
    const packed = packVector(v);
    expect(packed).toHaveLength(16);
    expect(packed.readFloatLE(4)).toBe(-0.25);
    expect(Array.from(unpackVector(packed))).toEqual(v);
    const misaligned = Buffer.concat([Buffer.alloc(1), packed]).subarray(1);
    expect(misaligned.byteOffset % 4).not.toBe(0);
    expect(Array.from(unpackVector(misaligned))).toEqual(v);
  });

  it('normalises to length 1, and the dot product of normalised vectors is their cosine', () => {
    expect(normalise([3, 4])).toEqual([0.6, 0.8]);
    expect(normalise([0, 0])).toEqual([0, 0]);
    expect(dot(normalise([1, 1]), unpackVector(packVector([1, 0])))).toBeCloseTo(Math.SQRT1_2, 6);
    expect(dot([1, 0], [1, 0, 0])).toBeUndefined();
  });

  it('embeds chunks as headings then text, and gives up on a query vector past its timeout', async () => {
    const fake = new FakeEmbeddings({ dimensions: 8 });
    const embeddings = new KnowledgeEmbeddings(fake, 30);
    const [a, b] = await embeddings.embedChunks([
      { heading: 'FAQ > Refunds', text: 'Refunds take five days.' },
      { heading: '', text: 'No heading.' },
    ]);
    expect(fake.calls[0]).toEqual(['FAQ > Refunds\nRefunds take five days.', 'No heading.']);
    expect(Math.hypot(...a)).toBeCloseTo(1, 6);
    expect(b).toHaveLength(8);
    expect(await embeddings.queryVector('refunds')).toHaveLength(8);
    fake.delayMs = 1000;
    const started = Date.now();
    await expect(embeddings.queryVector('refunds')).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(500);
    fake.delayMs = 0;
    fake.reply(new Error('down'));
    await expect(embeddings.queryVector('refunds')).resolves.toBeUndefined();
  });

  it('is off without EMBEDDINGS_MODEL, and reaches LLM_BASE_URL with LLM_API_KEY unless EMBEDDINGS_* say otherwise', async () => {
    const server = new FakeOpenAiServer();
    const other = new FakeOpenAiServer();
    try {
      const llm = await server.start();
      const elsewhere = await other.start();
      const base = { EMBEDDINGS_MODEL: '', LLM_BASE_URL: llm, LLM_API_KEY: 'sk-llm', EMBEDDINGS_QUERY_TIMEOUT_MS: 120 } as ServiceConfig;
      expect(knowledgeEmbeddings(base)).toBeNull();

      const defaulted = knowledgeEmbeddings({ ...base, EMBEDDINGS_MODEL: 'text-embedding-3-small' } as ServiceConfig)!;
      expect(defaulted.queryTimeoutMs).toBe(120);
      await defaulted.embedChunks([{ heading: '', text: 'hello' }]);
      expect(server.embeddingRequests[0].headers.authorization).toBe('Bearer sk-llm');
      expect(server.embeddingRequests[0].body.model).toBe('text-embedding-3-small');

      const own = knowledgeEmbeddings({
        ...base,
        EMBEDDINGS_MODEL: 'nomic-embed-text',
        EMBEDDINGS_BASE_URL: elsewhere,
        EMBEDDINGS_API_KEY: 'sk-emb',
        EMBEDDINGS_QUERY_TIMEOUT_MS: 300,
      } as ServiceConfig)!;
      expect(own.queryTimeoutMs).toBe(300);
      await own.embedChunks([{ heading: '', text: 'hello' }]);
      expect(other.embeddingRequests[0].headers.authorization).toBe('Bearer sk-emb');
      expect(server.embeddingRequests).toHaveLength(1);
    } finally {
      await server.stop();
      await other.stop();
    }
  });
});
