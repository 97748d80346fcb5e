import { isDeepStrictEqual } from 'node:util';
import { ApiClient } from '@parley/testing';

/**
 * Reads another account's objects over and over while the fuzzer runs (several reads at once, so they share
 * coalesced batches with the fuzzer's), and records every read that fails or differs from the first.
 */
export class SentinelWatch {
  reads = 0;
  readonly problems = new Set<string>();
  private running = true;
  private readonly loops: Promise<void>[];

  private constructor(
    private readonly owner: ApiClient,
    private readonly snapshots: Map<string, unknown>,
    concurrency: number,
  ) {
    this.loops = Array.from({ length: concurrency }, (_, i) => this.loop(i));
  }

  /** Takes the snapshot of each path (each must read 200) and starts reading. */
  static async start(owner: ApiClient, paths: string[], concurrency = 4): Promise<SentinelWatch> {
    const snapshots = new Map<string, unknown>();
    for (const path of paths) {
      const res = await owner.get(path);
      if (res.status !== 200) throw new Error(`sentinel ${path} reads ${res.status} before fuzzing`);
      snapshots.set(path, res.body);
    }
    return new SentinelWatch(owner, snapshots, concurrency);
  }

  /** Stops reading, then reads each object once more: it must still be exactly as it was. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    for (const path of this.snapshots.keys()) await this.check(path);
  }

  private async loop(offset: number): Promise<void> {
    const paths = [...this.snapshots.keys()];
    for (let i = offset; this.running; i++) {
      await this.check(paths[i % paths.length]);
      // A short pause: the watch shares the two cores with the fuzzer and the platform.
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  private async check(path: string): Promise<void> {
    this.reads++;
    const res = await this.owner.get(path).catch((e: Error) => ({ status: 0, body: e.message }));
    if (res.status !== 200) this.problems.add(`${path} read ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`);
    else if (!isDeepStrictEqual(res.body, this.snapshots.get(path))) this.problems.add(`${path} changed: ${JSON.stringify(res.body).slice(0, 300)}`);
  }
}
