import { ChatMessage, LlmProvider, ToolCall } from '@parley/llm';
import type { EgressPolicy, Resolver } from '@parley/egress';
import { Resampler } from '@parley/audio';
import { SpeechError, SpeechToText, SttEvent, SttStream, TextToSpeech } from '@parley/speech';
import { AgentSettings, FlowEdge, FlowNode, LanguageSettings, fillVariables } from './agent-settings';
import { Clock } from './clock';
import { engineMetrics } from './metrics';
import { AudioSink, FRAME_MS, Playout } from './playout';
import { SentenceChunker } from './sentences';
import { EnergyVad } from './vad';
import {
  notifyTransfer,
  offeredTools,
  OfferedTool,
  preToolLine,
  runBookAppointment,
  runCalendarAvailability,
  runCustomFunction,
  runRegisteredFunction,
  ToolOutcome,
  ToolRuntime,
  transferReason,
} from './tools';

export interface EngineTurn {
  role: 'user' | 'assistant';
  text: string;
  language: string;
  startMs: number;
  endMs: number;
  interrupted: boolean;
}

/** What the engine asks of whoever hosts the call (the media worker's session, or a test). */
export interface EngineHost {
  sink: AudioSink;
  clock: Clock;
  /** A completed turn, in order. */
  onTurn(turn: EngineTurn): void;
  /** The engine is done with the call (`silence`, `max_duration`, `agent`, `completed`, `no_input`). */
  hangup(reason: string): void;
  /** Moves the call to `destination`; rejects when it could not (the agent then says so and carries on). */
  transfer(destination: string): Promise<void>;
  /** One tool invocation, for call.tool.called. */
  recordToolCall?(report: ToolCallReport): void;
  /** The caller asked not to be contacted again (call.opt_out). */
  recordOptOut?(): Promise<void>;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

/** A tool invocation as reported (call.tool.called). */
export interface ToolCallReport {
  name: string;
  /** end_call, record_opt_out, custom_function, registered_function, transfer_call, or unknown. */
  kind: string;
  /** The arguments as the model wrote them (JSON text). */
  arguments: string;
  ok: boolean;
  error?: string;
}

export interface EngineProviders {
  /** Every recognizer the deployment configured; the language entry's first choice is tried first. */
  stt: SpeechToText[];
  tts: TextToSpeech[];
  llm: LlmProvider;
}

export interface EngineOptions {
  /** Sample rate of audio in and out (8000 on a phone line). */
  sampleRate: number;
  variables?: Record<string, string>;
  /** Whether the sink's marks come back (carrier streams: yes). */
  marksEchoed?: boolean;
  /** Give up on a synthesizer that has produced no audio after this long and try the next. */
  ttsFirstAudioTimeoutMs?: number;
  /** The call's id, sent to transfer webhooks. */
  callId?: string;
  /**
   * Outbound requests of tools: the guard's allowlist (EGRESS_ALLOWLIST), the http-allowed hosts, and the Cal.com
   * API the calendar tools call (CALENDAR_BASE_URL, default https://api.cal.com).
   */
  tools?: { egress: EgressPolicy; internalHosts?: string[]; calendarBaseUrl?: string; resolve?: Resolver; lookup?: Resolver };
  /**
   * Clock time the call's timeline starts at: the media stream's start, so turn offsets and the recording share one
   * origin (reading the call and agent before the engine exists takes time). Default: when the engine is created.
   */
  startedAt?: number;
  /**
   * The stream resumes a conversation (a transfer that did not connect): no greeting; the agent picks up from
   * `turns` (the call's transcript so far) and tells the caller what happened.
   */
  resume?: { reason: string; turns: { role: 'user' | 'assistant'; text: string }[] };
}

/** Words that stop the agent whatever interrupt_words says. */
const STOP_WORDS = new Set(['stop', 'wait', 'hold', 'pause', 'quiet', 'enough']);
/** A caller who talks this long over the agent interrupts it, words or not. */
const KEEP_TALKING_MS = 1500;
const BUILT_IN = {
  silencePrompt: 'Are you still there?',
  goodbye: 'Goodbye.',
  trouble: 'Sorry, I am having trouble right now. Please try again later.',
  transferFailed: 'I am sorry, I could not reach them. Is there anything else I can help you with?',
  transferFailedGoodbye: 'I am sorry, I could not reach anyone. Please try again later. Goodbye.',
  invalidKey: 'Sorry, that is not an option.',
};
/** Ends a sentence early in a spoken stream: what is pending is synthesized now (before a tool runs). */
const FLUSH = Symbol('flush');
type Spoken = string | typeof FLUSH;

interface AgentTurn {
  controller: AbortController;
  interruptible: boolean;
  /** Sentences spoken so far, by playout segment. */
  segments: { id: number; text: string }[];
  startMs: number;
  firstAudioAt?: number;
}

/**
 * One call's conversation: inbound audio → VAD → streaming STT → end of turn → LLM → sentences → TTS → paced
 * playback, every stage of an agent turn sharing one AbortController so barge-in stops them all at once. Also
 * the keypad (DTMF menu from the flow's static nodes) and normal (greeting then transfer) modes.
 */
export class CallEngine {
  private readonly playout: Playout;
  private readonly vad = new EnergyVad();
  private readonly startedAt: number;
  private language: LanguageSettings;
  private stt: SttStream | undefined;
  private sttIndex = 0;
  private turn: AgentTurn | undefined;
  private history: ChatMessage[] = [];
  private userText = '';
  private partialText = '';
  private speechStartedAt: number | undefined;
  /** The VAD's end of the caller's current utterance; undefined while it lasts and once a turn took it. */
  private endOfSpeechAt: number | undefined;
  /** The recognizer ended the current utterance's turn: the VAD's later end of it is no new end of speech. */
  private utteranceTaken = false;
  private silenceTimers: unknown[] = [];
  private maxTimer: unknown;
  private ended = false;
  private node: FlowNode | undefined;
  private keypadTimer: unknown;
  private noInputRounds = 0;
  private readonly toolset: OfferedTool[];
  /** The carrier took the call elsewhere: the agent says nothing more. */
  private transferred = false;
  /** Built-in lines written by the model for non-English languages, by `language:kind`. */
  private readonly lines = new Map<string, string>();
  private readonly preparing = new Set<string>();

