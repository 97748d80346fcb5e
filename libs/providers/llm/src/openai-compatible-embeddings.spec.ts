import { bagOfWordsEmbedding, FakeEmbeddings } from './embeddings-provider';
import { LlmError } from './llm-provider';
import { OpenAiCompatibleEmbeddings } from './openai-compatible-embeddings';
import { FakeOpenAiServer } from './testing/fake-openai-server';

const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
const SYNONYMS = { inexpensive: 'cheap', affordable: 'cheap' };

describe('OpenAiCompatibleEmbeddings against an OpenAI-protocol server', () => {
  let server: FakeOpenAiServer;
  let baseURL: string;

  beforeEach(async () => {
    server = new FakeOpenAiServer({ synonyms: SYNONYMS });
    baseURL = await server.start();
  });

  afterEach(async () => {
    await server.stop();
  });

  const embeddings = (options: { apiKey?: string; batchSize?: number; dimensions?: number; timeoutMs?: number } = {}) =>
    new OpenAiCompatibleEmbeddings({ baseURL, model: 'text-embedding-3-small', maxRetries: 0, ...options });

  it('posts the texts to /v1/embeddings as floats with the model and key, and returns one vector per text', async () => {
    const vectors = await embeddings({ apiKey: 'sk-test' }).embed(['Refunds within 30 days', 'Opening hours']);

    expect(server.embeddingRequests).toHaveLength(1);
    const [request] = server.embeddingRequests;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/embeddings');
    expect(request.headers.authorization).toBe('Bearer sk-test');
    expect(request.body).toEqual({ model: 'text-embedding-3-small', input: ['Refunds within 30 days', 'Opening hours'], encoding_format: 'float' });
    expect(vectors).toEqual([server.embeddingOf('Refunds within 30 days'), server.embeddingOf('Opening hours')]);
    expect(vectors[0]).toHaveLength(64);
  });

  it('sends no Authorization without a key, and asks for dimensions when set', async () => {
    const vectors = await embeddings({ dimensions: 16 }).embed(['a text']);
    expect(server.embeddingRequests[0].headers.authorization).toBeUndefined();
    expect(server.embeddingRequests[0].body.dimensions).toBe(16);
    expect(vectors[0]).toHaveLength(16);
  });

  it('sends batches of batchSize in order and keeps input order', async () => {
    const texts = Array.from({ length: 7 }, (_, i) => `text number ${i} word${i}`);
    const vectors = await embeddings({ batchSize: 3 }).embed(texts);
    expect(server.embeddingRequests.map((r) => r.body.input)).toEqual([texts.slice(0, 3), texts.slice(3, 6), texts.slice(6)]);
    expect(vectors).toEqual(texts.map((t) => server.embeddingOf(t)));
  });

  it('puts vectors back in input order by their index when the server lists them otherwise', async () => {
    server.replyEmbeddings((body) => ({
      status: 200,
      body: {
        object: 'list',
        model: body.model,
        data: [
          { object: 'embedding', index: 1, embedding: [0, 1] },
          { object: 'embedding', index: 0, embedding: [1, 0] },
        ],
        usage: { prompt_tokens: 2, total_tokens: 2 },
      },
    }));
    await expect(embeddings().embed(['first', 'second'])).resolves.toEqual([
      [1, 0],
      [0, 1],
    ]);
  });

  it('maps failures to LlmErrors: an error status, a missing vector, an abort, a timeout, no server', async () => {
    server.replyEmbeddings(() => ({ status: 400, body: { error: { message: 'bad model', type: 'invalid_request_error' } } }));
    await expect(embeddings().embed(['x'])).rejects.toMatchObject({ name: 'LlmError', code: 'http', status: 400 });

    server.replyEmbeddings(() => ({ status: 200, body: { object: 'list', data: [{ index: 0, embedding: [1] }], model: 'm' } }));
    await expect(embeddings().embed(['x', 'y'])).rejects.toMatchObject({ code: 'invalid_response' });

    server.replyEmbeddings(() => ({ delayMs: 2000 }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    await expect(embeddings().embed(['x'], { signal: controller.signal })).rejects.toMatchObject({ code: 'aborted' });
    expect(Date.now() - started).toBeLessThan(1000);

    await expect(embeddings({ timeoutMs: 50 }).embed(['x'])).rejects.toMatchObject({ code: 'timeout' });

    await server.stop();
    const error = await embeddings().embed(['x']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ code: 'connection' });
  });

  it('also answers base64 (the SDK default) as OpenAI does', async () => {
    const res = await fetch(`${baseURL}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', input: 'cheap plans', encoding_format: 'base64' }),
    });
    const body = (await res.json()) as { data: { embedding: string; index: number }[]; model: string; usage: { total_tokens: number } };
    const bytes = Buffer.from(body.data[0].embedding, 'base64');
    const decoded = Array.from(new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)));
    expect(decoded.map((x) => Math.round(x * 1e5))).toEqual(server.embeddingOf('cheap plans').map((x) => Math.round(x * 1e5)));
    expect(body).toMatchObject({ model: 'm', data: [{ index: 0 }], usage: { total_tokens: expect.any(Number) } });
  });
});

describe('bagOfWordsEmbedding and FakeEmbeddings', () => {
  it('puts synonyms close and unrelated texts apart, deterministically', () => {
    const q = bagOfWordsEmbedding('cheap plans', { synonyms: SYNONYMS });
    expect(cosine(q, bagOfWordsEmbedding('Inexpensive plan', { synonyms: SYNONYMS }))).toBeCloseTo(1, 5);
    expect(cosine(q, bagOfWordsEmbedding('opening hours', { synonyms: SYNONYMS }))).toBeLessThan(0.3);
    expect(bagOfWordsEmbedding('the a of')).toEqual(new Array(64).fill(0));
  });

  it('answers scripted replies, then the default vectors, and honours the signal', async () => {
    const fake = new FakeEmbeddings({ dimensions: 8 }).reply([[1]], new LlmError('down', { code: 'connection' }));
    await expect(fake.embed(['a'])).resolves.toEqual([[1]]);
    await expect(fake.embed(['a'])).rejects.toMatchObject({ code: 'connection' });
    await expect(fake.embed(['refund'])).resolves.toEqual([bagOfWordsEmbedding('refund', { dimensions: 8 })]);
    fake.delayMs = 1000;
    await expect(fake.embed(['x'], { signal: AbortSignal.timeout(20) })).rejects.toMatchObject({ code: 'aborted' });
    expect(fake.calls).toHaveLength(4);
  });
});
