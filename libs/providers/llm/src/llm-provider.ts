// The one seam between Parley and a language model. Everything that needs a completion (post-call analysis, …)
// takes an LlmProvider; production wires OpenAiCompatibleLlm, unit tests wire FakeLlm.

/**
 * One message of a conversation. A discriminated union on `role`, so plain `{ role, content }` literals of the
 * first three roles stay valid while assistant tool calls and tool results carry what the protocol needs.
 */
export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage;

export interface SystemMessage {
  role: 'system';
  content: string;
}

export interface UserMessage {
  role: 'user';
  content: string;
}

export interface AssistantMessage {
  role: 'assistant';
  /** May be empty when the turn was only tool calls. */
  content: string;
  /** The tool calls the model made in this turn, to replay them in the history before their results. */
  toolCalls?: ToolCall[];
}

/** The result of one tool call, answering the assistant message that made it. */
export interface ToolResultMessage {
  role: 'tool';
  toolCallId: string;
  content: string;
}

/** A function the model may call. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/** A complete tool call made by the model. */
export interface ToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model produced it: not parsed, since models do emit invalid JSON. */
  arguments: string;
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
  /** The tokens the answer used, as the provider reported them (absent when it reported none). */
  usage?: LlmUsage;
}

/** `auto`, `none`, `required` (some tool), or this one tool (a flow node's `tool`). */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

export interface StreamRequest extends CompletionRequest {
  /** Functions offered to the model; an empty list is the same as none. */
  tools?: ToolDefinition[];
  /** Only sent along with tools. Default: the server's (`auto` when tools are given). */
  toolChoice?: ToolChoice;
}

/**
 * What a stream yields: text as it arrives; the tool calls once, complete, after all their pieces arrived; then
 * `done` last (`finishReason` as the provider reports it: `stop`, `length`, `tool_calls`, …).
 */
export type LlmStreamEvent =
  | { type: 'text'; delta: string }
  | { type: 'tool_calls'; calls: ToolCall[] }
  | { type: 'done'; finishReason: string; model: string; usage?: LlmUsage };

/** The tokens an answer used, as the provider reported them (absent when it reported none). */
export interface LlmUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface LlmProvider {
  readonly name: string;
  complete(request: CompletionRequest): Promise<CompletionResult>;
  /**
   * Streams one answer. Aborting `request.signal` ends the iteration at once with an `aborted` LlmError and
   * cancels the request; leaving the loop early (break) cancels it too. Failures are LlmErrors.
   */
  stream(request: StreamRequest): AsyncIterable<LlmStreamEvent>;
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