  constructor(
    private readonly settings: AgentSettings,
    private readonly providers: EngineProviders,
    private readonly host: EngineHost,
    private readonly options: EngineOptions,
  ) {
    this.playout = new Playout(host.sink, host.clock, options.sampleRate, options.marksEchoed ?? true);
    this.startedAt = options.startedAt ?? host.clock.now();
    this.language = settings.languages[0];
    this.toolset = settings.mode === 'conversation' ? offeredTools(settings.tools) : [];
  }

  /** Opens the call: the greeting of the opening language, exactly as written. */
  async start(): Promise<void> {
    engineMetrics.callsInProgress.inc();
    if (this.settings.maxCallSeconds) {
      this.maxTimer = this.host.clock.setTimeout(() => void this.goodbye('max_duration'), this.settings.maxCallSeconds * 1000);
    }
    if (this.settings.mode === 'keypad') return this.enterNode(this.startNode());
    if (this.settings.mode === 'conversation') await this.openStt();
    this.prepareLines(this.language);
    const resume = this.options.resume;
    if (resume) {
      this.log('conversation resumed', { reason: resume.reason });
      if (this.settings.mode !== 'conversation') {
        // Without a model there is nothing else to offer: say so and end, never transfer again in a loop.
        await this.say(BUILT_IN.transferFailedGoodbye, { interruptible: false });
        return this.finish('completed');
      }
      this.history.push(...resume.turns.map((t) => ({ role: t.role, content: t.text })));
      await this.say(BUILT_IN.transferFailed, { interruptible: true });
      if (!this.ended) this.armSilence();
      return;
    }
    const greeting = this.fill(this.language.greeting);
    if (greeting) await this.say(greeting, { interruptible: this.settings.mode === 'conversation' });
    if (this.ended) return;
    if (this.settings.mode === 'normal') {
      if (this.settings.transferNumber) await this.host.transfer(this.settings.transferNumber);
      else this.finish('completed');
      return;
    }
    this.armSilence();
  }

  /** One inbound frame of PCM16 at the engine's sample rate. */
  pushAudio(frame: Int16Array): void {
    if (this.ended || this.settings.mode !== 'conversation') return;
    this.stt?.write(frame);
    const change = this.vad.push(frame, (frame.length * 1000) / this.options.sampleRate);
    const now = this.host.clock.now();
    if (change === 'speech_start') {
      this.speechStartedAt = now;
      this.endOfSpeechAt = undefined;
      this.utteranceTaken = false;
      this.disarmSilence();
    } else if (change === 'speech_end') {
      if (!this.utteranceTaken) this.endOfSpeechAt = now;
      this.stt?.finalize();
      // Quiet is counted from the caller's last words, whether or not they made a turn.
      if (!this.turn) this.armSilence();
    }
    // Talking over the agent counts from when both are talking: the tail of the caller's own turn (the recognizer
    // ended it while the VAD's hangover still says speech) is not talking over the answer to it.
    const turn = this.turn;
    if (
      this.vad.speaking &&
      this.speechStartedAt !== undefined &&
      turn?.interruptible &&
      turn.firstAudioAt !== undefined &&
      now - Math.max(this.speechStartedAt, turn.firstAudioAt) >= KEEP_TALKING_MS
    ) {
      this.interrupt('kept talking');
    }
  }

