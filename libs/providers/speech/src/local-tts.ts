import { ParsedWav, parseWav } from '@parley/audio';
import { MespeakLine } from './mespeak-line';
import { MESPEAK_MAX_RECYCLE_AFTER, MESPEAK_RECYCLE_AFTER, MESPEAK_WORKER, mespeakWorkerData, speakMespeakSync } from './mespeak-threads';
import { SpeechError } from './speech-error';
import { SpeechWorkerPool } from './speech-worker-pool';
import { SpeechChunk, SynthesisRequest, TextToSpeech } from './text-to-speech';

/** The voices mespeak ships (`mespeak/voices/<id>.json`). */
export const MESPEAK_VOICES = [
  'ca', 'cs', 'de', 'el', 'en/en', 'en/en-n', 'en/en-rp', 'en/en-sc', 'en/en-us', 'en/en-wm', 'eo', 'es', 'es-la',
  'fi', 'fr', 'hu', 'it', 'kn', 'la', 'lv', 'nl', 'pl', 'pt', 'pt-pt', 'ro', 'sk', 'sv', 'tr', 'zh', 'zh-yue',
] as const;
export type MespeakVoice = (typeof MESPEAK_VOICES)[number];

/** Voice variants built into mespeak, chosen with `<voice>+<variant>` (e.g. `en/en-us+f3` for a female voice). */
export const MESPEAK_VARIANTS = [
  'f1', 'f2', 'f3', 'f4', 'f5', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'croak', 'klatt', 'klatt2', 'klatt3',
  'whisper', 'whisperf',
] as const;

export const MESPEAK_FALLBACK_VOICE: MespeakVoice = 'en/en-us';
/** Sample rate of the WAV mespeak produces. */
export const MESPEAK_SAMPLE_RATE = 22050;

// Whole tags first (regional voices), then primary subtags.
const VOICE_BY_TAG: Record<string, MespeakVoice> = {
  'en-us': 'en/en-us',
  'en-gb': 'en/en',
  'pt-pt': 'pt-pt',
  'pt-br': 'pt',
  'zh-yue': 'zh-yue',
  'zh-hk': 'zh-yue',
  'es-es': 'es',
};
const VOICE_BY_PRIMARY: Record<string, MespeakVoice> = {
  ...Object.fromEntries(MESPEAK_VOICES.filter((v) => !v.includes('/') && !v.includes('-')).map((v) => [v, v])),
  en: 'en/en-us',
  yue: 'zh-yue',
};

/** The mespeak voice for a BCP 47 language: a regional voice, else the language's, else `en/en-us`. */
export function mespeakVoiceFor(language: string): MespeakVoice {
  const tag = language.trim().toLowerCase().replace(/_/g, '-');
  const [primary, region] = tag.split('-');
  const exact = VOICE_BY_TAG[tag] ?? (region ? VOICE_BY_TAG[`${primary}-${region}`] : undefined);
  if (exact) return exact;
  // Spanish outside Spain: the Latin American voice.
  if (primary === 'es' && region) return 'es-la';
  return VOICE_BY_PRIMARY[primary] ?? MESPEAK_FALLBACK_VOICE;
}

export interface MespeakOptions {
  /** A mespeak voice, optionally with a variant (`en/en-us+f3`), or a BCP 47 language. Default `en/en-us`. */
  voice?: string;
  /** 80-450. Default 175. */
  wordsPerMinute?: number;
  /** 0-99. Default 50. */
  pitch?: number;
}

