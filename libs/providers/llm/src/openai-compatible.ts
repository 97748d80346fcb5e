import { randomBytes } from 'node:crypto';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import {
  ChatMessage,
  CompletionRequest,
  CompletionResult,
  LlmError,
  LlmProvider,
  LlmStreamEvent,
  LlmUsage,
  StreamRequest,
  ToolCall,
  ToolChoice,
  ToolDefinition,
} from './llm-provider';

type WireMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type WireTool = OpenAI.Chat.Completions.ChatCompletionFunctionTool;
type ToolCallDelta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall;

export interface OpenAiCompatibleLlmOptions {
  /** Label used in logs and error messages. Default `openai-compatible`. */
  name?: string;
  /** Base URL up to and including the version segment, e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`. */
  baseURL: string;
  /** Sent as `Authorization: Bearer …`. Omit for servers that need none (Ollama, llama.cpp, vLLM without a key). */
  apiKey?: string;
  /** Deadline of one attempt. Default 60 s. */
  timeoutMs?: number;
  /** Retries of connection errors, 408/409/429 and 5xx answers (with backoff). Default 2. */
  maxRetries?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
// The SDK refuses to start without some credential; with no key we hand it this and strip the header it makes.
const NO_KEY = 'no-key';

/**
 * An LlmProvider over any server that speaks OpenAI's `POST /v1/chat/completions`: OpenAI itself, vLLM, Ollama,
 * llama.cpp's server, LiteLLM, … Built on the official `openai` SDK; configuration is explicit (the SDK's
 * `OPENAI_*` environment defaults for key, base URL, organisation and project are not consulted).
 */
export class OpenAiCompatibleLlm implements LlmProvider {
  readonly name: string;
  private readonly client: OpenAI;

  constructor(options: OpenAiCompatibleLlmOptions) {
    this.name = options.name ?? 'openai-compatible';
    this.client = openAiClient(options);
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    const body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = requestBody(request);

    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.client.chat.completions.create(body, { signal: request.signal });
    } catch (error) {
      throw this.toLlmError(error, request);
    }

    const text = completion.choices?.[0]?.message?.content;
    if (typeof text !== 'string') {
      throw new LlmError(`${this.name}: the answer for model ${request.model} carried no message text`, {
        code: 'invalid_response',
      });
    }
    const usage = completion.usage ? { usage: { inputTokens: completion.usage.prompt_tokens ?? 0, outputTokens: completion.usage.completion_tokens ?? 0 } } : {};
    return { text, model: completion.model || request.model, ...usage };
  }

  /**
   * Lazy: the request is sent when iteration starts. Asks for the usage chunk (`stream_options.include_usage`,
   * which OpenAI, vLLM, Ollama and llama.cpp's server send after the finish reason) and reports it on `done`;
   * a server that sends none leaves `usage` out. Tool calls are assembled by `index` and emitted when the finish
   * reason arrives (or the stream ends).
   */
  async *stream(request: StreamRequest): AsyncGenerator<LlmStreamEvent, void, undefined> {
    const tools = request.tools?.length ? request.tools : undefined;
    const body: OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming = {
      ...requestBody(request),
      stream: true,
      stream_options: { include_usage: true },
      // Both only with tools: OpenAI rejects an empty `tools` and a `tool_choice` without tools.
      ...(tools ? { tools: tools.map(toWireTool) } : {}),
      ...(tools && request.toolChoice ? { tool_choice: toWireToolChoice(request.toolChoice) } : {}),
    };
    const signal = request.signal;

    let chunks: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>;
    try {
      chunks = await this.client.chat.completions.create(body, { signal });
    } catch (error) {
      throw this.toLlmError(error, request);
    }

    const calls = new ToolCallAssembler();
    let finishReason: string | undefined;
    let model = '';
    let usage: LlmUsage | undefined;
    try {
      // Leaving this loop (break, abort, a consumer's early return) makes the SDK abort the HTTP request.
      for await (const chunk of chunks) {
        // The SDK may still hand out events it had buffered before the abort.
        if (signal?.aborted) break;
        model ||= chunk.model ?? '';
        if (chunk.usage) usage = { inputTokens: chunk.usage.prompt_tokens ?? 0, outputTokens: chunk.usage.completion_tokens ?? 0 };
        const choice = chunk.choices?.[0];
        if (!choice) continue; // the usage-only chunk
        if (choice.delta?.tool_calls) calls.add(choice.delta.tool_calls);
        const text = choice.delta?.content;
        if (typeof text === 'string' && text !== '') {
          yield { type: 'text', delta: text };
          if (signal?.aborted) break;
        }
        if (choice.finish_reason) finishReason = choice.finish_reason;
        if (finishReason && calls.pending) yield { type: 'tool_calls', calls: calls.take(this.name) };
      }
    } catch (error) {
      throw this.toLlmError(error, request, 'stream');
    }
    // The SDK ends an aborted stream quietly; the caller must still learn it was cut short.
    if (signal?.aborted) throw this.toLlmError(signal.reason, request);
    if (calls.pending) yield { type: 'tool_calls', calls: calls.take(this.name) };
    if (finishReason === undefined) {
      throw new LlmError(`${this.name} (model ${request.model}): the stream ended without a finish reason`, {
        code: 'invalid_response',
      });
    }
    yield { type: 'done', finishReason, model: model || request.model, ...(usage ? { usage } : {}) };
  }

  private toLlmError(error: unknown, request: CompletionRequest, phase: 'request' | 'stream' = 'request'): LlmError {
    return toLlmError(error, `${this.name} (model ${request.model})`, request.signal, phase);
  }
}

/**
 * The SDK's client for an OpenAI-compatible server, configured explicitly (the SDK's `OPENAI_*` environment
 * defaults are not consulted): no key, no Authorization header; local fetch errors (see fetchWithLocalErrors).
 */
