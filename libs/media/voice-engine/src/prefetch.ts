/**
 * A stream read ahead from the moment it is made, into memory: a model's answer started speculatively (while a
 * flow's router decides whether the conversation moves) is then either read, what already came first, or
 * cancelled. Its own signal follows `parent` (the agent turn's), so a barge-in stops it too.
 */
export class Prefetch<T> implements AsyncIterable<T> {
  private readonly controller = new AbortController();
  private readonly items: T[] = [];
  private done = false;
  private failure: { error: unknown } | undefined;
  private wake: (() => void) | undefined;

  constructor(open: (signal: AbortSignal) => AsyncIterable<T>, parent: AbortSignal) {
    const abort = () => this.controller.abort();
    if (parent.aborted) abort();
    else parent.addEventListener('abort', abort, { once: true });
    void this.pull(open(this.controller.signal)).finally(() => parent.removeEventListener('abort', abort));
  }

  /** Stops reading; whatever was read is dropped with it. */
  cancel(): void {
    this.controller.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (let i = 0; ; i++) {
      while (i >= this.items.length && !this.done) await new Promise<void>((resolve) => (this.wake = resolve));
      if (i < this.items.length) {
        yield this.items[i];
        continue;
      }
      if (this.failure) throw this.failure.error;
      return;
    }
  }

  private async pull(source: AsyncIterable<T>): Promise<void> {
    try {
      for await (const item of source) {
        this.items.push(item);
        this.wake?.();
      }
    } catch (error) {
      this.failure = { error };
    } finally {
      this.done = true;
      this.wake?.();
    }
  }
}
