import OpenAI from 'openai';
import { EmbedOptions, EmbeddingsProvider } from './embeddings-provider';
import { LlmError } from './llm-provider';
import { openAiClient, toLlmError } from './openai-compatible';

export interface OpenAiCompatibleEmbeddingsOptions {
  /** Label used in logs and error messages. Default `openai-compatible-embeddings`. */
  name?: string;
  /** Base URL up to and including the version segment, as for OpenAiCompatibleLlm (`https://api.openai.com/v1`). */
  baseURL: string;
  /** Sent as `Authorization: Bearer …`; omit for servers that need none. */
  apiKey?: string;
  /** e.g. `text-embedding-3-small`, `nomic-embed-text`. */
  model: string;
  /** Asked of the server (`dimensions`, text-embedding-3 models) when set; otherwise the model's own. */
  dimensions?: number;
  /** Texts per request; more are sent in several requests, one after the other. Default 64. */
  batchSize?: number;
  /** Deadline of one attempt. Default 60 s. */
  timeoutMs?: number;
  /** Retries of connection errors, 408/409/429 and 5xx answers. Default 2. */
  maxRetries?: number;
}

/**
 * An EmbeddingsProvider over any server that speaks OpenAI's `POST /v1/embeddings` (OpenAI, vLLM, Ollama,
 * llama.cpp's server, LiteLLM, …), on the official `openai` SDK and configured like OpenAiCompatibleLlm. Asks for
 * `encoding_format: "float"` (the SDK's default is base64, which not every compatible server speaks) and puts the
 * vectors back in input order by their `index`.
 */
export class OpenAiCompatibleEmbeddings implements EmbeddingsProvider {
  readonly name: string;
  readonly model: string;
  readonly dimensions?: number;
  private readonly batchSize: number;
  private readonly client: OpenAI;

  constructor(options: OpenAiCompatibleEmbeddingsOptions) {
    this.name = options.name ?? 'openai-compatible-embeddings';
    this.model = options.model;
    this.dimensions = options.dimensions;
    this.batchSize = Math.max(1, options.batchSize ?? 64);
    this.client = openAiClient(options);
  }

  async embed(texts: string[], options: EmbedOptions = {}): Promise<number[][]> {
    const out: number[][] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      out.push(...(await this.batch(texts.slice(i, i + this.batchSize), options.signal)));
    }
    return out;
  }

  private async batch(input: string[], signal: AbortSignal | undefined): Promise<number[][]> {
    let answer: OpenAI.CreateEmbeddingResponse;
    try {
      answer = await this.client.embeddings.create(
        {
          model: this.model,
          input,
          encoding_format: 'float',
          ...(this.dimensions !== undefined ? { dimensions: this.dimensions } : {}),
        },
        { signal },
      );
    } catch (error) {
      throw toLlmError(error, this.where(), signal);
    }
    const vectors: (number[] | undefined)[] = new Array(input.length);
    for (const [order, item] of (Array.isArray(answer?.data) ? answer.data : []).entries()) {
      const index = typeof item?.index === 'number' ? item.index : order;
      if (Array.isArray(item?.embedding) && index >= 0 && index < input.length) vectors[index] = item.embedding;
    }
    const missing = vectors.findIndex((v) => v === undefined || v.length === 0 || v.some((x) => typeof x !== 'number' || !Number.isFinite(x)));
    if (missing !== -1 || vectors.length !== input.length) {
      throw new LlmError(`${this.where()}: the answer carried no usable vector for input ${missing} of ${input.length}`, { code: 'invalid_response' });
    }
    const complete = vectors as number[][];
    const length = complete[0].length;
    if (complete.some((v) => v.length !== length) || (this.dimensions !== undefined && length !== this.dimensions)) {
      throw new LlmError(`${this.where()}: the answer's vectors differ in length`, { code: 'invalid_response' });
    }
    return complete;
  }

  private where(): string {
    return `${this.name} (model ${this.model})`;
  }
}