  /** A key the caller pressed. */
  pushDtmf(digit: string): void {
    if (this.ended || this.settings.mode !== 'keypad' || !this.node) return;
    const node = this.node;
    this.host.clock.clearTimeout(this.keypadTimer);
    // A key pressed during the menu stops the menu: the caller knows what they want.
    if (this.turn) this.interrupt('key pressed');
    this.noInputRounds = 0;
    this.host.onTurn({ role: 'user', text: digit, language: this.language.code, startMs: this.offset(), endMs: this.offset(), interrupted: false });
    const next = this.route(node, { digit });
    if (next) void this.enterNode(next);
    else void this.say(BUILT_IN.invalidKey, { interruptible: true }).then(() => this.enterNode(node));
  }

  /**
   * The carrier's machine detection heard an answering machine and the agent's `voicemail` is `message`: whatever
   * the agent was saying stops, `message` (with {{variables}}) is spoken to the recording, then the call ends
   * (`voicemail`).
   */
  async leaveVoicemail(message: string): Promise<void> {
    if (this.ended) return;
    this.clearTimers();
    this.cut();
    const line = this.fill(message);
    if (line) await this.say(line, { interruptible: false });
    this.finish('voicemail');
  }

  /** The carrier confirmed playback up to a mark. */
  onMark(name: string): void {
    this.playout.onMark(name);
  }

  /** The call is over from the outside (caller hung up, stream closed): stop every stage. */
  async stop(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.cut();
    this.clearTimers();
    engineMetrics.callsInProgress.dec();
    await this.stt?.close().catch(() => undefined);
  }

  // ---- conversation ----------------------------------------------------------------------------------------

  private async openStt(): Promise<void> {
    const order = this.ordered(this.providers.stt, this.language.sttProvider);
    for (; this.sttIndex < order.length; this.sttIndex++) {
      const provider = order[this.sttIndex];
      try {
        this.stt = await provider.open(
          // Following the caller's language needs a recognizer that detects it (Deepgram: `multi`).
          { language: this.settings.languageDetection === 'follow' ? 'multi' : this.language.code, sampleRate: this.options.sampleRate },
          { onTranscript: (e) => this.onTranscript(e), onError: (e) => void this.sttFailed(provider.name, e) },
        );
        return;
      } catch (error) {
        this.log('recognizer failed to open', { provider: provider.name, err: String(error) });
        const next = order[this.sttIndex + 1];
        if (next) engineMetrics.fallbacks.inc({ kind: 'stt', from: provider.name, to: next.name });
      }
    }
    this.log('no recognizer available');
  }

  private async sttFailed(name: string, error: SpeechError): Promise<void> {
    if (this.ended) return;
    this.log('recognizer failed', { provider: name, err: error.message });
    const order = this.ordered(this.providers.stt, this.language.sttProvider);
    const next = order[this.sttIndex + 1];
    if (!next) return;
    engineMetrics.fallbacks.inc({ kind: 'stt', from: name, to: next.name });
    this.sttIndex++;
    await this.openStt();
  }

  private onTranscript(event: SttEvent): void {
    if (this.ended) return;
    if (event.type === 'partial') {
      this.partialText = event.text;
      this.considerBargeIn(`${this.userText} ${event.text}`, false);
      return;
    }
    if (event.text && event.language) this.follow(event.language);
    if (event.text) this.userText = `${this.userText} ${event.text}`.trim();
    this.partialText = '';
    const endOfSpeech = event.endOfTurn && this.userText ? this.takeEndOfSpeech() : undefined;
    if (endOfSpeech !== undefined) engineMetrics.stageLatency.observe({ stage: 'stt_final' }, (this.host.clock.now() - endOfSpeech) / 1000);
    // A final that interrupts is still the caller's turn: when it ends the turn, it is answered like any other.
    this.considerBargeIn(this.userText, true);
    if (endOfSpeech === undefined) return;
    if (this.turn) {
      // The agent kept the floor (too few words to interrupt): a backchannel such as "mm-hm", not a turn.
      this.userText = '';
      return;
    }
    this.commitUserTurn(endOfSpeech);
  }

  /**
   * The end of speech of the turn the recognizer just ended, which its stages are timed from: the VAD's end of
   * this utterance, or now when the recognizer's endpointing (shorter than the VAD's hangover) ended it first.
   * Never an earlier utterance's: the VAD's end is cleared when speech starts again and once a turn takes it.
   */
  private takeEndOfSpeech(): number {
    const at = this.endOfSpeechAt ?? this.host.clock.now();
    this.endOfSpeechAt = undefined;
    this.utteranceTaken = true;
    return at;
  }

  /**
   * `language_detection: follow`: the caller spoke another configured language, so the agent moves to that
   * entry (its prompt, voice and synthesizer; the recognizer keeps detecting). Matched on the primary subtag.
   */
  private follow(detected: string): void {
    if (this.settings.languageDetection !== 'follow') return;
    const base = (code: string) => code.split(/[-_]/)[0].toLowerCase();
    if (base(detected) === base(this.language.code)) return;
    const next = this.settings.languages.find((l) => l.code.toLowerCase() === detected.toLowerCase()) ?? this.settings.languages.find((l) => base(l.code) === base(detected));
    if (!next) return;
    this.log('language followed', { from: this.language.code, to: next.code });
    this.language = next;
    this.prepareLines(next);
  }

