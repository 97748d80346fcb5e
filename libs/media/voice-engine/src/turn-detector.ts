import { SpeechToText, SttEvent } from '@parley/speech';
import { Clock } from './clock';
import { engineMetrics } from './metrics';
import { RecognizerFeed } from './recognizer-feed';
import { EnergyVad, Vad } from './vad';

/** Words that stop the agent whatever interrupt_words says. */
const STOP_WORDS = new Set(['stop', 'wait', 'hold', 'pause', 'quiet', 'enough']);
/** A caller who talks this long over the agent interrupts it, words or not. */
const KEEP_TALKING_MS = 1500;

/** The agent's turn as turn-taking sees it. */
export interface AgentFloor {
  interruptible: boolean;
  /** When its first audio went out; undefined until then. */
  firstAudioAt: number | undefined;
}

/** A finished turn of the caller. */
export interface UserTurn {
  text: string;
  /** When the caller's speech started (clock time); undefined when the VAD never heard it. */
  startedAt: number | undefined;
  /** The end of speech the answer is timed from. */
  endOfSpeech: number;
}

export interface TurnDetectorOptions {
  clock: Clock;
  sampleRate: number;
  /** interrupt_words: this many words of the caller interrupt the agent. */
  interruptWords: number;
  /** interrupt_phrases: a final transcript that is one of these interrupts the agent. */
  interruptPhrases: string[];
  /** The call's VAD; default an energy detector. */
  vad?: Vad;
  /** The agent's current turn, if it has the floor. */
  agent(): AgentFloor | undefined;
  /** The caller started speaking (the VAD). */
  onSpeechStart(): void;
  /** The caller stopped speaking (the VAD), with or without words. */
  onSpeechEnd(): void;
  /** The caller's words call for the agent to stop. */
  onBargeIn(why: string): void;
  /** The caller's turn is over and the agent does not have the floor: answer it. */
  onUserTurn(turn: UserTurn): void;
  /** The recognizer heard a language in a final transcript. */
  onLanguage(language: string): void;
  log(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Turn-taking: inbound audio → VAD and streaming recognizer → the caller's turns, and the barge-in policy (enough
 * words, a stop word, an interrupt phrase, or talking over the agent for 1.5 s). A final transcript while the agent
 * keeps the floor is a backchannel ("mm-hm"), not a turn.
 */
export class TurnDetector {
  private readonly vad: Vad;
  /** The recognizer's stream, fed through the component that decides when its audio goes. */
  private recognizer: RecognizerFeed | undefined;
  private userText = '';
  private speechStartedAt: number | undefined;
  /** The VAD's end of the caller's current utterance; undefined while it lasts and once a turn took it. */
  private endOfSpeechAt: number | undefined;
  /** The recognizer ended the current utterance's turn: the VAD's later end of it is no new end of speech. */
  private utteranceTaken = false;
  private closed = false;

  constructor(private readonly options: TurnDetectorOptions) {
    this.vad = options.vad ?? new EnergyVad();
  }

  /** Opens the recognizer (a fallback chain); without one the caller is heard by the VAD only. */
  async open(stt: SpeechToText, language: string): Promise<void> {
    try {
      const stream = await stt.open(
        { language, sampleRate: this.options.sampleRate },
        { onTranscript: (e) => this.onTranscript(e), onError: (e) => this.options.log('recognizer gave up', { err: e.message }) },
      );
      if (this.closed) await stream.close().catch(() => undefined);
      else this.recognizer = new RecognizerFeed(stream, this.options.sampleRate);
    } catch {
      this.options.log('no recognizer available');
    }
  }

  /** One inbound frame of PCM16. */
  push(frame: Int16Array): void {
    const { clock, sampleRate } = this.options;
    const change = this.vad.push(frame, (frame.length * 1000) / sampleRate);
    // After the VAD, which says whether the frame may wait (recognizer-feed.ts); finalize() below still follows it.
    this.recognizer?.push(frame, this.vad.speaking);
    const now = clock.now();
    if (change === 'speech_start') {
      this.speechStartedAt = now;
      this.endOfSpeechAt = undefined;
      this.utteranceTaken = false;
      this.options.onSpeechStart();
    } else if (change === 'speech_end') {
      if (!this.utteranceTaken) this.endOfSpeechAt = now;
      this.recognizer?.finalize();
      this.options.onSpeechEnd();
    }
    // Talking over the agent counts from when both are talking: the tail of the caller's own turn (the recognizer
    // ended it while the VAD's hangover still says speech) is not talking over the answer to it.
    const agent = this.options.agent();
    if (
      this.vad.speaking &&
      this.speechStartedAt !== undefined &&
      agent?.interruptible &&
      agent.firstAudioAt !== undefined &&
      now - Math.max(this.speechStartedAt, agent.firstAudioAt) >= KEEP_TALKING_MS
    ) {
      this.options.onBargeIn('kept talking');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.recognizer?.close().catch(() => undefined);
  }

  private onTranscript(event: SttEvent): void {
    if (this.closed) return;
    if (event.type === 'partial') {
      this.considerBargeIn(`${this.userText} ${event.text}`, false);
      return;
    }
    if (event.text && event.language) this.options.onLanguage(event.language);
    if (event.text) this.userText = `${this.userText} ${event.text}`.trim();
    const endOfSpeech = event.endOfTurn && this.userText ? this.takeEndOfSpeech() : undefined;
    if (endOfSpeech !== undefined) engineMetrics.stageLatency.observe({ stage: 'stt_final' }, (this.options.clock.now() - endOfSpeech) / 1000);
    // A final that interrupts is still the caller's turn: when it ends the turn, it is answered like any other.
    this.considerBargeIn(this.userText, true);
    if (endOfSpeech === undefined) return;
    const text = this.userText;
    this.userText = '';
    // The agent kept the floor (too few words to interrupt): a backchannel such as "mm-hm", not a turn.
    if (this.options.agent()) return;
    this.options.onUserTurn({ text, startedAt: this.speechStartedAt, endOfSpeech });
  }

  /**
   * The end of speech of the turn the recognizer just ended, which its stages are timed from: the VAD's end of
   * this utterance, or now when the recognizer's endpointing (shorter than the VAD's hangover) ended it first.
   * Never an earlier utterance's: the VAD's end is cleared when speech starts again and once a turn takes it.
   */
  private takeEndOfSpeech(): number {
    const at = this.endOfSpeechAt ?? this.options.clock.now();
    this.endOfSpeechAt = undefined;
    this.utteranceTaken = true;
    return at;
  }

  /** Interrupts the agent when the caller's words call for it. */
  private considerBargeIn(text: string, final: boolean): void {
    if (!this.options.agent()?.interruptible) return;
    const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
    const phrase = words.join(' ');
    const byPhrase = final && this.options.interruptPhrases.some((p) => normalise(p) === phrase);
    if (words.length >= this.options.interruptWords || words.some((w) => STOP_WORDS.has(w)) || byPhrase) {
      this.options.onBargeIn(byPhrase ? 'interrupt phrase' : 'caller words');
    }
  }
}

function normalise(text: string): string {
  return (text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []).join(' ');
}