/** `voice` as mespeak voice and variant: a shipped voice id (with a known variant), else the voice for it as a language. */
export function resolveMespeakVoice(voice: string | undefined, language: string = 'en-US'): { voice: MespeakVoice; variant?: string } {
  if (voice) {
    const [base, variant] = voice.trim().toLowerCase().split('+');
    const known = (MESPEAK_VOICES as readonly string[]).includes(base) ? (base as MespeakVoice) : undefined;
    const knownVariant = variant && (MESPEAK_VARIANTS as readonly string[]).includes(variant) ? variant : undefined;
    if (known) return { voice: known, ...(knownVariant ? { variant: knownVariant } : {}) };
    // A language tag mespeak has a voice for (other vendors' voice ids, `alloy` or `ash`, fall through).
    if (/^[a-z]{2,3}(-[a-z0-9]+)*$/.test(base) && VOICE_BY_PRIMARY[base.split('-')[0]]) {
      return { voice: mespeakVoiceFor(base), ...(knownVariant ? { variant: knownVariant } : {}) };
    }
  }
  return { voice: mespeakVoiceFor(language) };
}

/**
 * Speech for `text` from mespeak (eSpeak compiled to JavaScript): a mono 16-bit WAV at 22050 Hz, parsed. For
 * synchronous test tooling: it blocks this thread while a mespeak worker speaks (tens of milliseconds per sentence);
 * LocalTextToSpeech does not use it.
 */
export function mespeakWav(text: string, options: MespeakOptions = {}): ParsedWav {
  return parseMespeakWav(speakMespeakSync(mespeakLine(text, options)));
}

/** What mespeak is asked to say: voice resolved, options clamped to its ranges. */
function mespeakLine(text: string, options: MespeakOptions): MespeakLine {
  const { voice, variant } = resolveMespeakVoice(options.voice);
  return {
    // eSpeak reads its text from the command line: a leading dash would be taken for an option.
    text: text.startsWith('-') ? ` ${text}` : text,
    voice,
    ...(variant ? { variant } : {}),
    wordsPerMinute: Math.round(clampNumber(options.wordsPerMinute, 80, 450, 175)),
    pitch: Math.round(clampNumber(options.pitch, 0, 99, 50)),
  };
}

function parseMespeakWav(bytes: ArrayBuffer): ParsedWav {
  const wav = parseWav(Buffer.from(bytes));
  if (wav.channels !== 1) throw new Error(`mespeak produced ${wav.channels} channels`);
  return wav;
}

export interface LocalTextToSpeechOptions {
  /** Default `local`. */
  name?: string;
  /** Audio per chunk: playback starts after the first, and an abort lands between two. Default 100 ms. */
  chunkMs?: number;
  /** Worker threads that synthesize at once (`LOCAL_TTS_WORKERS`). Default 1. */
  workers?: number;
  /** Lines a worker speaks before it is replaced, 1-60 (mespeak breaks on its 80th). Default 40. */
  recycleAfter?: number;
}

/** A line unanswered this long means a hung worker (a sentence takes 10-100 ms; a long paragraph under 1 s). */
const LINE_DEADLINE_MS = 5_000;
/** Loading the engine takes ~0.3 s; far longer means a worker that will not start. */
const WORKER_START_TIMEOUT_MS = 30_000;
/** Lines that may wait per worker: ~1.5 s of synthesis, inside the 3 s the engine gives a voice before its fallback. */
const QUEUE_PER_WORKER = 32;

/**
 * An offline TextToSpeech on mespeak: no network, no key, robotic but intelligible. The voice is the request's
 * `voiceId` when it names a shipped mespeak voice (`fr`, `en/en-rp+f3`, …), else the one for the language's
 * primary subtag (regional ones where shipped), else `en/en-us`. Speed → 175 × speed words per minute (80-450),
 * pitch → 50 × pitch on mespeak's 0-99 scale. A sentence is synthesized whole, then yielded in `chunkMs` chunks
 * at 22050 Hz, checking the signal between chunks.
 *
 * mespeak runs only in a pool of worker threads (SpeechWorkerPool; this thread never loads it): a sentence costs
 * 10-100 ms of CPU that would otherwise block the event loop, and a realm breaks on its 80th sentence, so each
 * worker is replaced after `recycleAfter` lines and on any failure (the line retried once on a fresh worker).
 * Workers start on first use or `warmUp` (loading the engine and a voice ~0.3 s) and do not keep the process alive.
 */
