// The seam between Parley and an embeddings model. Knowledge search reranks its lexical candidates with it when
// one is configured; production wires OpenAiCompatibleEmbeddings, unit tests wire FakeEmbeddings.
import { LlmError } from './llm-provider';

export interface EmbedOptions {
  /** Aborting it fails the call at once with an `aborted` LlmError (and cancels the request). */
  signal?: AbortSignal;
}

export interface EmbeddingsProvider {
  readonly name: string;
  /** The model asked for; vectors of different models are not comparable. */
  readonly model: string;
  /** Length of the vectors, when known in advance (asked of the server when set). */
  readonly dimensions?: number;
  /** One vector per text, in the order of `texts`. Failures are LlmErrors. */
  embed(texts: string[], options?: EmbedOptions): Promise<number[][]>;
}

/** A scripted answer of FakeEmbeddings: the vectors, an error, or a function of the texts giving either. */
export type FakeEmbeddingsReply = number[][] | Error | ((texts: string[]) => number[][] | Error | Promise<number[][] | Error>);

export interface FakeEmbeddingsOptions {
  name?: string;
  model?: string;
  dimensions?: number;
  /** Words mapped to another before hashing, so that e.g. `inexpensive` lands where `cheap` does. */
  synonyms?: Record<string, string>;
  /** Wait before answering (a slow provider); the signal cuts it short. */
  delayMs?: number;
}

/**
 * In-memory EmbeddingsProvider for unit tests. Unscripted, each text is `bagOfWordsEmbedding` of it (deterministic:
 * texts sharing words, or synonyms, are close); `reply()` scripts answers in order instead. Records every call.
 */
export class FakeEmbeddings implements EmbeddingsProvider {
  readonly name: string;
  readonly model: string;
  readonly dimensions: number;
  /** The texts of every call, in order. */
  readonly calls: string[][] = [];
  delayMs: number;
  private readonly synonyms: Record<string, string>;
  private readonly script: FakeEmbeddingsReply[] = [];

  constructor(options: FakeEmbeddingsOptions = {}) {
    this.name = options.name ?? 'fake-embeddings';
    this.model = options.model ?? 'fake-embedding';
    this.dimensions = options.dimensions ?? 64;
    this.synonyms = options.synonyms ?? {};
    this.delayMs = options.delayMs ?? 0;
  }

  reply(...replies: FakeEmbeddingsReply[]): this {
    this.script.push(...replies);
    return this;
  }

  async embed(texts: string[], options: EmbedOptions = {}): Promise<number[][]> {
    this.calls.push([...texts]);
    await pause(this.delayMs, options.signal, this.name);
    const next = this.script.shift();
    const answer = typeof next === 'function' ? await next(texts) : next;
    if (answer instanceof Error) throw answer;
    return answer ?? texts.map((t) => bagOfWordsEmbedding(t, { dimensions: this.dimensions, synonyms: this.synonyms }));
  }
}

/** Words the bag-of-words embedding ignores (they would make every text look alike). */
const STOP_WORDS = new Set(
  'a an and are as at be by can do does for from has have how i in is it its me my of on or our the their there this to us was we what when where which who why will with you your'.split(
    ' ',
  ),
);

/**
 * A deterministic embedding a test can reason about: the text's words (lower case, letters and digits, stop words
 * left out, a trailing `s` dropped, synonyms mapped) hashed into `dimensions` buckets (FNV-1a), counted, and
 * normalised to length 1. Two texts' cosine is then about the share of words they have in common.
 */
export function bagOfWordsEmbedding(text: string, options: { dimensions?: number; synonyms?: Record<string, string> } = {}): number[] {
  const dimensions = options.dimensions ?? 64;
  const synonyms = options.synonyms ?? {};
  const vector = new Array<number>(dimensions).fill(0);
  for (const raw of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (STOP_WORDS.has(raw)) continue;
    const singular = raw.length > 3 && raw.endsWith('s') && !raw.endsWith('ss') ? raw.slice(0, -1) : raw;
    const word = synonyms[raw] ?? synonyms[singular] ?? singular;
    vector[fnv1a(word) % dimensions] += 1;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((v) => v / norm);
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

function pause(ms: number, signal: AbortSignal | undefined, name: string): Promise<void> {
  const aborted = () => new LlmError(`${name}: request aborted`, { code: 'aborted', cause: signal?.reason });
  if (signal?.aborted) return Promise.reject(aborted());
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
