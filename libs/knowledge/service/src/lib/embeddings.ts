import type { ServiceConfig } from '@parley/config';
import { EmbeddingsProvider, OpenAiCompatibleEmbeddings } from '@parley/llm';
import { knowledgeRerankTotal } from './metrics';

export const KNOWLEDGE_EMBEDDINGS = Symbol('KNOWLEDGE_EMBEDDINGS');

/** Chunks per embeddings request at ingestion. */
export const EMBED_BATCH = 64;
/** Lexical candidates reranked per search (at least the search's limit). */
export const RERANK_CANDIDATES = 50;
/** final = LEXICAL_WEIGHT × lexical + (1 − LEXICAL_WEIGHT) × max(0, cosine) (docs/knowledge.md, Semantic rerank). */
export const LEXICAL_WEIGHT = 0.5;

/**
 * The semantic side of knowledge search when EMBEDDINGS_MODEL is set: the provider, and the query embedding's
 * deadline. Absent (null) when it is not.
 */
export class KnowledgeEmbeddings {
  constructor(
    readonly provider: EmbeddingsProvider,
    readonly queryTimeoutMs: number,
  ) {}

  get model(): string {
    return this.provider.model;
  }

  /** Each chunk's text as embedded: its headings, then its text. Vectors normalised to length 1. */
  async embedChunks(chunks: { heading: string; text: string }[], signal?: AbortSignal): Promise<number[][]> {
    const vectors = await this.provider.embed(
      chunks.map((c) => (c.heading ? `${c.heading}\n${c.text}` : c.text)),
      { signal },
    );
    if (vectors.length !== chunks.length) throw new Error(`${this.provider.name}: ${vectors.length} vectors for ${chunks.length} chunks`);
    return vectors.map(normalise);
  }

  /**
   * The query's vector (normalised), or undefined when it did not come within queryTimeoutMs (the request is then
   * aborted) or failed; counted. Never rejects.
   */
  queryVector(query: string): Promise<number[] | undefined> {
    const controller = new AbortController();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        knowledgeRerankTotal.inc({ outcome: 'timeout' });
        controller.abort(new Error('query embedding timeout'));
        resolve(undefined);
      }, this.queryTimeoutMs);
      this.provider.embed([query], { signal: controller.signal }).then(
        (vectors) => {
          clearTimeout(timer);
          if (controller.signal.aborted) return;
          const vector = vectors[0];
          if (!vector?.length) knowledgeRerankTotal.inc({ outcome: 'failed' });
          resolve(vector?.length ? normalise(vector) : undefined);
        },
        () => {
          clearTimeout(timer);
          if (controller.signal.aborted) return;
          knowledgeRerankTotal.inc({ outcome: 'failed' });
          resolve(undefined);
        },
      );
    });
  }
}

export function normalise(vector: number[]): number[] {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  return norm === 0 ? vector : vector.map((x) => x / norm);
}

/** A vector as stored: float32, little-endian. */
export function packVector(vector: number[]): Buffer {
  const out = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) out.writeFloatLE(vector[i], i * 4);
  return out;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A stored vector back (a view of the bytes when they are aligned and the machine little-endian). */
export function unpackVector(bytes: Buffer): Float32Array {
  const n = Math.floor(bytes.length / 4);
  if (LITTLE_ENDIAN && bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, n);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/** Dot product of two vectors of one length (the cosine of normalised ones); undefined when the lengths differ. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number | undefined {
  if (a.length !== b.length) return undefined;
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
}

/** The module's embeddings from configuration: null when EMBEDDINGS_MODEL is empty. */
export function knowledgeEmbeddings(c: ServiceConfig): KnowledgeEmbeddings | null {
  if (!c.EMBEDDINGS_MODEL) return null;
  const provider = new OpenAiCompatibleEmbeddings({
    name: 'knowledge-embeddings',
    baseURL: c.EMBEDDINGS_BASE_URL || c.LLM_BASE_URL,
    apiKey: c.EMBEDDINGS_API_KEY || c.LLM_API_KEY,
    model: c.EMBEDDINGS_MODEL,
    batchSize: EMBED_BATCH,
    timeoutMs: 30_000,
    maxRetries: 2,
  });
  return new KnowledgeEmbeddings(provider, c.EMBEDDINGS_QUERY_TIMEOUT_MS);
}