export class LocalTextToSpeech implements TextToSpeech {
  readonly name: string;
  private readonly chunkMs: number;
  private readonly pool: SpeechWorkerPool<MespeakLine, ArrayBuffer>;
  /** Every voice asked for so far: a replacement worker loads them before it takes a line. */
  private readonly voices = new Set<string>();

  constructor(options: LocalTextToSpeechOptions = {}) {
    this.name = options.name ?? 'local';
    this.chunkMs = options.chunkMs ?? 100;
    const workers = options.workers ?? 1;
    const recycleAfter = options.recycleAfter ?? MESPEAK_RECYCLE_AFTER;
    if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`workers must be a positive integer, not ${workers}`);
    if (!Number.isInteger(recycleAfter) || recycleAfter < 1 || recycleAfter > MESPEAK_MAX_RECYCLE_AFTER) {
      throw new RangeError(`recycleAfter must be an integer from 1 to ${MESPEAK_MAX_RECYCLE_AFTER}, not ${recycleAfter}`);
    }
    // Nothing starts before the first line or warmUp: processes that never speak locally pay nothing.
    this.pool = new SpeechWorkerPool({
      provider: this.name,
      entry: MESPEAK_WORKER,
      workerData: () => mespeakWorkerData([...this.voices]),
      size: workers,
      recycleAfter,
      deadlineMs: LINE_DEADLINE_MS,
      startTimeoutMs: WORKER_START_TIMEOUT_MS,
      maxQueue: QUEUE_PER_WORKER * workers,
    });
  }

  /** Workers started, recycled and failed so far. */
  get stats() {
    return this.pool.stats;
  }

  /** Starts the workers with the voices for `languages` loaded and one line spoken, so the first real one is fast. */
  async warmUp(languages: string[] = ['en-US']): Promise<void> {
    for (const language of languages) this.voices.add(mespeakVoiceFor(language));
    await this.pool.warmUp();
  }

  /** Stops the workers; lines waiting or running are rejected. */
  close(): Promise<void> {
    return this.pool.close();
  }

  synthesize(request: SynthesisRequest): AsyncIterable<SpeechChunk> {
    return this.run(request);
  }

  private async *run(request: SynthesisRequest): AsyncGenerator<SpeechChunk> {
    this.checkAborted(request.signal);
    if (!request.text.trim()) return;
    const { voice, variant } = resolveMespeakVoice(request.voiceId, request.language);
    const line = mespeakLine(request.text, {
      voice: variant ? `${voice}+${variant}` : voice,
      wordsPerMinute: 175 * (request.speed ?? 1),
      pitch: 50 * (request.pitch ?? 1),
    });
    this.voices.add(line.voice);
    const bytes = await this.pool.run(line, request.signal);
    let wav: ParsedWav;
    try {
      wav = parseMespeakWav(bytes);
    } catch (error) {
      throw new SpeechError(`${this.name}: ${error instanceof Error ? error.message : String(error)}`, {
        code: 'invalid_response',
        provider: this.name,
        cause: error,
      });
    }
    const perChunk = Math.max(1, Math.round((this.chunkMs * wav.sampleRate) / 1000));
    for (let at = 0; at < wav.samples.length; at += perChunk) {
      this.checkAborted(request.signal);
      yield { pcm: wav.samples.slice(at, at + perChunk), sampleRate: wav.sampleRate };
    }
    this.checkAborted(request.signal);
  }

  private checkAborted(signal: AbortSignal): void {
    if (signal.aborted) throw new SpeechError(`${this.name}: synthesis aborted`, { code: 'aborted', provider: this.name });
  }
}

function clampNumber(value: number | undefined, min: number, max: number, fallback: number): number {
  return value !== undefined && Number.isFinite(value) ? Math.min(max, Math.max(min, value)) : fallback;
}
