import { FlowTransition, TranscriptTurn } from '@parley/contracts';
import { ChatMessage, LlmProvider, LlmStreamEvent, ToolCall } from '@parley/llm';
import { SpeechChunk, SpeechToText, TextToSpeech } from '@parley/speech';
import { AgentSettings, fillVariables, FlowNode, LanguageSettings, nodeLine } from './agent-settings';
import { BuiltInLines } from './built-in-lines';
import { Clock } from './clock';
import { AgentDialogue, Dialogue } from './dialogue';
import { FlowRuntime, FlowStep } from './flow/flow-runtime';
import { modelRouter } from './flow/intent-router';
import { groundingText, KnowledgeGrounding } from './knowledge/grounding';
import { KnowledgeHit, KnowledgeSearch } from './knowledge/knowledge-search';
import { CSAT_SURVEY_PROMPT, CSAT_SURVEY_THANKS, CsatSurvey } from './csat-survey';
import { KeypadMenu } from './keypad-menu';
import { LineCache, LineRequest } from './line-cache';
import { engineMetrics } from './metrics';
import { AudioSink, Playout } from './playout';
import { Prefetch } from './prefetch';
import { SilenceMonitor } from './silence-monitor';
import { FLUSH, SpeechHandle, Spoken } from './speech-handle';
import { TurnTrace } from './turn-trace';
import { FallbackSpeechToText } from './stt-fallback';
import { ToolCallReport, ToolNetwork, ToolRunner } from './tool-runner';
import { offeredTools, OfferedTool, parseArguments, ToolOutcome } from './tools';
import { FallbackTextToSpeech } from './tts-fallback';
import { TurnDetector, UserTurn } from './turn-detector';
import { VadFactory } from './vad';

/** A turn as the engine reports it: an agent turn that answered the caller carries its response latency (ms). */
export type EngineTurn = TranscriptTurn & { responseLatencyMs?: number };

/** What an agent turn decided on the way: end the call after it (end_call), or the flow's step it carried out. */
interface TurnState {
  endCall: boolean;
  step?: FlowStep;
  /** The knowledge passages the answer was given, for the turn's record. */
  sources?: KnowledgeHit[];
}

/** The search_knowledge_base tool's budget: the model asked for it, so it may take longer than a turn's lookup. */
const TOOL_SEARCH_MS = 2000;

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
  /** The conversation flow moved (call.flow.transitioned); captured values are in it. */
  recordTransition?(transition: FlowTransition): void;
  /** The end-of-call survey took the caller's rating (1..5), to record with the call (csat.received, source `keypad`). */
  recordRating?(score: number): void;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

export interface EngineProviders {
  /** Every recognizer the deployment configured; the language entry's first choice is tried first. */
  stt: SpeechToText[];
  tts: TextToSpeech[];
  llm: LlmProvider;
  /** The worker's fixed lines, synthesized ahead of their moment; absent: every line is synthesized when said. */
  lines?: LineCache;
  /** Each call's VAD (the worker's: Silero unless VAD=energy); absent: the energy detector. */
  vad?: VadFactory;
  /** Knowledge-base search (the agents service's); absent: no grounding. */
  knowledge?: KnowledgeSearch;
}

export interface EngineOptions {
  /** Sample rate of audio in and out (8000 on a phone line). */
  sampleRate: number;
  variables?: Record<string, string>;
  /** Whether the sink's marks come back (carrier streams: yes). */
  marksEchoed?: boolean;
  /** Give up on a synthesizer that has produced no audio after this long and try the next. */
  ttsFirstAudioTimeoutMs?: number;
  /** The call's id, sent to transfer webhooks and set on the turns' spans. */
  callId?: string;
  /** The agent's id, set on the turns' spans. */
  agentId?: string;
  /** Outbound requests of tools (see ToolNetwork). */
  tools?: ToolNetwork;
  /**
   * Clock time the call's timeline starts at: the media stream's start, so turn offsets and the recording share one
   * origin (reading the call and agent before the engine exists takes time). Default: when the engine is created.
   */
  startedAt?: number;
  /**
   * The stream resumes a conversation (a transfer that did not connect): no greeting; the agent picks up from
   * `turns` (the call's transcript so far) and tells the caller what happened. With a flow, on `node`, the node it
   * was on (the call's last flow transition); without one, on the start node.
   */
  resume?: { reason: string; turns: { role: 'user' | 'assistant'; text: string }[]; node?: string };
  /** The agent's voicemail message, when an answering machine may be left one (`voicemail: message`). */
  voicemailMessage?: string;
  /** The deployment's knowledge lookup budget per turn when the agent sets none (default 250 ms). */
  retrievalTimeoutMs?: number;
}

