// The one seam between Parley and a language model. Everything that needs a completion (post-call analysis, …)
// takes an LlmProvider; production wires OpenAiCompatibleLlm, unit tests wire FakeLlm.

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface CompletionRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  maxTokens?: number;
  /** Ask for a single JSON object as the answer (OpenAI's `response_format: { type: 'json_object' }`). */
  json?: boolean;
  signal?: AbortSignal;
}

export interface CompletionResult {
  text: string;
  /** The model the provider reports having used (may differ from the requested one, e.g. a dated snapshot). */
  model: string;
}

export interface LlmProvider {
  readonly name: string;
  complete(request: CompletionRequest): Promise<CompletionResult>;
}

/**
 * What went wrong, for callers that decide whether to retry:
 * `http` the provider answered with an error status (see `status`), `timeout` no answer in time, `aborted` the
 * caller's AbortSignal fired, `connection` the provider could not be reached, `invalid_response` it answered
 * without usable text.
 */
export type LlmErrorCode = 'http' | 'timeout' | 'aborted' | 'connection' | 'invalid_response';

/** Every failure of an LlmProvider surfaces as this error. */
export class LlmError extends Error {
  override readonly name = 'LlmError';
  readonly code: LlmErrorCode;
  /** HTTP status of the provider's answer, when there was one. */
  readonly status: number | undefined;

  constructor(message: string, options: { code: LlmErrorCode; status?: number; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.status = options.status;
  }
}