export function openAiClient(options: { baseURL: string; apiKey?: string; timeoutMs?: number; maxRetries?: number }): OpenAI {
  const apiKey = options.apiKey ? options.apiKey : undefined;
  return new OpenAI({
    baseURL: options.baseURL,
    apiKey: apiKey ?? NO_KEY,
    adminAPIKey: null,
    organization: null,
    project: null,
    timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
    // A null header removes the one the SDK would otherwise send.
    ...(apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
    fetch: fetchWithLocalErrors,
  });
}

/** An SDK failure as an LlmError; `where` names the provider and model, `phase` whether the answer had begun streaming. */
export function toLlmError(error: unknown, where: string, signal: AbortSignal | undefined, phase: 'request' | 'stream' = 'request'): LlmError {
  if (error instanceof LlmError) return error;
  if (error instanceof APIUserAbortError || signal?.aborted) {
    return new LlmError(`${where}: request aborted`, { code: 'aborted', cause: error });
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new LlmError(`${where}: no answer in time`, { code: 'timeout', cause: error });
  }
  if (error instanceof APIConnectionError) {
    return new LlmError(`${where}: connection failed: ${error.message}`, { code: 'connection', cause: error });
  }
  if (error instanceof APIError && error.status !== undefined) {
    return new LlmError(`${where}: provider answered ${error.message}`, {
      code: 'http',
      status: error.status,
      cause: error,
    });
  }
  const { name, message } = describe(error);
  // Past the headers, anything but a provider error or unparsable data is the connection breaking off
  // (undici's `terminated`).
  if (phase === 'stream' && !(error instanceof APIError) && name !== 'SyntaxError') {
    return new LlmError(`${where}: stream broke off: ${message}`, { code: 'connection', cause: error });
  }
  return new LlmError(`${where}: ${message}`, { code: 'invalid_response', cause: error });
}

function requestBody(request: CompletionRequest) {
  return {
    model: request.model,
    messages: request.messages.map(toWireMessage),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    // `max_tokens` rather than `max_completion_tokens`: it is the one every compatible server understands.
    ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
    ...(request.json ? { response_format: { type: 'json_object' as const } } : {}),
  };
}

function toWireMessage(message: ChatMessage): WireMessage {
  switch (message.role) {
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant':
      if (!message.toolCalls?.length) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        // null, not '', for a turn of only tool calls: the form OpenAI itself returns, accepted by every server.
        content: message.content === '' ? null : message.content,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    default:
      return { role: message.role, content: message.content };
  }
}

function toWireTool(tool: ToolDefinition): WireTool {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/** Gathers the pieces of streamed tool calls: id and name arrive once, the arguments in fragments. */
class ToolCallAssembler {
  private readonly slots = new Map<number, { id: string; name: string; arguments: string }>();
  private lastKey = -1;

  get pending(): boolean {
    return this.slots.size > 0;
  }

  add(deltas: ToolCallDelta[]): void {
    for (const delta of deltas) {
      const key = this.keyOf(delta);
      const slot = this.slots.get(key) ?? { id: '', name: '', arguments: '' };
      this.slots.set(key, slot);
      this.lastKey = key;
      if (delta.id) slot.id = delta.id;
      if (delta.function?.name) slot.name = delta.function.name;
      if (delta.function?.arguments) slot.arguments += delta.function.arguments;
    }
  }

  /** The complete calls in index order; the assembler is then empty. */
  take(provider: string): ToolCall[] {
    const calls = [...this.slots.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, slot]) => {
        if (!slot.name) {
          throw new LlmError(`${provider}: a streamed tool call carried no function name`, { code: 'invalid_response' });
        }
        // Servers that omit the id still need one to match the tool's result to the call.
        return { id: slot.id || `call_${randomBytes(12).toString('base64url')}`, name: slot.name, arguments: slot.arguments };
      });
    this.slots.clear();
    return calls;
  }

  // `index` is standard, but some servers (older Ollama) leave it out: a new id, or a name once the last call has
  // one, opens a new call; anything else continues the last one.
  private keyOf(delta: ToolCallDelta): number {
    if (typeof delta.index === 'number') return delta.index;
    if (delta.id) for (const [key, slot] of this.slots) if (slot.id === delta.id) return key;
    const last = this.slots.get(this.lastKey);
    if (last && !delta.id && !(delta.function?.name && last.name)) return this.lastKey;
    return Math.max(-1, ...this.slots.keys()) + 1;
  }
}

function describe(error: unknown): { name: string | undefined; message: string } {
  if (typeof error === 'object' && error !== null) {
    const { name, message } = error as { name?: unknown; message?: unknown };
    if (typeof message === 'string') return { name: typeof name === 'string' ? name : undefined, message };
  }
  return { name: undefined, message: String(error) };
}

/**
 * `fetch`, with its failures re-thrown as Errors of this realm. The SDK tells a timeout from other connection
 * failures by `instanceof Error` and the name `AbortError`; fetch's DOMException comes from Node's own realm, which
 * is not this one under a sandbox such as Jest's, and would then be reported as a plain connection error.
 */
async function fetchWithLocalErrors(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (error) {
    if (error instanceof Error || typeof error !== 'object' || error === null) throw error;
    const { name, message } = error as { name?: unknown; message?: unknown };
    const local = new Error(typeof message === 'string' ? message : String(error), { cause: error });
    if (typeof name === 'string') local.name = name;
    throw local;
  }
}

/** A named tool is OpenAI's `{ type: 'function', function: { name } }`; the keywords go as they are. */
function toWireToolChoice(choice: ToolChoice): OpenAI.Chat.Completions.ChatCompletionToolChoiceOption {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
}
