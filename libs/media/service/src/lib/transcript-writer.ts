import { AppError } from '@parley/rpc';
import { transcriptWrites } from './media-metrics';

/** How long a finishing session waits for its transcript to be written before giving up what is left. */
export const TRANSCRIPT_FLUSH_MS = 15_000;
/** First wait before a retry; doubled after each failed attempt up to TRANSCRIPT_MAX_BACKOFF_MS. */
export const TRANSCRIPT_BACKOFF_MS = 200;
export const TRANSCRIPT_MAX_BACKOFF_MS = 5_000;

/** What the session reports to the calls service through the writer. */
export type TranscriptEntryKind = 'turn' | 'tool_call' | 'flow_transition' | 'rating' | 'usage';

export interface TranscriptWriterOptions {
  /** Logs a failure (a refused entry, the first retry of one, what a flush gave up). */
  warn: (fields: Record<string, unknown>, message: string) => void;
  flushMs?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Waits `ms`, or less once `signal` aborts (tests replace the timer). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

interface Entry {
  kind: TranscriptEntryKind;
  send: () => Promise<void>;
}

/**
 * One call's transcript on its way to the calls service: turns, tool-call and flow-transition reports are buffered
 * and sent one at a time in the order they were added, never reordered. A transient failure (`service_unavailable`: the deadline
 * passed, or the service is down or restarting) is retried with exponential backoff (jittered, so the sessions of
 * a restarted service do not retry in step) until it succeeds; a refusal (any other error) drops that entry only.
 * A retry after a deadline may deliver an entry twice: each turn carries its stream and number, which the calls
 * service uses to store it once. `flush` waits for the buffer to drain, with a bound.
 */
export class TranscriptWriter {
  private readonly queue: Entry[] = [];
  private draining: Promise<void> | undefined;
  private readonly givenUp = new AbortController();
  private readonly flushMs: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;

  constructor(private readonly options: TranscriptWriterOptions) {
    this.flushMs = options.flushMs ?? TRANSCRIPT_FLUSH_MS;
    this.backoffMs = options.backoffMs ?? TRANSCRIPT_BACKOFF_MS;
    this.maxBackoffMs = options.maxBackoffMs ?? TRANSCRIPT_MAX_BACKOFF_MS;
    this.sleep = options.sleep ?? sleep;
  }

  /** Entries added and not yet written (nor refused). */
  get pending(): number {
    return this.queue.length;
  }

  /** Queues one entry; `send` is called (again on each retry) once every earlier entry is done. */
  add(kind: TranscriptEntryKind, send: () => Promise<void>): void {
    if (this.givenUp.signal.aborted) {
      this.gaveUp(1, { [kind]: 1 });
      return;
    }
    this.queue.push({ kind, send });
    this.draining ??= this.drain();
  }

  /**
   * Resolves once everything added so far is written, or after the flush bound (or `withinMs`, when sooner: a
   * draining worker's deadline): then the rest is given up (logged with its count, counted as `given_up`), and so
   * is anything added later. Resolves with the number given up.
   */
  async flush(withinMs = this.flushMs): Promise<number> {
    if (!this.draining || this.givenUp.signal.aborted) return 0;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'bound'>((resolve) => (timer = setTimeout(() => resolve('bound'), Math.min(withinMs, this.flushMs))));
    const outcome = await Promise.race([this.draining.then(() => 'drained' as const), bound]);
    clearTimeout(timer);
    if (outcome === 'drained') return 0;
    const left = this.queue.splice(0);
    this.givenUp.abort();
    const byKind: Record<string, number> = {};
    for (const e of left) byKind[e.kind] = (byKind[e.kind] ?? 0) + 1;
    this.gaveUp(left.length, byKind);
    return left.length;
  }

  private gaveUp(count: number, byKind: Record<string, number>): void {
    for (const [kind, n] of Object.entries(byKind)) transcriptWrites.inc({ kind, outcome: 'given_up' }, n);
    this.options.warn({ count, ...byKind }, 'transcript entries not recorded: the calls service did not take them in time');
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.givenUp.signal.aborted) {
      const entry = this.queue[0];
      await this.deliver(entry);
      // A flush that gave up emptied the queue meanwhile; the entry is counted there.
      if (this.queue[0] === entry) this.queue.shift();
    }
    this.draining = undefined;
  }

  private async deliver(entry: Entry): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await entry.send();
        if (!this.givenUp.signal.aborted) transcriptWrites.inc({ kind: entry.kind, outcome: 'written' });
        return;
      } catch (error) {
        if (this.givenUp.signal.aborted) return;
        if (!isTransient(error)) {
          transcriptWrites.inc({ kind: entry.kind, outcome: 'refused' });
          this.options.warn({ err: error, kind: entry.kind }, 'transcript entry refused by the calls service; not recorded');
          return;
        }
        transcriptWrites.inc({ kind: entry.kind, outcome: 'retried' });
        if (attempt === 0) this.options.warn({ err: error, kind: entry.kind }, 'transcript write failed; retrying');
        const ceiling = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
        await this.sleep(ceiling / 2 + (Math.random() * ceiling) / 2, this.givenUp.signal);
        if (this.givenUp.signal.aborted) return;
      }
    }
  }
}

/** The calls service may have been too slow or away: the same request can succeed later. */
export function isTransient(error: unknown): boolean {
  return error instanceof AppError && error.code === 'service_unavailable';
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