  /** Interrupts the agent when the caller's words call for it; true when it did. */
  private considerBargeIn(text: string, final: boolean): boolean {
    const turn = this.turn;
    if (!turn?.interruptible) return false;
    const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
    const phrase = words.join(' ');
    const byPhrase = final && this.settings.interruptPhrases.some((p) => normalise(p) === phrase);
    if (words.length >= this.settings.interruptWords || words.some((w) => STOP_WORDS.has(w)) || byPhrase) {
      this.interrupt(byPhrase ? 'interrupt phrase' : 'caller words');
      return true;
    }
    return false;
  }

  private commitUserTurn(endOfSpeech: number): void {
    this.disarmSilence();
    const text = this.userText;
    this.userText = '';
    const endMs = this.offset();
    const startMs = this.speechStartedAt !== undefined ? this.speechStartedAt - this.startedAt : endMs;
    this.host.onTurn({ role: 'user', text, language: this.language.code, startMs, endMs, interrupted: false });
    this.history.push({ role: 'user', content: text });
    void this.reply(endOfSpeech);
  }

  /**
   * The answer to a caller's turn: the model streams text (spoken as it comes) and may call tools; the tools run
   * (their pre-tool line or the filler spoken meanwhile), their results go back as tool messages and the model is
   * asked again, at most `maxToolRounds` times per turn (the last time with tool_choice none). The whole answer
   * is one agent turn: one AbortController stops the model, the tools' requests and the speech together.
   */
  private async reply(endOfSpeech: number): Promise<void> {
    const messages: ChatMessage[] = [
      ...(this.language.systemPrompt ? [{ role: 'system' as const, content: this.fill(this.language.systemPrompt) }] : []),
      ...this.history,
    ];
    const state = { endCall: false };
    const result = await this.speak((signal, turn) => this.answer(messages, state, endOfSpeech, signal, turn), {
      interruptible: true,
      endOfSpeechAt: endOfSpeech,
    });
    if (this.ended || this.transferred) return;
    if (state.endCall && !result.interrupted) return this.finish('agent');
    if (!result.interrupted) this.armSilence();
  }

  /** The answer's text as the model streams it, round after round of tool calls (see reply). */
  private async *answer(messages: ChatMessage[], state: { endCall: boolean }, endOfSpeech: number, signal: AbortSignal, turn: AgentTurn): AsyncIterable<Spoken> {
    const definitions = this.toolset.map((t) => t.definition);
    const maxRounds = this.settings.tools.maxToolRounds;
    let first = true;
    const exchange: ChatMessage[] = [];
    for (let round = 0; ; round++) {
      const last = round >= maxRounds;
      let said = '';
      let calls: ToolCall[] = [];
      try {
        for await (const event of this.providers.llm.stream({
          model: this.settings.model,
          messages: [...messages, ...exchange],
          temperature: this.settings.temperature,
          maxTokens: this.settings.maxTokens,
          tools: definitions.length ? definitions : undefined,
          toolChoice: last && definitions.length ? 'none' : undefined,
          signal,
        })) {
          if (event.type === 'text' && event.delta) {
            if (first) engineMetrics.stageLatency.observe({ stage: 'llm_first_token' }, (this.host.clock.now() - endOfSpeech) / 1000);
            first = false;
            said += event.delta;
            yield event.delta;
          } else if (event.type === 'tool_calls') {
            calls = event.calls;
          }
        }
      } catch (error) {
        if (signal.aborted) return;
        this.log('model failed', { err: String(error) });
        yield BUILT_IN.trouble;
        return;
      }
      if (signal.aborted) return;
      const ending = calls.filter((c) => c.name === 'end_call' && this.toolset.some((t) => t.kind === 'end_call'));
      if (ending.length) {
        state.endCall = true;
        this.report({ name: 'end_call', kind: 'end_call', arguments: ending[0].arguments || '{}', ok: true });
      }
      // Past the last round the model was told to answer in words; any tool call it still makes is dropped.
      const work = last ? [] : calls.filter((c) => !ending.includes(c));
      if (!work.length) return;
      yield FLUSH;
      const line = this.toolLine(work);
      if (line) {
        yield this.fill(line);
        yield FLUSH;
      }
      const outcomes = await Promise.all(work.map((call) => this.runTool(call, signal, turn)));
      if (signal.aborted || this.ended) return;
      const results = work.map((call, i) => ({ role: 'tool' as const, toolCallId: call.id, content: outcomes[i].result }));
      exchange.push({ role: 'assistant', content: said, toolCalls: work }, ...results);
      // The history keeps the exchange; what was said is in the turn's own text, recorded after it.
      this.history.push({ role: 'assistant', content: '', toolCalls: work }, ...results);
      if (state.endCall || this.transferred) return;
    }
  }

