import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { CompletionRequest, CompletionResult, LlmError, LlmProvider } from './llm-provider';

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
    const apiKey = options.apiKey ? options.apiKey : undefined;
    this.client = new OpenAI({
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

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    const body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
      model: request.model,
      messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      // `max_tokens` rather than `max_completion_tokens`: it is the one every compatible server understands.
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
      ...(request.json ? { response_format: { type: 'json_object' as const } } : {}),
    };

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
    return { text, model: completion.model || request.model };
  }

  private toLlmError(error: unknown, request: CompletionRequest): LlmError {
    if (error instanceof LlmError) return error;
    const where = `${this.name} (model ${request.model})`;
    if (error instanceof APIUserAbortError || request.signal?.aborted) {
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
    const message = error instanceof Error ? error.message : String(error);
    return new LlmError(`${where}: ${message}`, { code: 'invalid_response', cause: error });
  }
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
