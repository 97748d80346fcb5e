/** Gives a place back; call it once, when the set-up's work (the dial included) is over. */
export type Release = () => void;

interface Waiter {
  grant: (release: Release | undefined) => void;
  timer: NodeJS.Timeout;
}

/** Weight of the newest hold time in the running average the wait estimate uses. */
const SMOOTHING = 0.2;

/**
 * At most `concurrency` call set-ups at once, the others in a FIFO queue whose wait is bounded: a request that
 * could not start within its budget is turned away instead of piling up (under a burst, a queue without a bound
 * only moves the overload into deadlines that pass after the dial). A request is refused at once when the
 * expected wait (its place in the queue times the average hold) already exceeds its budget, and otherwise when
 * the budget runs out while it waits.
 */
export class SetupLimiter {
  private active = 0;
  private readonly queue: Waiter[] = [];
  private averageHoldMs = 0;

  constructor(readonly concurrency: number) {}

  get inFlight(): number {
    return this.active;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** The wait a request arriving now can expect before it starts. */
  expectedWaitMs(): number {
    if (this.active < this.concurrency) return 0;
    return Math.ceil((this.queue.length + 1) / this.concurrency) * this.averageHoldMs;
  }

  /** A place within `maxWaitMs`, or undefined: refused, nothing was started. */
  acquire(maxWaitMs: number): Promise<Release | undefined> {
    if (this.active < this.concurrency && this.queue.length === 0) return Promise.resolve(this.take());
    if (maxWaitMs <= 0 || this.expectedWaitMs() > maxWaitMs) return Promise.resolve(undefined);
    return new Promise((grant) => {
      const waiter: Waiter = {
        grant,
        timer: setTimeout(() => {
          this.queue.splice(this.queue.indexOf(waiter), 1);
          grant(undefined);
        }, maxWaitMs),
      };
      this.queue.push(waiter);
    });
  }

  private take(): Release {
    this.active += 1;
    const started = performance.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const held = performance.now() - started;
      this.averageHoldMs = this.averageHoldMs === 0 ? held : this.averageHoldMs + SMOOTHING * (held - this.averageHoldMs);
      this.active -= 1;
      const next = this.queue.shift();
      if (next) {
        clearTimeout(next.timer);
        next.grant(this.take());
      }
    };
  }
}