  // ---- tools -------------------------------------------------------------------------------------------------

  /** The line spoken while a round's tools run: the first pre-tool message in the call's language, else the filler. */
  private toolLine(calls: ToolCall[]): string {
    for (const call of calls) {
      const tool = this.toolset.find((t) => t.definition.name === call.name);
      if (!tool || tool.kind === 'end_call' || tool.kind === 'record_opt_out') continue;
      const line = preToolLine(tool, this.language.code, '');
      if (line) return line;
    }
    const runs = calls.some((c) => this.toolset.some((t) => t.definition.name === c.name && t.kind !== 'record_opt_out' && t.kind !== 'end_call'));
    return runs ? this.settings.tools.fillerPhrase : '';
  }

  /** Runs one tool call and reports it (call.tool.called); the outcome's text goes back to the model. */
  private async runTool(call: ToolCall, signal: AbortSignal, turn: AgentTurn): Promise<ToolOutcome> {
    const tool = this.toolset.find((t) => t.definition.name === call.name);
    const args = call.arguments || '{}';
    let outcome: ToolOutcome;
    if (!tool) {
      outcome = { ok: false, result: `There is no tool named "${call.name}".`, error: 'unknown tool' };
    } else {
      const rt: ToolRuntime = {
        egress: this.options.tools?.egress ?? { allowlist: [] },
        internalHosts: this.options.tools?.internalHosts ?? [],
        calendarBaseUrl: this.options.tools?.calendarBaseUrl,
        clock: this.host.clock,
        signal,
        log: (m, f) => this.log(m, { tool: call.name, ...f }),
        resolve: this.options.tools?.resolve,
        lookup: this.options.tools?.lookup,
      };
      try {
        switch (tool.kind) {
          case 'custom_function':
            outcome = await runCustomFunction(tool.config, args, rt);
            break;
          case 'registered_function':
            outcome = await runRegisteredFunction(tool.fn, args, rt);
            break;
          case 'calendar_availability':
            outcome = await runCalendarAvailability(tool.config, args, rt);
            break;
          case 'book_appointment':
            outcome = await runBookAppointment(tool.config, args, rt);
            break;
          case 'transfer_call':
            outcome = await this.transferTool(tool, args, rt, turn);
            break;
          case 'record_opt_out':
            outcome = await this.optOut();
            break;
          default:
            outcome = { ok: true, result: 'Done.' };
        }
      } catch (error) {
        this.log('tool failed', { tool: call.name, err: String(error) });
        outcome = { ok: false, result: 'The tool call failed.', error: 'internal error' };
      }
    }
    this.report({ name: call.name, kind: tool?.kind ?? 'unknown', arguments: args, ok: outcome.ok, ...(outcome.error ? { error: outcome.error } : {}) });
    return outcome;
  }

  /**
   * transfer_call: the destination comes from configuration, never from the model. The webhook (if any) is told
   * first and waited on at most 3 s; then, once the caller has heard what was said so far, the host moves the
   * call. Refused by the carrier or the calls service: the model hears so and tells the caller.
   */
  private async transferTool(tool: Extract<OfferedTool, { kind: 'transfer_call' }>, args: string, rt: ToolRuntime, turn: AgentTurn): Promise<ToolOutcome> {
    const reason = transferReason(args);
    if (tool.webhookUrl) {
      const told = await notifyTransfer(tool.webhookUrl, { callId: this.options.callId ?? '', tool: tool.definition.name, destination: tool.destination, reason }, rt);
      if (!told.ok) this.log('transfer webhook not confirmed; transferring anyway', { err: told.error });
    }
    if (rt.signal.aborted) return { ok: false, result: 'The transfer was cancelled.', error: 'interrupted' };
    await Promise.all(turn.segments.map((s) => this.playout.played(s.id)));
    if (rt.signal.aborted) return { ok: false, result: 'The transfer was cancelled.', error: 'interrupted' };
    try {
      await this.host.transfer(tool.destination);
    } catch (error) {
      this.log('transfer failed', { err: String(error) });
      return {
        ok: false,
        result: 'The transfer did not go through: the caller is still with you. Tell them you could not put them through, and keep helping.',
        error: 'transfer failed',
      };
    }
    this.transferred = true;
    // The carrier has the call now: no silence prompt, no goodbye at max_call_seconds.
    this.clearTimers();
    return { ok: true, result: 'The caller is being transferred. Say nothing more.' };
  }

  private async optOut(): Promise<ToolOutcome> {
    if (!this.host.recordOptOut) return { ok: false, result: 'The request could not be recorded right now.', error: 'not available' };
    try {
      await this.host.recordOptOut();
      return { ok: true, result: 'Recorded: this number will not be contacted again. Confirm it to the caller.' };
    } catch (error) {
      this.log('opt-out not recorded', { err: String(error) });
      return { ok: false, result: 'The request could not be recorded right now. Apologise and tell the caller it will be passed on.', error: 'not recorded' };
    }
  }

