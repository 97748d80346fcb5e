import { Attributes, Context, context, Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { Clock } from './clock';

const tracer = trace.getTracer('parley-voice-engine');

/** Who a turn belongs to, on every turn span. */
export interface TurnTraceIds {
  callId?: string;
  agentId?: string;
}

/**
 * The spans of one answered caller turn: `parley.turn` (from the caller's first word to the end of the answer,
 * attributes `parley.call_id` and `parley.agent_id`) with children `stt` (end of speech → the recognizer's final),
 * `llm` per model round (request → end of its stream; `first_token` event and `parley.llm.first_token_ms`) and
 * `tts` (the first synthesis request → its first audio). Times come from the engine's clock, as its stage latency
 * histogram's do. A barge-in ends whatever is open with `parley.interrupted`. With tracing off every span is the
 * no-op tracer's, so this costs a few calls per turn.
 */
export class TurnTrace {
  private readonly turn: Span;
  private readonly parent: Context;
  private llm: { span: Span; startedAt: number; firstTokenAt?: number } | undefined;
  private ttsStartedAt: number | undefined;
  private ttsDone = false;
  private ended = false;
  /** Epoch milliseconds at the engine clock's zero, taken once so every span of the turn is on one timeline. */
  private readonly origin: number;

  /** `startedAt`, `endOfSpeech` and `finalAt` are on the engine clock: the caller's first word, end of speech, final. */
  constructor(
    private readonly clock: Clock,
    ids: TurnTraceIds,
    times: { startedAt: number; endOfSpeech: number; finalAt: number },
  ) {
    this.origin = Date.now() - clock.now();
    const attributes: Attributes = { 'parley.call_id': ids.callId ?? '', ...(ids.agentId ? { 'parley.agent_id': ids.agentId } : {}) };
    this.turn = tracer.startSpan('parley.turn', { attributes, startTime: this.wall(times.startedAt), root: true });
    this.parent = trace.setSpan(context.active(), this.turn);
    this.child('stt', times.endOfSpeech).end(this.wall(times.finalAt));
  }

  /** A model round starts (its request is sent). */
  llmStarted(round: number): void {
    this.llmEnded();
    this.llm = { span: this.child('llm', this.clock.now(), { 'parley.llm.round': round }), startedAt: this.clock.now() };
  }

  /** The round's first token arrived. */
  llmFirstToken(): void {
    const llm = this.llm;
    if (!llm || llm.firstTokenAt !== undefined) return;
    llm.firstTokenAt = this.clock.now();
    llm.span.addEvent('first_token', this.wall(llm.firstTokenAt));
    llm.span.setAttribute('parley.llm.first_token_ms', Math.round(llm.firstTokenAt - llm.startedAt));
  }

  /** The round's stream ended, or failed with `error`. */
  llmEnded(error?: unknown): void {
    const llm = this.llm;
    if (!llm) return;
    this.llm = undefined;
    if (error !== undefined) llm.span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
    llm.span.end(this.wall(this.clock.now()));
  }

  /** The turn's first sentence is sent to the synthesizer. */
  synthesisStarted(): void {
    this.ttsStartedAt ??= this.clock.now();
  }

  /** The turn's first audio frame: the tts span, request to first audio. */
  firstAudio(at: number): void {
    if (this.ttsStartedAt === undefined || this.ttsDone) return;
    this.ttsDone = true;
    this.child('tts', this.ttsStartedAt).end(this.wall(at));
  }

  /** The answer was heard in full, or cut by a barge-in: open spans end here, marked when interrupted. */
  end(interrupted: boolean): void {
    if (this.ended) return;
    this.ended = true;
    const now = this.clock.now();
    if (this.llm) {
      this.llm.span.setAttribute('parley.interrupted', interrupted);
      this.llmEnded();
    }
    if (this.ttsStartedAt !== undefined && !this.ttsDone) {
      this.ttsDone = true;
      this.child('tts', this.ttsStartedAt, { 'parley.interrupted': interrupted }).end(this.wall(now));
    }
    this.turn.setAttribute('parley.interrupted', interrupted);
    this.turn.end(this.wall(now));
  }

  private child(name: string, startedAt: number, attributes?: Attributes): Span {
    return tracer.startSpan(name, { startTime: this.wall(startedAt), attributes }, this.parent);
  }

  /** Engine clock time as epoch milliseconds (the clock is performance.now() in production, a manual one in tests). */
  private wall(at: number): number {
    return this.origin + at;
  }
}
