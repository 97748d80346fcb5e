/**
 * Group commit: items added while a write is running are gathered and written together by the next one, so under
 * load one statement carries many items and when idle each item is written at once (no timer, no added latency).
 * Writes never overlap, so they happen in the order the items were added.
 *
 * When a write of several items fails, each item is written again on its own: one bad item cannot fail (and, on a
 * bus, redeliver forever) the unrelated items it happened to be batched with.
 */
export class GroupCommit<T, R = void> {
  private queue: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private writing: Promise<void> | undefined;

  constructor(
    /** Writes a batch; resolves with one result per item, in order. */
    private readonly write: (items: T[]) => Promise<R[]>,
    private readonly maxBatch = 500,
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      // Started on the next turn, so every item added in this one joins the first batch.
      this.writing ??= new Promise<void>((started) => setImmediate(started)).then(() => this.drain());
    });
  }

  /** Resolves once everything added so far is written (or has failed). */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          const results = await this.write(batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(results[i]));
        } catch (error) {
          if (batch.length === 1) batch[0].reject(error);
          else for (const b of batch) await this.write([b.item]).then(([r]) => b.resolve(r), b.reject);
        }
      }
    } finally {
      this.writing = undefined;
    }
  }
}