const BUILT_IN = {
  trouble: 'Sorry, I am having trouble right now. Please try again later.',
  transferFailed: 'I am sorry, I could not reach them. Is there anything else I can help you with?',
  transferFailedGoodbye: 'I am sorry, I could not reach anyone. Please try again later. Goodbye.',
};

/**
 * One call's conversation, wired from its stages: the turn detector (VAD, streaming recognizer, barge-in policy)
 * hands over the caller's turns; each agent turn is a SpeechHandle (model → sentences → synthesis → paced
 * playout, one AbortController for all of them, so a barge-in stops everything at once); the tool runner runs the
 * model's tool calls within a turn; the silence monitor prompts a quiet caller and ends the call; the keypad
 * menu is the keypad mode. What the next reply is made of (prompt, tools) comes from a Dialogue. Fixed lines are
 * synthesized ahead through the worker's LineCache.
 */
export class VoiceEngine {
  private readonly playout: Playout;
  private readonly startedAt: number;
  private language: LanguageSettings;
  private speech: SpeechHandle | undefined;
  private history: ChatMessage[] = [];
  private maxTimer: unknown;
  private ended = false;
  /** The carrier took the call elsewhere: the agent says nothing more. */
  private transferred = false;
  private readonly turns: TurnDetector;
  private readonly silence: SilenceMonitor;
  private readonly keypad: KeypadMenu | undefined;
  /** The end-of-call keypad survey, when the agent asks for one (csat_survey). */
  private readonly survey: CsatSurvey | undefined;
  private readonly tools: ToolRunner;
  private readonly dialogue: Dialogue;
  /** The agent's conversation flow, when it has one (conversation mode). */
  private readonly flow: FlowRuntime | undefined;
  /** A flow node's own re-prompt after silence (repeat_after_silence_seconds), beside the call's. */
  private readonly nodeSilence: SilenceMonitor;
  /** The call's variables: those the call was placed with, then what a flow captures and events bring. */
  private readonly variables: Record<string, string>;
  private readonly grounding: KnowledgeGrounding | undefined;
  /** Passages search_knowledge_base found during the current agent turn. */
  private toolSources: KnowledgeHit[] = [];
  private readonly builtIns: BuiltInLines;
  /** The synthesizer (a fallback chain) of each language the call has spoken. */
  private readonly voices = new Map<string, FallbackTextToSpeech>();