  private report(report: ToolCallReport): void {
    try {
      this.host.recordToolCall?.(report);
    } catch (error) {
      this.log('tool call not reported', { err: String(error) });
    }
  }

  // ---- speaking ----------------------------------------------------------------------------------------------

  private say(line: string, options: { interruptible: boolean }): Promise<{ interrupted: boolean }> {
    return this.speak(async function* () {
      yield line;
    }, options);
  }

  /**
   * Speaks streamed text sentence by sentence and records the assistant turn, cut to what the caller heard when
   * interrupted.
   */
  private async speak(
    source: (signal: AbortSignal, turn: AgentTurn) => AsyncIterable<Spoken>,
    options: { interruptible: boolean; endOfSpeechAt?: number },
  ): Promise<{ interrupted: boolean }> {
    if (this.ended) return { interrupted: true };
    this.cut();
    const turn: AgentTurn = { controller: new AbortController(), interruptible: options.interruptible, segments: [], startMs: this.offset() };
    this.turn = turn;
    const signal = turn.controller.signal;
    const chunker = new SentenceChunker();
    const sentence = async (text: string) => {
      const id = this.playout.open();
      turn.segments.push({ id, text });
      await this.synthesize(id, text, signal, () => {
        if (turn.firstAudioAt !== undefined) return;
        turn.firstAudioAt = this.host.clock.now();
        if (options.endOfSpeechAt !== undefined) {
          engineMetrics.stageLatency.observe({ stage: 'response' }, (turn.firstAudioAt - options.endOfSpeechAt) / 1000);
        }
      });
      this.playout.end(id);
    };
    try {
      for await (const piece of source(signal, turn)) {
        if (signal.aborted) break;
        const ready = piece === FLUSH ? [chunker.flush()].filter((x): x is string => !!x) : chunker.push(piece);
        for (const s of ready) {
          if (signal.aborted) break;
          await sentence(s);
        }
      }
      const rest = chunker.flush();
      if (rest && !signal.aborted) await sentence(rest);
      await Promise.all(turn.segments.map((s) => this.playout.played(s.id)));
    } catch (error) {
      if (!signal.aborted) this.log('speaking failed', { err: String(error) });
    }
    if (this.turn === turn) this.turn = undefined;
    const interrupted = signal.aborted;
    const text = this.heardText(turn, interrupted);
    for (const s of turn.segments) this.playout.release(s.id);
    if (text) {
      this.host.onTurn({ role: 'assistant', text, language: this.language.code, startMs: turn.startMs, endMs: this.offset(), interrupted });
      this.history.push({ role: 'assistant', content: text });
    }
    return { interrupted };
  }

  /** Synthesizes one sentence into a playout segment, falling back to the next synthesizer on failure. */
  private async synthesize(segment: number, text: string, signal: AbortSignal, onFirstAudio: () => void): Promise<void> {
    const order = this.ordered(this.providers.tts, this.language.ttsProvider);
    const timeoutMs = this.options.ttsFirstAudioTimeoutMs ?? 3000;
    for (let i = 0; i < order.length && !signal.aborted; i++) {
      const tts = order[i];
      const attempt = new AbortController();
      const abort = () => attempt.abort();
      signal.addEventListener('abort', abort);
      const started = this.host.clock.now();
      let pushed = 0;
      const timer = this.host.clock.setTimeout(() => pushed === 0 && attempt.abort(), timeoutMs);
      try {
        const frames = new FrameCutter(this.playout.frameSize);
        let resampler: Resampler | undefined;
        for await (const chunk of tts.synthesize({
          text,
          language: this.language.code,
          voiceId: i === 0 ? this.language.voiceId : this.language.voices[tts.name] ?? '',
          speed: this.settings.speed,
          pitch: this.settings.pitch,
          signal: attempt.signal,
        })) {
          if (attempt.signal.aborted) break;
          resampler ??= new Resampler(chunk.sampleRate, this.options.sampleRate);
          for (const frame of frames.push(resampler.process(chunk.pcm))) {
            if (pushed++ === 0) {
              engineMetrics.stageLatency.observe({ stage: 'tts_first_audio' }, (this.host.clock.now() - started) / 1000);
              onFirstAudio();
            }
            this.playout.push(segment, frame);
          }
          // Backpressure: a vendor faster than real time is read only as playback makes room (see Playout.room).
          await this.playout.room();
        }
        const last = frames.flush();
        if (last && !attempt.signal.aborted) this.playout.push(segment, last);
        if (!attempt.signal.aborted || signal.aborted || pushed > 0) return;
        throw new SpeechError(`no audio within ${timeoutMs} ms`, { code: 'timeout', provider: tts.name });
      } catch (error) {
        if (signal.aborted || pushed > 0) return; // barge-in, or a voice that failed mid-sentence: keep what played
        const next = order[i + 1];
        this.log('synthesizer failed', { provider: tts.name, err: String(error) });
        if (next) engineMetrics.fallbacks.inc({ kind: 'tts', from: tts.name, to: next.name });
      } finally {
        this.host.clock.clearTimeout(timer);
        signal.removeEventListener('abort', abort);
      }
    }
  }

