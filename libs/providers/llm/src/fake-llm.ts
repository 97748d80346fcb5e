import {
  CompletionRequest,
  CompletionResult,
  LlmError,
  LlmProvider,
  LlmStreamEvent,
  LlmUsage,
  StreamRequest,
  ToolCall,
} from './llm-provider';

/**
 * A scripted answer shaped for `stream()`: text as these exact deltas and/or tool calls, with optional timing.
 * `complete()` answers with the joined deltas (no delays, tool calls ignored).
 */
export interface FakeLlmStreamReply {
  deltas?: string[];
  /** Emitted as one `tool_calls` event after the deltas. */
  toolCalls?: ToolCall[];
  /** Wait before the first event. */
  firstTokenDelayMs?: number;
  /** Wait before every event after the first. */
  deltaDelayMs?: number;
  /** Default `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
  /** Reported model; default the requested one. */
  model?: string;
  /** Fail with this after the deltas (and any tool calls) were streamed: a provider breaking off mid-answer. */
  error?: Error;
  /** The tokens reported on `done` (as an OpenAI-compatible API's usage chunk); absent: none reported. */
  usage?: LlmUsage;
}

type FakeLlmAnswer = string | CompletionResult | FakeLlmStreamReply;

/**
 * One scripted answer: the text (reported as the requested model; streamed in word-sized deltas), a full result
 * (to report another model), a stream reply, an error to throw, or a function of the request giving any answer.
 */
export type FakeLlmReply = FakeLlmAnswer | Error | ((request: StreamRequest) => FakeLlmAnswer | Promise<FakeLlmAnswer>);

export interface FakeLlmOptions {
  name?: string;
  /** Answer given once the scripted replies are used up; without it, an extra call fails. */
  fallback?: FakeLlmReply;
}

/**
 * In-memory LlmProvider for unit tests: answers `complete()` and `stream()` calls from one script, in order, and
 * records every request. Honours the request's AbortSignal (an aborted request fails with an `aborted` LlmError,
 * consuming no reply; a stream aborted midway fails at once, delays included).
 */
export class FakeLlm implements LlmProvider {
  readonly name: string;
  /** Every request received, in order (the signal and any tools included). */
  readonly requests: StreamRequest[] = [];
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
  get lastRequest(): StreamRequest | undefined {
    return this.requests[this.requests.length - 1];
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    const next = this.take(request);
    if (next instanceof Error) throw next;
    const answer = typeof next === 'function' ? await next(request) : next;
    if (typeof answer === 'string') return { text: answer, model: request.model };
    if (isResult(answer)) return { ...answer };
    if (answer.error) throw answer.error;
    return { text: (answer.deltas ?? []).join(''), model: answer.model ?? request.model };
  }

  /** Records the request and takes its reply when called (not when iteration starts), so calls keep script order. */
  stream(request: StreamRequest): AsyncIterable<LlmStreamEvent> {
    let next: FakeLlmReply | LlmError;
    try {
      next = this.take(request);
    } catch (error) {
      next = error as LlmError;
    }
    return this.play(next, request);
  }

  private async *play(next: FakeLlmReply | LlmError, request: StreamRequest): AsyncGenerator<LlmStreamEvent> {
    if (next instanceof Error) throw next;
    const signal = request.signal;
    const answer = typeof next === 'function' ? await next(request) : next;
    const reply: FakeLlmStreamReply =
      typeof answer === 'string'
        ? { deltas: words(answer) }
        : isResult(answer)
          ? { deltas: words(answer.text), model: answer.model }
          : answer;

    const calls = reply.toolCalls?.length ? reply.toolCalls.map((c) => ({ ...c })) : undefined;
    const events: LlmStreamEvent[] = [
      ...(reply.deltas ?? []).filter((d) => d !== '').map((delta) => ({ type: 'text' as const, delta })),
      ...(calls ? [{ type: 'tool_calls' as const, calls }] : []),
    ];
    for (const [i, event] of events.entries()) {
      await this.pause(i === 0 ? reply.firstTokenDelayMs : reply.deltaDelayMs, signal);
      yield event;
    }
    if (events.length === 0) await this.pause(reply.firstTokenDelayMs, signal);
    this.throwIfAborted(signal);
    if (reply.error) throw reply.error;
    yield {
      type: 'done',
      finishReason: reply.finishReason ?? (calls ? 'tool_calls' : 'stop'),
      model: reply.model ?? request.model,
      ...(reply.usage ? { usage: reply.usage } : {}),
    };
  }

  private take(request: StreamRequest): FakeLlmReply {
    this.requests.push(request);
    this.throwIfAborted(request.signal);
    const next = this.script.length > 0 ? this.script.shift() : this.fallback;
    if (next === undefined) {
      throw new LlmError(`${this.name}: no scripted reply left for call ${this.requests.length}`, {
        code: 'invalid_response',
      });
    }
    return next;
  }

  private throwIfAborted(signal: AbortSignal | undefined): void {
    if (signal?.aborted) {
      throw new LlmError(`${this.name}: request aborted`, { code: 'aborted', cause: signal.reason });
    }
  }

  /** Sleeps, but wakes (and fails) the moment the signal fires. */
  private async pause(ms: number | undefined, signal: AbortSignal | undefined): Promise<void> {
    this.throwIfAborted(signal);
    if (!ms || ms <= 0) return;
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      signal?.addEventListener('abort', wake, { once: true });
    });
    this.throwIfAborted(signal);
  }
}

function isResult(answer: FakeLlmAnswer): answer is CompletionResult {
  return typeof answer === 'object' && 'text' in answer;
}

/** Word-sized pieces, whitespace kept, so the deltas join back to the text exactly. */
function words(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}