  constructor(
    private readonly settings: AgentSettings,
    private readonly providers: EngineProviders,
    private readonly host: EngineHost,
    private readonly options: EngineOptions,
  ) {
    const clock = host.clock;
    const log = (message: string, fields?: Record<string, unknown>) => this.log(message, fields);
    this.playout = new Playout(host.sink, clock, options.sampleRate, options.marksEchoed ?? true);
    this.startedAt = options.startedAt ?? clock.now();
    this.language = settings.languages[0];
    this.variables = { ...(options.variables ?? {}) };
    if (settings.mode === 'conversation' && settings.flow) {
      const flow = settings.flow;
      this.flow = new FlowRuntime({
        flow,
        variables: this.variables,
        tools: offeredTools(settings.tools),
        route: modelRouter(providers.llm, { model: flow.routing?.model || settings.model, instructions: flow.routing?.instructions, log }),
        onTransition: (t) => {
          this.log('flow moved', { from: t.from, to: t.to, kind: t.kind });
          host.recordTransition?.({ ...t, at_ms: this.offset() });
        },
        log,
      });
    }
    this.dialogue = this.flow ?? new AgentDialogue(settings);
    this.grounding =
      providers.knowledge && settings.knowledge.search
        ? new KnowledgeGrounding({ search: providers.knowledge, clock, timeoutMs: settings.knowledge.timeoutMs ?? options.retrievalTimeoutMs ?? 250, log })
        : undefined;
    this.builtIns = new BuiltInLines(providers.llm, settings.model, (language, line) => this.prepareLines(language, [line]), log);
    this.turns = new TurnDetector({
      clock,
      sampleRate: options.sampleRate,
      interruptWords: settings.interruptWords,
      interruptPhrases: settings.interruptPhrases,
      vad: providers.vad?.(options.sampleRate),
      agent: () => this.speech,
      onSpeechStart: () => this.disarmSilence(),
      // Quiet is counted from the caller's last words, whether or not they made a turn.
      onSpeechEnd: () => !this.speech && this.armSilence(),
      onBargeIn: (why) => this.interrupt(why),
      onUserTurn: (turn) => this.commitUserTurn(turn),
      onLanguage: (language) => this.follow(language),
      log,
    });
    this.silence = new SilenceMonitor({
      clock,
      promptSeconds: settings.silencePromptSeconds,
      hangupSeconds: settings.silenceHangupSeconds,
      onPrompt: () => void this.say(this.silencePrompt(this.language), { interruptible: true }),
      onHangup: () => void this.goodbye('silence'),
    });
    this.nodeSilence = new SilenceMonitor({
      clock,
      promptSeconds: () => this.flow?.repeatSeconds(),
      hangupSeconds: undefined,
      onPrompt: () => void this.repeatNode(),
      onHangup: () => undefined,
    });
    this.tools = new ToolRunner({
      clock,
      network: options.tools,
      callId: options.callId ?? '',
      fillerPhrase: settings.tools.fillerPhrase,
      transfer: (destination) => host.transfer(destination),
      recordOptOut: host.recordOptOut?.bind(host),
      searchKnowledge: (args, signal) => this.searchKnowledge(args, signal),
      report: (report) => host.recordToolCall?.(report),
      onTransferred: () => {
        this.transferred = true;
        // The carrier has the call now: no silence prompt, no goodbye at max_call_seconds.
        this.clearTimers();
      },
      log,
    });
    if (settings.csatSurvey) {
      this.survey = new CsatSurvey({
        clock,
        prompt: this.fill(settings.csatSurvey.prompt) || CSAT_SURVEY_PROMPT,
        thanks: this.fill(settings.csatSurvey.thanks) || CSAT_SURVEY_THANKS,
        timeoutSeconds: settings.csatSurvey.timeoutSeconds,
        // Speech does not stop the survey's lines; a key does.
        say: (line) => this.say(line, { interruptible: false }),
        interrupt: () => this.cut(),
        onKey: (digit) => this.host.onTurn({ role: 'user', text: digit, language: this.language.code, startMs: this.offset(), endMs: this.offset(), interrupted: false }),
        record: (score) => this.host.recordRating?.(score),
        ended: () => this.ended,
      });
    }
    if (settings.mode === 'keypad') {
      this.keypad = new KeypadMenu({
        clock,
        flow: settings.flow,
        timeoutSeconds: settings.keypadTimeoutSeconds,
        maxNoInput: settings.maxNoInput,
        noInput: this.fill(settings.noInput),
        variables: this.variables,
        lineOf: (node) => this.nodeLine(node),
        say: (line) => this.say(line, { interruptible: true }),
        interrupt: () => this.interrupt('key pressed'),
        onKey: (digit) => this.host.onTurn({ role: 'user', text: digit, language: this.language.code, startMs: this.offset(), endMs: this.offset(), interrupted: false }),
        goodbye: (reason) => this.goodbye(reason),
        finish: (reason) => this.finish(reason),
        ended: () => this.ended,
      });
    }
  }

  /** Opens the call: the greeting of the opening language, exactly as written. */
  async start(): Promise<void> {
    engineMetrics.callsInProgress.inc();
    if (this.settings.maxCallSeconds) {
      this.maxTimer = this.host.clock.setTimeout(() => void this.goodbye('max_duration'), this.settings.maxCallSeconds * 1000);
    }
    // Before the recognizer opens: the greeting is being synthesized while it does.
    this.prepareLines(this.language, this.fixedLines());
    if (this.keypad) return this.keypad.start();
    if (this.settings.mode === 'conversation') {
      const order = this.ordered(this.providers.stt, this.language.sttProvider);
      // Following the caller's language needs a recognizer that detects it (Deepgram: `multi`).
      await this.turns.open(new FallbackSpeechToText(order, (m, f) => this.log(m, f)), this.settings.languageDetection === 'follow' ? 'multi' : this.language.code);
      this.builtIns.prepare(this.language);
    }
    const resume = this.options.resume;
    if (resume) {
      this.log('conversation resumed', { reason: resume.reason });
      if (this.settings.mode !== 'conversation') {
        // Without a model there is nothing else to offer: say so and end, never transfer again in a loop.
        await this.say(BUILT_IN.transferFailedGoodbye, { interruptible: false });
        return this.finish('completed');
      }
      this.history.push(...resume.turns.map((t) => ({ role: t.role, content: t.text })));
      const step = this.flow ? this.flow.resume(resume.node ?? this.flow.current.id) : ({ kind: 'listen' } as const);
      await this.say(BUILT_IN.transferFailed, { interruptible: true });
      return this.act(step);
    }
    const greeting = this.fill(this.language.greeting);
    if (greeting) await this.say(greeting, { interruptible: this.settings.mode === 'conversation' });
    if (this.ended) return;
    if (this.settings.mode === 'normal') {
      if (this.settings.transferNumber) await this.host.transfer(this.settings.transferNumber);
      else this.finish('completed');
      return;
    }
    // After the greeting: a static start node says its line then; an llm one lets the caller speak first.
    if (this.flow) return this.act(this.flow.start());
    this.armSilence();
  }

