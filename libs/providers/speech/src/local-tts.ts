import { ParsedWav, parseWav } from '@parley/audio';
import { readFileSync } from 'node:fs';
import { SpeechError } from './speech-error';
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
 * Speech for `text` from mespeak (eSpeak compiled to JavaScript): a mono 16-bit WAV at 22050 Hz, parsed.
 * Synchronous and CPU-bound (tens of milliseconds per sentence once warm; it blocks the event loop meanwhile).
 */
export function mespeakWav(text: string, options: MespeakOptions = {}): ParsedWav {
  const { voice, variant } = resolveMespeakVoice(options.voice);
  const engine = loadVoice(voice);
  const raw = engine.speak(
    // eSpeak reads its text from the command line: a leading dash would be taken for an option.
    text.startsWith('-') ? ` ${text}` : text,
    {
      rawdata: 'array',
      voice,
      ...(variant ? { variant } : {}),
      speed: Math.round(clampNumber(options.wordsPerMinute, 80, 450, 175)),
      pitch: Math.round(clampNumber(options.pitch, 0, 99, 50)),
    },
  );
  if (!raw) throw new Error(`mespeak produced no audio for voice ${voice}`);
  const wav = parseWav(Buffer.from(raw));
  if (wav.channels !== 1) throw new Error(`mespeak produced ${wav.channels} channels`);
  return wav;
}

export interface LocalTextToSpeechOptions {
  /** Default `local`. */
  name?: string;
  /** Audio per chunk: playback starts after the first, and an abort lands between two. Default 100 ms. */
  chunkMs?: number;
}

/**
 * An offline TextToSpeech on mespeak: no network, no key, robotic but intelligible. The voice is the request's
 * `voiceId` when it names a shipped mespeak voice (`fr`, `en/en-rp+f3`, …), else the one for the language's
 * primary subtag (regional ones where shipped), else `en/en-us`. Speed → 175 × speed words per minute (80-450),
 * pitch → 50 × pitch on mespeak's 0-99 scale. A sentence is synthesized whole, then yielded in `chunkMs` chunks
 * at 22050 Hz, checking the signal between chunks. Measured (Node 20, one core): loading the engine and a voice
 * ~140 ms, the first sentence ~200 ms (JIT warm-up; see `warmUp`), then 10-60 ms per 1-14 word sentence (~100×
 * faster than real time), during which the event loop is blocked.
 */
export class LocalTextToSpeech implements TextToSpeech {
  readonly name: string;
  private readonly chunkMs: number;

  constructor(options: LocalTextToSpeechOptions = {}) {
    this.name = options.name ?? 'local';
    this.chunkMs = options.chunkMs ?? 100;
  }

  /** Loads the engine and the voices for `languages`, and runs one synthesis so the first real one is fast. */
  warmUp(languages: string[] = ['en-US']): void {
    for (const language of languages) mespeakWav('Ready.', { voice: mespeakVoiceFor(language) });
  }

  synthesize(request: SynthesisRequest): AsyncIterable<SpeechChunk> {
    return this.run(request);
  }

  private async *run(request: SynthesisRequest): AsyncGenerator<SpeechChunk> {
    this.checkAborted(request.signal);
    if (!request.text.trim()) return;
    const { voice, variant } = resolveMespeakVoice(request.voiceId, request.language);
    let wav: ParsedWav;
    try {
      wav = mespeakWav(request.text, {
        voice: variant ? `${voice}+${variant}` : voice,
        wordsPerMinute: 175 * (request.speed ?? 1),
        pitch: 50 * (request.pitch ?? 1),
      });
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

// mespeak is a process-wide singleton (one emscripten instance holding the loaded voices), loaded on first use:
// its engine is 5 MB of JavaScript that processes which never speak locally should not pay for.
interface MeSpeak {
  loadConfig(data: unknown): void;
  loadVoice(data: unknown): void;
  speak(text: string, args: Record<string, unknown>): number[] | null;
}

let engine: MeSpeak | undefined;
const loadedVoices = new Set<string>();

function loadEngine(): MeSpeak {
  if (engine) return engine;
  // It announces on load that it cannot play audio without a browser (we only want the raw WAV): keep logs clean.
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    // A plain require: the package ships no types, and is loaded only here, lazily.
    const loaded = require('mespeak') as MeSpeak;
    loaded.loadConfig(readJson('mespeak/src/mespeak_config.json'));
    engine = loaded;
  } finally {
    console.warn = warn;
  }
  return engine;
}

function loadVoice(voice: MespeakVoice): MeSpeak {
  const meSpeak = loadEngine();
  if (!loadedVoices.has(voice)) {
    meSpeak.loadVoice(readJson(`mespeak/voices/${voice}.json`));
    loadedVoices.add(voice);
  }
  return meSpeak;
}

function readJson(module: string): unknown {
  return JSON.parse(readFileSync(require.resolve(module), 'utf8'));
}

function clampNumber(value: number | undefined, min: number, max: number, fallback: number): number {
  return value !== undefined && Number.isFinite(value) ? Math.min(max, Math.max(min, value)) : fallback;
}
