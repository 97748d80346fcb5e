import { SpeechChunk, SynthesisRequest, TextToSpeech } from '@parley/speech';

/** A synthesis request without its per-turn signal: what a fixed line is cached by. */
export type LineRequest = Omit<SynthesisRequest, 'signal'>;

interface Entry {
  chunks: SpeechChunk[];
  bytes: number;
  done: boolean;
  failed?: unknown;
  /** Produced by another provider than the voice's first choice (its fallback): played, not kept. */
  standIn?: boolean;
  /** Readers waiting for the next chunk. */
  waiting: (() => void)[];
}

/** 8 MB: about four minutes of 16 kHz audio, the fixed lines of many agents. */
export const LINE_CACHE_BYTES = 8 * 1024 * 1024;

/**
 * The audio of fixed lines (greetings, silence prompts, goodbyes, keypad menus, voicemail messages), one cache per
 * worker shared by its calls, so a line known in advance starts at its moment instead of after the synthesizer's
 * time to first audio. Keyed by voice (provider and voice id), language, speed, pitch and text; bounded by
 * bytes, least recently used first out. A line still being synthesized is read as it comes (the greeting is
 * asked for when the call starts and played at once); a line whose synthesis failed or gave no audio is not kept,
 * nor one a fallback voice spoke (chunks naming another provider than the voice's): later calls ask the first
 * choice again rather than hear another voice's line until it is evicted.
 */
export class LineCache {
  private readonly entries = new Map<string, Entry>();
  private held = 0;

  constructor(private readonly maxBytes: number = LINE_CACHE_BYTES) {}

  /** Bytes of audio held. */
  get bytes(): number {
    return this.held;
  }

  /** Starts synthesizing the line now, unless held already, so it is ready when it is needed. */
  prepare(tts: TextToSpeech, request: LineRequest): Promise<void> {
    const entry = this.entry(tts, request);
    return new Promise<void>((resolve) => {
      const check = (): void => {
        if (entry.done || entry.failed !== undefined) resolve();
        else entry.waiting.push(check);
      };
      check();
    });
  }

  /** The line's audio: from the cache when held (as it arrives, if still being synthesized), else synthesized now. */
  synthesize(tts: TextToSpeech, request: SynthesisRequest): AsyncIterable<SpeechChunk> {
    return read(this.entry(tts, request), request.signal);
  }

  private entry(tts: TextToSpeech, request: LineRequest): Entry {
    const k = key(tts, request);
    const held = this.entries.get(k);
    if (held) {
      // Most recently used last: eviction takes from the front.
      this.entries.delete(k);
      this.entries.set(k, held);
      return held;
    }
    const entry: Entry = { chunks: [], bytes: 0, done: false, waiting: [] };
    this.entries.set(k, entry);
    void this.produce(k, entry, tts, request);
    return entry;
  }

  /** Synthesizes a line to the end, whoever listens: the next call with this line wants all of it. */
  private async produce(k: string, entry: Entry, tts: TextToSpeech, request: LineRequest): Promise<void> {
    try {
      for await (const chunk of tts.synthesize({ ...request, signal: new AbortController().signal })) {
        if ('provider' in chunk && chunk.provider !== tts.name) entry.standIn = true;
        entry.chunks.push(chunk);
        entry.bytes += chunk.pcm.byteLength;
        if (this.entries.get(k) === entry) this.held += chunk.pcm.byteLength;
        wake(entry);
      }
      entry.done = true;
      if (!entry.chunks.length || entry.standIn) this.drop(k, entry);
    } catch (error) {
      entry.failed = error;
      this.drop(k, entry);
    }
    wake(entry);
    this.evict();
  }

  private drop(k: string, entry: Entry): void {
    if (this.entries.get(k) !== entry) return;
    this.entries.delete(k);
    this.held -= entry.bytes;
  }

  /** Oldest complete lines go first until the bound holds (lines being synthesized are counted, never dropped). */
  private evict(): void {
    for (const [k, entry] of this.entries) {
      if (this.held <= this.maxBytes) return;
      if (entry.done) this.drop(k, entry);
    }
  }
}

function key(tts: TextToSpeech, r: LineRequest): string {
  return [tts.name, r.voiceId ?? '', r.language, r.model ?? '', r.speed ?? '', r.pitch ?? '', r.text].join('\u0000');
}

function wake(entry: Entry): void {
  const waiting = entry.waiting;
  entry.waiting = [];
  for (const w of waiting) w();
}

async function* read(entry: Entry, signal: AbortSignal): AsyncIterable<SpeechChunk> {
  for (let i = 0; !signal.aborted; i++) {
    while (i >= entry.chunks.length && !entry.done && entry.failed === undefined && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const go = () => {
          signal.removeEventListener('abort', go);
          resolve();
        };
        entry.waiting.push(go);
        signal.addEventListener('abort', go);
      });
    }
    if (signal.aborted) return;
    if (i < entry.chunks.length) yield entry.chunks[i];
    else if (entry.failed !== undefined) throw entry.failed;
    else return;
  }
}