  /** One inbound frame of PCM16 at the engine's sample rate. */
  pushAudio(frame: Int16Array): void {
    if (this.ended || this.settings.mode !== 'conversation') return;
    this.turns.push(frame);
  }

  /**
   * An outside system injected an event (POST /v1/calls/{id}/events): a flow's event edge waiting on the current
   * node fires at once, cutting what the agent was saying; otherwise the flow keeps it for a node that waits for it.
   * Without a flow, nothing acts on events.
   */
  injectEvent(name: string, payload: Record<string, unknown>): void {
    if (this.ended || this.transferred) return;
    if (!this.flow) return this.log('event ignored: the agent has no conversation flow', { event: name });
    const step = this.flow.event(name, payload);
    if (step) void this.act(step, `An outside system reported the event "${name}". Go on with the conversation at the current step.`);
  }

  /** A key the caller pressed. */
  pushDtmf(digit: string): void {
    if (this.ended) return;
    this.keypad?.press(digit);
    this.survey?.press(digit);
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
    await this.turns.close();
  }

  // ---- conversation ----------------------------------------------------------------------------------------

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
    this.builtIns.prepare(next);
    this.prepareLines(next, this.conversationLines(next));
  }

  private commitUserTurn(turn: UserTurn): void {
    this.silence.disarm();
    // The survey is asking for a key: words are kept in the transcript and not answered.
    if (this.survey?.active) {
      const at = this.offset();
      this.host.onTurn({ role: 'user', text: turn.text, language: this.language.code, startMs: turn.startedAt !== undefined ? turn.startedAt - this.startedAt : at, endMs: at, interrupted: false });
      return;
    }
    const endMs = this.offset();
    const startMs = turn.startedAt !== undefined ? turn.startedAt - this.startedAt : endMs;
    this.host.onTurn({ role: 'user', text: turn.text, language: this.language.code, startMs, endMs, interrupted: false });
    this.history.push({ role: 'user', content: turn.text });
    const clock = this.host.clock;
    const trace = new TurnTrace(clock, { callId: this.options.callId, agentId: this.options.agentId }, { startedAt: turn.startedAt ?? turn.endOfSpeech, endOfSpeech: turn.endOfSpeech, finalAt: clock.now() });
    void this.reply(turn.endOfSpeech, trace);
  }

  /**
   * The answer to a caller's turn: the model streams text (spoken as it comes) and may call tools; the tools run
   * (their pre-tool line or the filler spoken meanwhile), their results go back as tool messages and the model is
   * asked again, at most `maxToolRounds` times per turn (the last time with tool_choice none). The whole answer
   * is one agent turn: its handle's AbortController stops the model, the tools' requests and the speech together.
   */
  private async reply(endOfSpeech: number, trace: TurnTrace): Promise<void> {
    const state: TurnState = { endCall: false };
    const result = await this.speak(
      (handle) => (this.flow ? this.flowTurn(this.flow, state, endOfSpeech, handle) : this.groundedAnswer(state, endOfSpeech, handle)),
      { interruptible: true, endOfSpeechAt: endOfSpeech, trace },
      () => state.sources,
    );
    this.afterTurn(state, result.interrupted);
  }

  /** The answer to the caller's turn, grounded in what the knowledge lookup found within its budget. */
  private async *groundedAnswer(state: TurnState, endOfSpeech: number, handle: SpeechHandle): AsyncIterable<Spoken> {
    state.sources = await this.lookup(this.bases(), handle.signal);
    if (handle.signal.aborted) return;
    yield* this.answer(this.prompt(undefined, state.sources), state, endOfSpeech, handle);
  }

  /** After an agent turn: the call ends (end_call, a flow's last static line), or quiet is counted from here. */
  private afterTurn(state: TurnState, interrupted: boolean): void {
    if (this.ended || this.transferred || interrupted) return;
    if (state.endCall) return void this.conclude('agent');
    if (state.step?.kind === 'say' && state.step.last) return void this.conclude('completed');
    this.armSilence();
  }

  /**
   * A caller's turn on a flow: the runtime follows the edges that fire and says what to do. When the current node
   * will answer unless an intent edge fires, its answer is started at once, alongside the routing call, and kept
   * when the flow stays (same node, same instructions): the caller then waits for one model, not two in a row.
   */
  private async *flowTurn(flow: FlowRuntime, state: TurnState, endOfSpeech: number, handle: SpeechHandle): AsyncIterable<Spoken> {
    const bases = this.bases();
    // The knowledge lookup and the routing call run together; the early answer waits for the lookup only.
    const lookup = this.lookup(bases, handle.signal);
    const speculate = flow.beginTurn();
    const revision = flow.revision;
    const startEarly = (hits: KnowledgeHit[]) => {
      const prompt = this.prompt(undefined, hits);
      return { prompt, stream: new Prefetch((signal) => this.providers.llm.stream(this.modelRequest(prompt, [], 0, signal)), handle.signal) };
    };
    // Without a lookup to wait for, the early answer starts with the routing call, not a tick after it.
    const early = speculate ? (bases.length ? lookup.then(startEarly) : Promise.resolve(startEarly([]))) : undefined;
    const step = await flow.userTurn(this.history, handle.signal);
    state.step = step;
    // A move to a node grounded in other bases looks up again.
    const moved = bases.join() !== this.bases().join();
    state.sources = moved ? await this.lookup(this.bases(), handle.signal) : await lookup;
    const prompt = this.prompt(undefined, state.sources);
    const started = await early;
    const kept = started && step.kind === 'answer' && flow.revision === revision && prompt.messages[0]?.content === started.prompt.messages[0]?.content;
    if (started && !kept) started.stream.cancel();
    if (handle.signal.aborted) return;
    if (step.kind === 'answer') yield* this.answer(prompt, state, endOfSpeech, handle, kept ? started.stream : undefined);
    else if (step.kind === 'say') yield { line: this.nodeLine(step.node) };
  }

  /** The bases this reply is grounded in: the flow node's, else the agent's; none when search is off. */
  private bases(): string[] {
    if (!this.grounding) return [];
    return this.dialogue.knowledgeBases?.() ?? this.settings.knowledge.baseIds;
  }

  /** The caller's latest words looked up in `bases`, within the turn's budget; nothing when there is nothing to search. */
  private async lookup(bases: string[], signal: AbortSignal): Promise<KnowledgeHit[]> {
    const query = [...this.history].reverse().find((m) => m.role === 'user')?.content;
    if (!this.grounding || !bases.length || !query) return [];
    return (await this.grounding.lookup(query, bases, signal)).hits;
  }

  /** search_knowledge_base: the model's own query, with a longer budget; what it finds grounds the turn's record too. */
  private async searchKnowledge(args: string, signal: AbortSignal): Promise<ToolOutcome> {
    const parsed = parseArguments(args);
    const query = 'args' in parsed ? String(parsed.args['query'] ?? '').trim() : '';
    if (!query) return { ok: false, result: 'Give a query: what to look up, in a few words.', error: 'no query' };
    const bases = this.bases();
    if (!this.grounding || !bases.length) return { ok: false, result: 'There is no knowledge base to search on this call.', error: 'no knowledge base' };
    const found = await this.grounding.lookup(query, bases, signal, Math.max(TOOL_SEARCH_MS, this.settings.knowledge.timeoutMs ?? 0));
    this.toolSources.push(...found.hits);
    if (found.outcome === 'timeout' || found.outcome === 'error') return { ok: false, result: 'The knowledge base did not answer in time.', error: found.outcome };
    return { ok: true, result: found.hits.length ? groundingText(found.hits) : `Nothing in the knowledge base matches "${query}".` };
  }

  /** What the flow said to do outside a caller's turn (the call opening, an event, a node's re-prompt). */
  private async act(step: FlowStep, note?: string): Promise<void> {
    if (this.ended) return;
    if (step.kind === 'none') return;
    if (step.kind === 'listen') return this.armSilence();
    const state: TurnState = { endCall: false, step };
    const result =
      step.kind === 'say'
        ? await this.say(this.nodeLine(step.node), { interruptible: true })
        : await this.speak((handle) => this.answer(this.prompt(note), state, undefined, handle), { interruptible: true });
    this.afterTurn(state, result.interrupted);
  }

  /** The model's request for the next reply: the dialogue's instructions (and a one-off note), the history, its tools. */
  private prompt(note?: string, hits: KnowledgeHit[] = []): { messages: ChatMessage[]; tools: OfferedTool[] } {
    const instructions = this.dialogue.instructions(this.language);
    return {
      messages: [
        ...(instructions ? [{ role: 'system' as const, content: this.fill(instructions) }] : []),
        ...(hits.length ? [{ role: 'system' as const, content: groundingText(hits) }] : []),
        ...this.history,
        ...(note ? [{ role: 'system' as const, content: note }] : []),
      ],
      tools: this.dialogue.tools(),
    };
  }

  private modelRequest(prompt: { messages: ChatMessage[]; tools: OfferedTool[] }, exchange: ChatMessage[], round: number, signal: AbortSignal) {
    const definitions = prompt.tools.map((t) => t.definition);
    const last = round >= this.settings.tools.maxToolRounds;
    return {
      model: this.settings.model,
      messages: [...prompt.messages, ...exchange],
      temperature: this.settings.temperature,
      maxTokens: this.settings.maxTokens,
      tools: definitions.length ? definitions : undefined,
      toolChoice: definitions.length ? (last ? ('none' as const) : this.dialogue.toolChoice?.()) : undefined,
      signal,
    };
  }

  /**
   * The answer's text as the model streams it, round after round of tool calls (see reply). `early`: the first
   * round's stream, already started (a flow turn's speculative answer).
   */
  private async *answer(
    prompt: { messages: ChatMessage[]; tools: OfferedTool[] },
    state: TurnState,
    endOfSpeech: number | undefined,
    handle: SpeechHandle,
    early?: AsyncIterable<LlmStreamEvent>,
  ): AsyncIterable<Spoken> {
    const signal = handle.signal;
    const tools = prompt.tools;
    const maxRounds = this.settings.tools.maxToolRounds;
    let first = true;
    const exchange: ChatMessage[] = [];
    for (let round = 0; ; round++) {
      const last = round >= maxRounds;
      let said = '';
      let calls: ToolCall[] = [];
      handle.trace?.llmStarted(round);
      try {
        for await (const event of (round === 0 && early) || this.providers.llm.stream(this.modelRequest(prompt, exchange, round, signal))) {
          if (event.type === 'text' && event.delta) {
            if (first && endOfSpeech !== undefined) engineMetrics.stageLatency.observe({ stage: 'llm_first_token' }, (this.host.clock.now() - endOfSpeech) / 1000);
            handle.trace?.llmFirstToken();
            first = false;
            said += event.delta;
            yield event.delta;
          } else if (event.type === 'tool_calls') {
            calls = event.calls;
          }
        }
      } catch (error) {
        if (signal.aborted) return;
        handle.trace?.llmEnded(error);
        this.log('model failed', { err: String(error) });
        yield BUILT_IN.trouble;
        return;
      }
      if (signal.aborted) return;
      handle.trace?.llmEnded();
      const ending = calls.filter((c) => c.name === 'end_call' && tools.some((t) => t.kind === 'end_call'));
      if (ending.length) {
        state.endCall = true;
        this.tools.report({ name: 'end_call', kind: 'end_call', arguments: ending[0].arguments || '{}', ok: true });
      }
      // Past the last round the model was told to answer in words; any tool call it still makes is dropped.
      const work = last ? [] : calls.filter((c) => !ending.includes(c));
      if (!work.length) return;
      yield FLUSH;
      const line = this.tools.lineFor(work, tools, this.language.code);
      if (line) {
        yield this.fill(line);
        yield FLUSH;
      }
      const outcomes = await Promise.all(work.map((call) => this.tools.run(call, tools, signal, () => handle.played())));
      for (const call of work) this.dialogue.toolRan?.(call.name);
      if (signal.aborted || this.ended) return;
      const results = work.map((call, i) => ({ role: 'tool' as const, toolCallId: call.id, content: outcomes[i].result }));
      exchange.push({ role: 'assistant', content: said, toolCalls: work }, ...results);
      // The history keeps the exchange; what was said is in the turn's own text, recorded after it.
      this.history.push({ role: 'assistant', content: '', toolCalls: work }, ...results);
      if (state.endCall || this.transferred) return;
    }
  }

  // ---- speaking ----------------------------------------------------------------------------------------------

  /** A fixed line: synthesized ahead when the worker caches lines. */
  private say(line: string, options: { interruptible: boolean }): Promise<{ interrupted: boolean }> {
    return this.speak(async function* () {
      yield { line };
    }, options);
  }

  /**
   * One agent turn: stops the current one, speaks `source` through a new SpeechHandle and records the assistant
   * turn, cut to what the caller heard when interrupted.
   */
  private async speak(
    source: (handle: SpeechHandle) => AsyncIterable<Spoken>,
    options: { interruptible: boolean; endOfSpeechAt?: number; trace?: TurnTrace },
    sources?: () => KnowledgeHit[] | undefined,
  ): Promise<{ interrupted: boolean }> {
    if (this.ended) {
      options.trace?.end(true);
      return { interrupted: true };
    }
    this.cut();
    const handle = new SpeechHandle(
      {
        playout: this.playout,
        clock: this.host.clock,
        sampleRate: this.options.sampleRate,
        synthesize: (text, signal, fixed) => this.synthesize(text, signal, fixed),
        log: (m, f) => this.log(m, f),
      },
      options.interruptible,
      this.offset(),
      options.endOfSpeechAt,
      options.trace,
    );
    this.speech = handle;
    this.toolSources = [];
    await handle.run(source(handle));
    if (this.speech === handle) this.speech = undefined;
    const interrupted = handle.interrupted;
    options.trace?.end(interrupted);
    const text = handle.heardText();
    handle.release();
    if (text) {
      const grounding = groundingOf([...(sources?.() ?? []), ...this.toolSources]);
      const latency = handle.responseLatencyMs;
      this.host.onTurn({
        role: 'assistant',
        text,
        language: this.language.code,
        startMs: handle.startMs,
        endMs: this.offset(),
        interrupted,
        ...(grounding.length ? { grounding } : {}),
        ...(latency !== undefined ? { responseLatencyMs: Math.round(latency) } : {}),
      });
      this.history.push({ role: 'assistant', content: text });
    }
    return { interrupted };
  }

  private synthesize(text: string, signal: AbortSignal, fixed: boolean): AsyncIterable<SpeechChunk> {
    const voice = this.voice(this.language);
    const request = { ...this.lineRequest(this.language, text), signal };
    const lines = this.providers.lines;
    return fixed && lines ? lines.synthesize(voice, request) : voice.synthesize(request);
  }

  /** The language's synthesizers, its first choice first. */
  private voice(language: LanguageSettings): FallbackTextToSpeech {
    let voice = this.voices.get(language.code);
    if (!voice) {
      voice = new FallbackTextToSpeech(this.ordered(this.providers.tts, language.ttsProvider), {
        clock: this.host.clock,
        voices: language.voices,
        firstAudioTimeoutMs: this.options.ttsFirstAudioTimeoutMs ?? 3000,
        log: (m, f) => this.log(m, f),
      });
      this.voices.set(language.code, voice);
    }
    return voice;
  }

  private lineRequest(language: LanguageSettings, text: string): LineRequest {
    return { text, language: language.code, voiceId: language.voiceId, speed: this.settings.speed, pitch: this.settings.pitch };
  }

  /** Barge-in: every stage of the agent's turn stops at once and the carrier drops its buffered audio. */
  private interrupt(why: string): void {
    if (!this.speech) return;
    engineMetrics.bargeIns.inc();
    this.log('barge-in', { why });
    this.cut();
  }

  /** Stops the current agent turn, if any, and drops its unplayed audio. */
  private cut(): void {
    this.speech?.interrupt();
    this.speech = undefined;
    this.playout.clear();
  }

  // ---- fixed lines -------------------------------------------------------------------------------------------

  /** The lines this call may say that are known now, in the order they may be needed. */
  private fixedLines(): string[] {
    const resume = this.options.resume;
    const opening = resume ? (this.settings.mode === 'conversation' ? BUILT_IN.transferFailed : BUILT_IN.transferFailedGoodbye) : this.fill(this.language.greeting);
    const keypad = this.keypad ? [...this.keypad.lines(), this.builtIns.line(this.language, 'goodbye')] : [];
    const conversation = this.settings.mode === 'conversation' ? this.conversationLines(this.language) : [];
    const goodbye = this.settings.maxCallSeconds ? [this.builtIns.line(this.language, 'goodbye')] : [];
    const survey = this.survey?.lines() ?? [];
    // The voicemail message right after the opening: machine detection answers within the first seconds.
    const voicemail = this.options.voicemailMessage ? [this.fill(this.options.voicemailMessage)] : [];
    return [...new Set([opening, ...voicemail, ...keypad, ...this.staticLines(), ...conversation, ...goodbye, ...survey])];
  }

  /**
   * A flow's static lines whose words are known now; one that names a variable the call has no value for yet (a
   * value the flow will capture) is synthesized when said.
   */
  private staticLines(): string[] {
    if (!this.flow) return [];
    const statics = this.settings.flow?.nodes.filter((n) => n.type === 'static') ?? [];
    return statics.map((n) => this.nodeLine(n)).filter((line) => !/\{\{[^}]*\}\}/.test(line));
  }

  /** The silence prompt and goodbye of a conversation in `language`, when its timers may say them. */
  private conversationLines(language: LanguageSettings): string[] {
    const { silencePromptSeconds, silenceHangupSeconds, maxCallSeconds } = this.settings;
    return [
      ...(silencePromptSeconds !== undefined ? [this.silencePrompt(language)] : []),
      ...(silenceHangupSeconds !== undefined || maxCallSeconds ? [this.builtIns.line(language, 'goodbye')] : []),
    ];
  }

  /** Synthesizes `lines` ahead, one at a time in order (the first is needed first), when the worker caches lines. */
  private prepareLines(language: LanguageSettings, lines: string[]): void {
    const cache = this.providers.lines;
    if (!cache) return;
    const voice = this.voice(language);
    void lines
      .filter(Boolean)
      .reduce<Promise<void>>((before, line) => before.then(() => (this.ended ? undefined : cache.prepare(voice, this.lineRequest(language, line)))), Promise.resolve());
  }

  private silencePrompt(language: LanguageSettings): string {
    return this.fill(language.silencePrompt) || this.builtIns.line(language, 'silencePrompt');
  }

  /** A keypad menu's or a flow static node's line in the call's language, variables filled. */
  private nodeLine(node: FlowNode): string {
    return this.fill(nodeLine(node, this.language.code));
  }

  // ---- timers, ending ------------------------------------------------------------------------------------

  /** Quiet time is counted from here; the prompt and the hangup are both measured from this point. */
  private armSilence(): void {
    this.disarmSilence();
    if (this.ended || this.settings.mode !== 'conversation' || this.survey?.active) return;
    this.silence.arm();
    this.nodeSilence.arm();
  }

  private disarmSilence(): void {
    this.silence.disarm();
    this.nodeSilence.disarm();
  }

  /**
   * The flow node's re-prompt after its own quiet time: a static node says its line again, an llm node asks again
   * in its own words. The call's silence prompt and hang-up keep counting from the caller's last words.
   */
  private async repeatNode(): Promise<void> {
    const flow = this.flow;
    if (!flow || this.ended || this.speech) return;
    const node = flow.current;
    const seconds = flow.repeatSeconds() ?? 0;
    const { interrupted } =
      node.type === 'static'
        ? await this.say(this.nodeLine(node), { interruptible: true })
        : await this.speak(
            (handle) => this.answer(this.prompt(`The caller has said nothing for ${seconds} seconds. Ask again, briefly, in one short sentence.`), { endCall: false }, undefined, handle),
            { interruptible: true },
          );
    if (!interrupted && !this.ended && flow.current === node) this.nodeSilence.arm();
  }

  private async goodbye(reason: string): Promise<void> {
    if (this.ended) return;
    this.clearTimers();
    if (this.speech) this.interrupt(reason);
    await this.say(this.builtIns.line(this.language, 'goodbye'), { interruptible: false });
    this.finish(reason);
  }

  /** The agent ends the conversation: the survey asks for a rating first, when the agent has one; then the call ends. */
  private async conclude(reason: string): Promise<void> {
    if (this.ended) return;
    if (this.survey) {
      this.clearTimers();
      await this.survey.run();
    }
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
    this.keypad?.stop();
    this.survey?.stop();
  }

  // ---- helpers --------------------------------------------------------------------------------------------

  private ordered<P extends { name: string }>(providers: P[], first: string): P[] {
    return [...providers.filter((p) => p.name === first), ...providers.filter((p) => p.name !== first)];
  }

  private fill(text: string): string {
    return fillVariables(text, this.variables);
  }

  private offset(): number {
    return Math.round(this.host.clock.now() - this.startedAt);
  }

  private log(message: string, fields?: Record<string, unknown>): void {
    this.host.log?.(message, fields);
  }
}

/** The passages a turn was given, as its record keeps them: one entry per passage's document, best score. */
function groundingOf(hits: KnowledgeHit[]): NonNullable<EngineTurn['grounding']> {
  const best = new Map<string, KnowledgeHit>();
  for (const h of hits) if ((best.get(h.documentId)?.score ?? -1) < h.score) best.set(h.documentId, h);
  return [...best.values()]
    .sort((a, b) => b.score - a.score)
    .map((h) => ({ document_id: h.documentId, knowledge_base_id: h.knowledgeBaseId, title: h.title, score: h.score }));
}
