import { FakeLlm } from '@parley/llm';
import { FakeSpeechToText, FakeTextToSpeech } from '@parley/speech';
import { agentSettings, AgentSettings } from '../agent-settings';
import { ManualClock } from '../clock';
import { LineCache } from '../line-cache';
import type { KnowledgeSearch } from '../knowledge/knowledge-search';
import { AudioSink } from '../playout';
import { EngineHost, EngineOptions, EngineTurn, VoiceEngine } from '../voice-engine';

// What the engine's unit tests drive it with: a carrier on a manual clock, caller audio, an agent's settings.

export const RATE = 8000;
export const FRAME = 160;

/** A carrier seen from the engine: records what it was sent, plays at real time and echoes marks once played. */
export class FakeCarrier implements AudioSink {
  readonly log: { at: number; kind: 'audio' | 'mark' | 'clear'; name?: string }[] = [];
  engine!: VoiceEngine;
  private playedUntil = 0;

  constructor(private readonly clock: ManualClock) {}

  sendAudio(): void {
    this.log.push({ at: this.clock.now(), kind: 'audio' });
    this.playedUntil = Math.max(this.playedUntil, this.clock.now()) + 20;
  }

  sendMark(name: string): void {
    this.log.push({ at: this.clock.now(), kind: 'mark', name });
    const cleared = this.clears;
    this.clock.setTimeout(() => cleared === this.clears && this.engine.onMark(name), this.playedUntil - this.clock.now());
  }

  sendClear(): void {
    this.log.push({ at: this.clock.now(), kind: 'clear' });
    this.playedUntil = this.clock.now();
  }

  get clears(): number {
    return this.log.filter((e) => e.kind === 'clear').length;
  }

  framesAfter(at: number): number {
    return this.log.filter((e) => e.kind === 'audio' && e.at > at).length;
  }
}

let syllable = 0;
/** Caller speech: a tone with a quiet 20 ms between syllables, as real speech has. */
export const speech = () => {
  const amplitude = ++syllable % 5 === 0 ? 300 : 8000;
  const frame = new Int16Array(FRAME);
  for (let i = 0; i < FRAME; i++) frame[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / RATE));
  return frame;
};
export const quiet = () => new Int16Array(FRAME);
export const hiss = () => Int16Array.from({ length: FRAME }, (_, i) => (i % 2 ? 40 : -40));

export function settings(overrides: Record<string, unknown> = {}, conversation: Record<string, unknown> = {}): AgentSettings {
  return agentSettings(
    {
      languages: [{ code: 'en-US', greeting: 'Hello {{name}}, this is Ada.', system_prompt: 'You are Ada.', stt_provider: 'fake-stt', tts_provider: 'fake-tts' }],
      conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1, ...conversation },
      ...overrides,
    },
    {},
    { model: 'fake-model', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
  );
}

export function setup(
  agent: AgentSettings,
  options: {
    llm?: FakeLlm;
    stt?: FakeSpeechToText[];
    tts?: FakeTextToSpeech[];
    lines?: LineCache;
    knowledge?: KnowledgeSearch;
    clock?: ManualClock;
    host?: Partial<EngineHost>;
    engine?: Partial<EngineOptions>;
  } = {},
) {
  const clock = options.clock ?? new ManualClock();
  const carrier = new FakeCarrier(clock);
  const turns: EngineTurn[] = [];
  const hangups: string[] = [];
  const transfers: string[] = [];
  const stt = options.stt ?? [new FakeSpeechToText()];
  const tts = options.tts ?? [new FakeTextToSpeech()];
  const llm = options.llm ?? new FakeLlm();
  const engine = new VoiceEngine(
    agent,
    { stt, tts, llm, lines: options.lines, knowledge: options.knowledge },
    {
      sink: carrier,
      clock,
      onTurn: (t) => void turns.push(t),
      hangup: (r) => void hangups.push(r),
      transfer: async (d) => void transfers.push(d),
      ...options.host,
    },
    { sampleRate: RATE, variables: { name: 'Sam' }, marksEchoed: true, ...options.engine },
  );
  carrier.engine = engine;
  /** Feeds `ms` of caller audio in 20 ms frames, advancing the clock as a carrier would. */
  const feed = async (ms: number, frame: () => Int16Array) => {
    for (let t = 0; t < ms; t += 20) {
      engine.pushAudio(frame());
      await clock.advance(20);
    }
  };
  /** The caller says `text`: the recognizer will hear it, 300 ms of speech, then 700 ms of quiet ending the turn. */
  const ask = async (text: string) => {
    stt[0].queue(text);
    await feed(300, speech);
    await feed(700, quiet);
  };
  /** Moves the engine's clock and real I/O (local servers, promises) together until `condition`, at most `ms`. */
  const pumpUntil = async (condition: () => boolean, ms = 15_000) => {
    for (let t = 0; t < ms && !condition(); t += 20) {
      await clock.advance(20);
      await new Promise((r) => setTimeout(r, 1));
    }
    if (!condition()) throw new Error('condition not met');
  };
  return { clock, carrier, turns, hangups, transfers, stt, tts, llm, engine, feed, ask, pumpUntil };
}

