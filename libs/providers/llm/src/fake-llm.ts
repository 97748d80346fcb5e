import { CompletionRequest, CompletionResult, LlmError, LlmProvider } from './llm-provider';

/**
 * One scripted answer: the text (reported as the requested model), a full result (to report another model), an
 * error to throw, or a function of the request giving any of those.
 */
export type FakeLlmReply =
  | string
  | CompletionResult
  | Error
  | ((request: CompletionRequest) => string | CompletionResult | Promise<string | CompletionResult>);

export interface FakeLlmOptions {
  name?: string;
  /** Answer given once the scripted replies are used up; without it, an extra call fails. */
  fallback?: FakeLlmReply;
}

/**
 * In-memory LlmProvider for unit tests: answers from a script, in order, and records every request. Honours the
 * request's AbortSignal (an aborted request fails with an `aborted` LlmError, consuming no reply).
 */
export class FakeLlm implements LlmProvider {
  readonly name: string;
  /** Every request received, in order (the signal included). */
  readonly requests: CompletionRequest[] = [];
  private readonly script: FakeLlmReply[];
  private readonly fallback: FakeLlmReply | undefined;

  constructor(replies: FakeLlmReply[] = [], options: FakeLlmOptions = {}) {
    this.name = options.name ?? 'fake';
    this.script = [...replies];
    this.fallback = options.fallback;
  }

  /** Appends replies to the script. */
  reply(...replies: FakeLlmReply[]): this {
    this.script.push(...replies);
    return this;
  }

  /** Number of scripted replies not used yet. */
  get pending(): number {
    return this.script.length;
  }

  /** The last request received. */
  get lastRequest(): CompletionRequest | undefined {
    return this.requests[this.requests.length - 1];
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    this.requests.push(request);
    if (request.signal?.aborted) {
      throw new LlmError(`${this.name}: request aborted`, { code: 'aborted', cause: request.signal.reason });
    }
    const next = this.script.length > 0 ? this.script.shift() : this.fallback;
    if (next === undefined) {
      throw new LlmError(`${this.name}: no scripted reply left for call ${this.requests.length}`, {
        code: 'invalid_response',
      });
    }
    if (next instanceof Error) throw next;
    const answer = typeof next === 'function' ? await next(request) : next;
    return typeof answer === 'string' ? { text: answer, model: request.model } : { ...answer };
  }
}