  /** Barge-in: every stage of the agent's turn stops at once and the carrier drops its buffered audio. */
  private interrupt(why: string): void {
    const turn = this.turn;
    if (!turn) return;
    engineMetrics.bargeIns.inc();
    this.log('barge-in', { why });
    this.cut();
  }

  /** Stops the current agent turn, if any, and drops its unplayed audio. */
  private cut(): void {
    this.turn?.controller.abort();
    this.turn = undefined;
    this.playout.clear();
  }

  private heardText(turn: AgentTurn, interrupted: boolean): string {
    if (!interrupted) return turn.segments.map((s) => s.text).join(' ');
    const parts: string[] = [];
    for (const s of turn.segments) {
      const total = this.playout.totalMs(s.id);
      const heard = this.playout.heardMs(s.id);
      if (total > 0 && heard >= total) {
        parts.push(s.text);
        continue;
      }
      if (heard > 0 && total > 0) {
        const words = s.text.split(/\s+/);
        parts.push(words.slice(0, Math.floor((words.length * heard) / total)).join(' '));
      }
      break;
    }
    return parts.join(' ').trim();
  }

  // ---- timers, ending ------------------------------------------------------------------------------------

  /** Quiet time is counted from here; the prompt and the hangup are both measured from this point. */
  private armSilence(): void {
    this.disarmSilence();
    if (this.ended || this.settings.mode !== 'conversation') return;
    const { silencePromptSeconds: prompt, silenceHangupSeconds: hangup } = this.settings;
    if (prompt !== undefined) {
      this.silenceTimers.push(
        this.host.clock.setTimeout(() => void this.say(this.fill(this.language.silencePrompt) || this.builtIn('silencePrompt'), { interruptible: true }), prompt * 1000),
      );
    }
    if (hangup !== undefined) this.silenceTimers.push(this.host.clock.setTimeout(() => void this.goodbye('silence'), hangup * 1000));
  }

  /**
   * A built-in line in the call's language. English ones are written here; for other languages the model writes
   * one short sentence when the conversation starts (or moves to that language), so it is ready, without delay,
   * when needed; until then, or if the model fails, the English line is used.
   */
  private builtIn(kind: 'silencePrompt' | 'goodbye'): string {
    return this.lines.get(`${this.language.code}:${kind}`) ?? BUILT_IN[kind];
  }

  private prepareLines(language: LanguageSettings): void {
    if (this.settings.mode !== 'conversation' || language.code.toLowerCase().startsWith('en')) return;
    const asks = {
      silencePrompt: 'asking a caller who has gone quiet on the phone whether they are still there',
      goodbye: 'saying goodbye to a caller before the call ends',
    };
    for (const kind of ['silencePrompt', 'goodbye'] as const) {
      if (kind === 'silencePrompt' && language.silencePrompt) continue;
      const key = `${language.code}:${kind}`;
      if (this.lines.has(key) || this.preparing.has(key)) continue;
      this.preparing.add(key);
      this.providers.llm
        .complete({
          model: this.settings.model,
          messages: [{ role: 'system', content: `Write one short sentence in the language ${language.code}, ${asks[kind]}. Reply with the sentence only.` }],
          maxTokens: 60,
        })
        .then((r) => {
          const line = r.text.trim().split('\n')[0].replace(/^["«“]|["»”]$/g, '').trim();
          if (line) this.lines.set(key, line);
        })
        .catch((e) => this.log('built-in line not prepared', { language: language.code, kind, err: String(e) }));
    }
  }

  private disarmSilence(): void {
    for (const t of this.silenceTimers) this.host.clock.clearTimeout(t);
    this.silenceTimers = [];
  }

  private async goodbye(reason: string): Promise<void> {
    if (this.ended) return;
    this.clearTimers();
    if (this.turn) this.interrupt(reason);
    await this.say(this.builtIn('goodbye'), { interruptible: false });
    this.finish(reason);
  }

  private finish(reason: string): void {
    if (this.ended) return;
    this.host.hangup(reason);
    void this.stop();
  }

  private clearTimers(): void {
    this.disarmSilence();
    this.host.clock.clearTimeout(this.maxTimer);
    this.host.clock.clearTimeout(this.keypadTimer);
  }

  // ---- keypad ---------------------------------------------------------------------------------------------

  private startNode(): FlowNode | undefined {
    const nodes = this.settings.flow?.nodes ?? [];
    return nodes.find((n) => n.id === this.settings.flow?.start) ?? nodes[0];
  }

