import { CallRecorder, RecorderTrack, resamplePcm16 } from '@parley/audio';
import type { SpeechToText } from '@parley/speech';
import { Clock, FallbackSpeechToText, TurnDetector, Vad } from '@parley/voice-engine';

/** A frame that comes later than this after the end of the one before starts at its arrival: the gap was lost audio. */
export const COPY_LATE_MS = 100;

/**
 * Places frames that carry no timestamp usable across two browsers on a timeline by their arrival: back to back
 * while they come on cadence (network jitter, a burst after a stall), so one voice is never cut into overlapping
 * pieces; a frame later than COPY_LATE_MS after the previous one's end starts at its arrival, leaving silence for
 * what never came.
 */
export class ArrivalTimeline {
  private next = Number.NEGATIVE_INFINITY;

  /** Where a frame of `durationMs` that arrived at `arrivalMs` goes. */
  place(arrivalMs: number, durationMs: number): number {
    const at = arrivalMs - this.next > COPY_LATE_MS ? arrivalMs : this.next;
    this.next = at + durationMs;
    return at;
  }
}

/**
 * A rendezvous' recording, held by the seat that joined first: its own copy on one track (`caller`, the first seat)
 * and the other seat's, forwarded over the link, on the other (`agent`, the second seat), both placed by arrival
 * on one timeline whose origin is the moment the seats met.
 */
export class SeatRecording {
  readonly recorder: CallRecorder;
  private readonly timelines: Record<RecorderTrack, ArrivalTimeline> = { caller: new ArrivalTimeline(), agent: new ArrivalTimeline() };

  constructor(
    private readonly sampleRate: number,
    private readonly origin: number,
    private readonly clock: Clock,
  ) {
    this.recorder = new CallRecorder(sampleRate);
  }

  write(track: RecorderTrack, pcm: Int16Array, rate: number): void {
    const samples = rate === this.sampleRate ? pcm : resamplePcm16(pcm, rate, this.sampleRate);
    const at = this.timelines[track].place(this.clock.now() - this.origin, (samples.length * 1000) / this.sampleRate);
    this.recorder.write(track, samples, Math.max(0, at));
  }
}

/** A finished utterance of one speaker, in ms from the transcriber's origin (the moment the two ends met). */
export interface SpeakerUtterance {
  text: string;
  language: string;
  startMs: number;
  endMs: number;
}

export interface SpeakerTranscriberOptions {
  sampleRate: number;
  /** The deployment's recognizers, the agent's first choice first (tried in order, as the engine does). */
  stt: SpeechToText[];
  language: string;
  /** The worker's VAD for this stream; absent: the engine's energy detector. */
  vad?: Vad;
  clock: Clock;
  onUtterance(utterance: SpeakerUtterance): void;
  log(message: string, fields?: Record<string, unknown>): void;
}

/**
 * One speaker's audio (a rendezvous seat's copy; the caller or the operator of a claimed call) through the configured
 * recognizer, as the engine hears a caller (VAD and streaming recognizer, with fallback), with nobody to answer:
 * each finished utterance is reported. Opened when the two ends meet (an idle vendor stream would be closed while
 * one end rings alone).
 */
export class SpeakerTranscriber {
  private readonly turns: TurnDetector;
  private origin = 0;
  private language: string;

  constructor(private readonly options: SpeakerTranscriberOptions) {
    this.language = options.language;
    this.turns = new TurnDetector({
      clock: options.clock,
      sampleRate: options.sampleRate,
      interruptWords: 0,
      interruptPhrases: [],
      vad: options.vad,
      // Nobody holds the floor: every final that ends an utterance is a turn.
      agent: () => undefined,
      onSpeechStart: () => undefined,
      onSpeechEnd: () => undefined,
      onBargeIn: () => undefined,
      onLanguage: (language) => (this.language = language),
      onUserTurn: (turn) => {
        const endMs = Math.max(0, Math.round(turn.endOfSpeech - this.origin));
        const startMs = turn.startedAt === undefined ? endMs : Math.max(0, Math.round(turn.startedAt - this.origin));
        options.onUtterance({ text: turn.text, language: this.language, startMs, endMs });
      },
      log: options.log,
    });
  }

  open(origin: number): Promise<void> {
    this.origin = origin;
    return this.turns.open(new FallbackSpeechToText(this.options.stt, this.options.log), this.options.language);
  }

  push(pcm: Int16Array): void {
    this.turns.push(pcm);
  }

  close(): Promise<void> {
    return this.turns.close();
  }
}

export interface SeatCopiesOptions {
  /** The agent's record_calls: the seat that joined first records both copies. */
  record: boolean;
  /** The agent's transcribe_calls: this seat's copy is transcribed. */
  transcriber?: SpeakerTranscriber;
  sampleRate: number;
  clock: Clock;
  /** The seat leaves after the seats met: whether its client sent a copy (the call's record shows it). */
  report(sent: boolean): Promise<void>;
  log(message: string, fields?: Record<string, unknown>): void;
}

/**
 * What a rendezvous seat does with the copies of the microphones its client sends on the socket besides the peer
 * connection (asked for with `call-start` `copy`). Nothing before the seats met: before that nobody is on the call
 * to record or transcribe. Then, the seat that joined first (it does not make the offer) records its copy and the
 * other's; the other forwards its copy over the link; each transcribes its own.
 */
export class SeatCopies {
  private recording: SeatRecording | undefined;
  private forward: ((pcm: Int16Array, rate: number) => void) | undefined;
  private meeting = false;
  private copies = 0;

  constructor(private readonly options: SeatCopiesOptions) {}

  /** The recorder, on the seat that records (once the seats met). */
  get recorder(): CallRecorder | undefined {
    return this.recording?.recorder;
  }

  /** The seats met: `makesOffer` says which one this is; `send` puts audio on the link to the other. */
  met(makesOffer: boolean, send: (pcm: Int16Array, rate: number) => void): void {
    if (this.meeting) return;
    this.meeting = true;
    const { clock, record, sampleRate, transcriber } = this.options;
    const origin = clock.now();
    if (record && makesOffer) this.forward = send;
    else if (record) this.recording = new SeatRecording(sampleRate, origin, clock);
    void transcriber?.open(origin);
  }

  /** A frame of this seat's copy (its client's microphone). */
  heard(pcm: Int16Array): void {
    if (!this.meeting) return;
    this.copies++;
    this.options.transcriber?.push(pcm);
    this.recording?.write('caller', pcm, this.options.sampleRate);
    this.forward?.(pcm, this.options.sampleRate);
  }

  /** A frame of the other seat's copy, forwarded to the recording seat. */
  peer(pcm: Int16Array, rate: number): void {
    this.recording?.write('agent', pcm, rate);
  }

  /** The seat leaves: its recognizer closes; whether its client sent a copy is reported (one that sent none yields nothing). */
  async close(): Promise<void> {
    await this.options.transcriber?.close();
    if (!this.meeting) return;
    if (this.copies === 0) this.options.log('the seat sent no copy of its microphone: nothing of it is recorded or transcribed');
    if (this.recording && this.recording.recorder.durationMs === 0) this.options.log('no seat sent a copy of its microphone: the rendezvous has no recording');
    await this.options.report(this.copies > 0);
  }
}
