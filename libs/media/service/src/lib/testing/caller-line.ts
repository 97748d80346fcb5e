import { performance } from 'node:perf_hooks';
import { pcm16ToMulaw } from '@parley/audio';
import { FakeMediaStream } from '@parley/carrier-twilio';

// Shared by the media worker's scenario tests (conversation, agent actions): the caller's side of a call.

const RATE = 8000;
const FRAME_BYTES = 160;

/** Low-level line noise (RMS ≈ 70 of 32767) as μ-law, one second, deterministic. */
export const COMFORT_NOISE = (() => {
  const pcm = new Int16Array(RATE);
  let seed = 12345;
  for (let i = 0; i < pcm.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    pcm[i] = Math.round(((seed / 0x7fffffff) * 2 - 1) * 120);
  }
  return pcm16ToMulaw(pcm);
})();

/**
 * The caller's side of the line, as Twilio streams it: one 20 ms `media` frame every 20 ms of real time, without
 * gaps. What the caller says is queued in; between utterances the line carries comfort noise.
 */
export class CallerLine {
  private readonly queue: { frame: Buffer; onSent?: (at: number) => void }[] = [];
  private readonly pending = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private nextAt = 0;
  private noiseAt = 0;
  private stopped = false;

  constructor(private readonly stream: FakeMediaStream) {}

  start(): void {
    this.nextAt = performance.now();
    this.tick();
  }

  /** Speaks `mulaw` in real time; resolves with when its first frame left and when its last one ended. */
  say(mulaw: Buffer): Promise<{ startedAt: number; endedAt: number }> {
    return new Promise((resolve) => {
      let startedAt = NaN;
      const done = () => resolve({ startedAt, endedAt: performance.now() });
      this.pending.add(done);
      for (let at = 0; at < mulaw.length; at += FRAME_BYTES) {
        const first = at === 0;
        const last = at + FRAME_BYTES >= mulaw.length;
        this.queue.push({
          frame: mulaw.subarray(at, at + FRAME_BYTES),
          onSent: first || last ? (sentAt) => {
            if (first) startedAt = sentAt;
            if (last) {
              this.pending.delete(done);
              resolve({ startedAt, endedAt: sentAt + 20 });
            }
          } : undefined,
        });
      }
    });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const done of this.pending) done();
    this.pending.clear();
  }

  private tick(): void {
    if (this.stopped) return;
    if (!this.stream.open) return this.stop();
    const now = performance.now();
    // A stalled event loop (mespeak synthesizing, a busy machine) loses the line's frames meanwhile, as a network
    // would: bursting them afterwards would play what the caller says next faster than real time.
    if (now - this.nextAt > 60) this.nextAt = now;
    // Every frame due by now (a slightly late timer sends two or three at once).
    while (this.nextAt <= now) {
      const next = this.queue.shift();
      const frame = next?.frame ?? this.noise();
      this.stream.sendAudio(frame).catch(() => this.stop());
      next?.onSent?.(this.nextAt);
      this.nextAt += 20;
    }
    this.timer = setTimeout(() => this.tick(), Math.max(0, this.nextAt - performance.now()));
  }

  private noise(): Buffer {
    if (this.noiseAt + FRAME_BYTES > COMFORT_NOISE.length) this.noiseAt = 0;
    const frame = COMFORT_NOISE.subarray(this.noiseAt, this.noiseAt + FRAME_BYTES);
    this.noiseAt += FRAME_BYTES;
    return frame;
  }
}

/** Resolves with the probe's first truthy value, polled every 5 ms. */
export async function until<T>(probe: () => T | undefined | null | false, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