  /** Reads a menu node, then waits for a key (keypad_timeout_seconds), repeating it after no_input. */
  private async enterNode(node: FlowNode | undefined): Promise<void> {
    if (this.ended) return;
    this.node = node;
    if (!node) return this.finish('completed');
    const line = this.fill(node.say_in?.[this.language.code] ?? node.say ?? '');
    const { interrupted } = line ? await this.say(line, { interruptible: true }) : { interrupted: false };
    if (this.ended || interrupted || this.node !== node) return;
    if (!node.edges?.length) return this.finish('completed');
    this.keypadTimer = this.host.clock.setTimeout(() => void this.noInput(node), this.settings.keypadTimeoutSeconds * 1000);
  }

  private async noInput(node: FlowNode): Promise<void> {
    if (this.ended || this.node !== node) return;
    if (++this.noInputRounds >= this.settings.maxNoInput) return this.goodbye('no_input');
    if (this.settings.noInput) await this.say(this.fill(this.settings.noInput), { interruptible: true });
    if (this.node === node) await this.enterNode(node);
  }

  /** The next node for a keypress: expression edges first (by priority), then the catch-all. */
  private route(node: FlowNode, variables: Record<string, string>): FlowNode | undefined {
    const edges = [...(node.edges ?? [])].sort((a, b) => (a.priority ?? 0) - (b.priority ?? 0));
    const match =
      edges.find((e) => e.type === 'expression' && matches(e, { ...this.options.variables, ...variables })) ?? edges.find((e) => e.type === 'always');
    return match ? this.settings.flow?.nodes.find((n) => n.id === match.to) : undefined;
  }

  // ---- helpers --------------------------------------------------------------------------------------------

  private ordered<P extends { name: string }>(providers: P[], first: string): P[] {
    return [...providers.filter((p) => p.name === first), ...providers.filter((p) => p.name !== first)];
  }

  private fill(text: string): string {
    return fillVariables(text, this.options.variables ?? {});
  }

  private offset(): number {
    return Math.round(this.host.clock.now() - this.startedAt);
  }

  private log(message: string, fields?: Record<string, unknown>): void {
    this.host.log?.(message, fields);
  }
}

function normalise(text: string): string {
  return (text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []).join(' ');
}

function matches(edge: FlowEdge, variables: Record<string, string>): boolean {
  const conditions = edge.expression?.conditions ?? [];
  const test = (c: { variable: string; operator: string; value?: unknown }) => {
    const actual = variables[c.variable];
    const expected = c.value === undefined ? undefined : String(c.value);
    switch (c.operator) {
      case 'eq':
        return actual === expected;
      case 'neq':
        return actual !== expected;
      case 'in':
        return Array.isArray(c.value) && c.value.map(String).includes(actual ?? '');
      case 'not_in':
        return Array.isArray(c.value) && !c.value.map(String).includes(actual ?? '');
      case 'contains':
        return actual !== undefined && expected !== undefined && actual.includes(expected);
      case 'exists':
        return actual !== undefined;
      case 'not_exists':
        return actual === undefined;
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte': {
        const a = Number(actual);
        const b = Number(c.value);
        if (Number.isNaN(a) || Number.isNaN(b)) return false;
        return c.operator === 'gt' ? a > b : c.operator === 'gte' ? a >= b : c.operator === 'lt' ? a < b : a <= b;
      }
      default:
        return false;
    }
  };
  if (!conditions.length) return false;
  return edge.expression?.logic === 'or' ? conditions.some(test) : conditions.every(test);
}

/** Cuts a stream of samples into whole frames; the last partial frame is padded with silence. */
class FrameCutter {
  // Frames are views into a slab of SLAB_FRAMES frames: one ArrayBuffer per slab rather than per 20 ms frame, which
  // is what young-generation GC pauses grow with when hundreds of calls play at once.
  private static readonly SLAB_FRAMES = 16;
  private slab: Int16Array;
  private start = 0;
  private filled = 0;

  constructor(private readonly size: number) {
    this.slab = new Int16Array(size * FrameCutter.SLAB_FRAMES);
  }

  push(samples: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let at = 0;
    while (at < samples.length) {
      const take = Math.min(this.size - this.filled, samples.length - at);
      this.slab.set(samples.subarray(at, at + take), this.start + this.filled);
      this.filled += take;
      at += take;
      if (this.filled === this.size) frames.push(this.next());
    }
    return frames;
  }

  flush(): Int16Array | undefined {
    return this.filled ? this.next() : undefined; // the rest of the frame is already silence
  }

  private next(): Int16Array {
    const frame = this.slab.subarray(this.start, this.start + this.size);
    this.start += this.size;
    this.filled = 0;
    if (this.start === this.slab.length) {
      this.slab = new Int16Array(this.slab.length);
      this.start = 0;
    }
    return frame;
  }
}

export { FRAME_MS };
