import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AppError } from '@parley/rpc';
import { perTurnBatch } from './per-turn-batch';

/** Counts hits of a bucket in a fixed window and returns the count including this hit. */
export interface RateLimitStore {
  hit(bucket: string, windowStart: number): Promise<number>;
}

/** Exact for one process: the standalone platform has one gateway. */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly counts = new Map<string, number>();
  private currentWindow = 0;

  async hit(bucket: string, windowStart: number): Promise<number> {
    if (windowStart !== this.currentWindow) {
      this.counts.clear();
      this.currentWindow = windowStart;
    }
    const count = (this.counts.get(bucket) ?? 0) + 1;
    this.counts.set(bucket, count);
    return count;
  }
}

/**
 * Shared by every gateway replica, in an unlogged table with one row per bucket and window. The hits a replica
 * takes in one turn of its event loop are added by one atomic upsert, and each hit still gets its exact place in
 * the count (a batch of n hits ending at total T holds places T-n+1 … T): one statement per turn, not per request.
 */
export class PostgresRateLimitStore implements RateLimitStore {
  private lastPrune = 0;
  private readonly hits = perTurnBatch<{ bucket: string; windowStart: number }, number>((keys) => this.add(keys));

  constructor(private readonly dataSource: DataSource) {}

  hit(bucket: string, windowStart: number): Promise<number> {
    return this.hits.load({ bucket, windowStart });
  }

  private async add(keys: readonly { bucket: string; windowStart: number }[]): Promise<number[]> {
    const slot = (bucket: string, windowStart: number | string) => `${windowStart} ${bucket}`;
    const tally = new Map<string, { bucket: string; windowStart: number; hits: number }>();
    for (const k of keys) {
      const t = tally.get(slot(k.bucket, k.windowStart));
      if (t) t.hits++;
      else tally.set(slot(k.bucket, k.windowStart), { ...k, hits: 1 });
    }
    const batch = [...tally.values()];
    const rows: { bucket: string; window_start: string; count: number }[] = await this.dataSource.query(
      `INSERT INTO rate_limit_windows (bucket, window_start, count)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::int[])
       ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + excluded.count
       RETURNING bucket, window_start, count`,
      [batch.map((t) => t.bucket), batch.map((t) => t.windowStart), batch.map((t) => t.hits)],
    );
    const next = new Map(rows.map((r) => [slot(r.bucket, r.window_start), r.count - tally.get(slot(r.bucket, r.window_start))!.hits + 1]));
    const counts = keys.map((k) => {
      const place = next.get(slot(k.bucket, k.windowStart))!;
      next.set(slot(k.bucket, k.windowStart), place + 1);
      return place;
    });
    const newest = Math.max(...batch.map((t) => t.windowStart));
    if (newest > this.lastPrune) {
      this.lastPrune = newest;
      await this.dataSource.query(`DELETE FROM rate_limit_windows WHERE window_start < $1`, [newest]);
    }
    return counts;
  }
}

export const RATE_LIMIT_STORE = Symbol('RATE_LIMIT_STORE');

/** Where a request stands in its bucket's window, as the X-RateLimit-* headers tell it. */
export interface RateLimitCount {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
  exceeded: boolean;
}

const VERSIONED = /^\/v1(\/|\?|$)/;

/**
 * Per-key rate limit in fixed windows, on every request the gateway answers (unknown routes and framework errors
 * included). A /v1 request counts against the presented credential's digest (or the client address when there is
 * none) in the shared store, so limiting needs no key lookup and also slows down key guessing. Every other path
 * (health, OpenAPI, docs, carrier webhooks) counts against the client address in this process's memory and is
 * never refused: a probe never touches the database and never fails on the limit (a readiness probe answered 429
 * would take the gateway out of service), nor does a carrier's webhook.
 */
export class RateLimiter {
  private readonly local = new MemoryRateLimitStore();

  constructor(
    private readonly limit: number,
    private readonly windowSeconds: number,
    private readonly store: RateLimitStore,
  ) {}

  async take(request: { url: string; credential?: string; address: string }): Promise<RateLimitCount> {
    const windowMs = this.windowSeconds * 1000;
    const now = Date.now();
    const windowStart = Math.floor(now / windowMs) * windowMs;
    const versioned = VERSIONED.test(request.url);
    const bucket =
      versioned && request.credential
        ? `key:${createHash('sha256').update(request.credential).digest('base64url').slice(0, 32)}`
        : `ip:${request.address}`;
    const count = await (versioned ? this.store : this.local).hit(bucket, windowStart);
    return {
      limit: this.limit,
      remaining: Math.max(0, this.limit - count),
      reset: Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000)),
      exceeded: versioned && count > this.limit,
    };
  }

  /** The 429 a request over the limit answers. */
  refusal(count: RateLimitCount): AppError {
    return new AppError('rate_limited', `Too many requests: at most ${count.limit} per ${this.windowSeconds} s.`, undefined, {
      retry_after_seconds: count.reset,
    });
  }
}

export function rateLimitHeaders(count: RateLimitCount): Record<string, string> {
  return {
    'x-ratelimit-limit': String(count.limit),
    'x-ratelimit-remaining': String(count.remaining),
    'x-ratelimit-reset': String(count.reset),
  };
}
