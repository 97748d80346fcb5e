import { encodeWav } from './wav';

export type RecorderTrack = 'caller' | 'agent';

export interface CallRecorderOptions {
  /**
   * Audio past this offset is dropped (and {@link CallRecorder.truncated} set) rather than growing memory without
   * bound. Default 4 hours, the longest call carriers allow (Twilio's time limit).
   */
  maxDurationMs?: number;
}

const DEFAULT_MAX_DURATION_MS = 4 * 60 * 60 * 1000;
const BLOCK_SECONDS = 10;

/**
 * Records a call as one mono timeline from two mono PCM16 tracks at one sample rate.
 *
 * Each track is kept separately (so a track re-sent over itself overwrites, not doubles) in 10-second blocks
 * allocated on first write: memory follows the audio actually written, about 16 KB per second per track at
 * 8 kHz (~115 MB for an hour of both tracks), never more than `maxDurationMs`. Silence between writes costs
 * nothing until mixing. `finish()` sums the tracks with int16 clipping and returns a WAV file.
 */
export class CallRecorder {
  readonly sampleRate: number;
  readonly maxDurationMs: number;
  private readonly maxSamples: number;
  private readonly blockSize: number;
  private readonly tracks: Record<RecorderTrack, Track>;
  private truncatedAudio = false;

  constructor(sampleRate: number, options: CallRecorderOptions = {}) {
    if (!Number.isInteger(sampleRate) || sampleRate <= 0) {
      throw new RangeError(`sampleRate must be a positive integer, got ${sampleRate}`);
    }
    this.sampleRate = sampleRate;
    this.maxDurationMs = options.maxDurationMs ?? DEFAULT_MAX_DURATION_MS;
    this.maxSamples = Math.floor((this.maxDurationMs * sampleRate) / 1000);
    this.blockSize = sampleRate * BLOCK_SECONDS;
    this.tracks = { caller: new Track(this.blockSize), agent: new Track(this.blockSize) };
  }

  /** Places `samples` on `track` starting `atMs` after the recording start (rounded to the nearest sample). */
  write(track: RecorderTrack, samples: Int16Array, atMs: number): void {
    const target = this.tracks[track];
    if (!target) throw new Error(`Unknown recorder track ${JSON.stringify(track)} (expected "caller" or "agent")`);
    if (!Number.isFinite(atMs) || atMs < 0) throw new RangeError(`atMs must be a non-negative number, got ${atMs}`);
    const start = Math.round((atMs * this.sampleRate) / 1000);
    const room = Math.max(0, this.maxSamples - start);
    if (samples.length > room) {
      this.truncatedAudio = true;
      samples = samples.subarray(0, room);
    }
    if (samples.length > 0) target.write(start, samples);
  }

  /** Length of the recording so far: the end of the latest audio on either track. */
  get durationMs(): number {
    return (Math.max(this.tracks.caller.length, this.tracks.agent.length) * 1000) / this.sampleRate;
  }

  /** Whether audio past `maxDurationMs` was dropped. */
  get truncated(): boolean {
    return this.truncatedAudio;
  }

  /** Both tracks summed into one timeline, clipped to int16; gaps are silence. */
  mix(): Int16Array {
    const { caller, agent } = this.tracks;
    const out = new Int16Array(Math.max(caller.length, agent.length));
    for (let b = 0; b * this.blockSize < out.length; b++) {
      const offset = b * this.blockSize;
      const end = Math.min(this.blockSize, out.length - offset);
      const c = caller.block(b);
      const a = agent.block(b);
      if (c && a) {
        for (let i = 0; i < end; i++) {
          const sum = c[i] + a[i];
          out[offset + i] = sum > 32767 ? 32767 : sum < -32768 ? -32768 : sum;
        }
        continue;
      }
      const only = c ?? a;
      if (only) out.set(only.subarray(0, end), offset);
    }
    return out;
  }

  /** The recording as a mono 16-bit PCM WAV file. The recorder stays usable (more writes, another finish). */
  finish(): Buffer {
    return encodeWav(this.mix(), this.sampleRate);
  }
}

class Track {
  private readonly blocks: (Int16Array | undefined)[] = [];
  /** One past the last sample written. */
  length = 0;

  constructor(private readonly blockSize: number) {}

  block(index: number): Int16Array | undefined {
    return this.blocks[index];
  }

  write(start: number, samples: Int16Array): void {
    for (let done = 0; done < samples.length; ) {
      const at = start + done;
      const index = Math.floor(at / this.blockSize);
      const offset = at - index * this.blockSize;
      const n = Math.min(this.blockSize - offset, samples.length - done);
      const block = (this.blocks[index] ??= new Int16Array(this.blockSize));
      block.set(samples.subarray(done, done + n), offset);
      done += n;
    }
    this.length = Math.max(this.length, start + samples.length);
  }
}
