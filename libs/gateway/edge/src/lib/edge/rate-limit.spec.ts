import { MemoryRateLimitStore, RateLimiter, rateLimitHeaders, RateLimitStore } from './rate-limit';

/** A store that records which buckets it was asked to count. */
class RecordingStore implements RateLimitStore {
  readonly buckets: string[] = [];
  private readonly inner = new MemoryRateLimitStore();
  hit(bucket: string, windowStart: number): Promise<number> {
    this.buckets.push(bucket);
    return this.inner.hit(bucket, windowStart);
  }
}

describe('RateLimiter', () => {
  it('counts /v1 requests, unknown routes included, against the presented credential in the shared store', async () => {
    const store = new RecordingStore();
    const limiter = new RateLimiter(2, 60, store);

    await limiter.take({ url: '/v1/agents', credential: 'Bearer vsk_a', address: '10.0.0.1' });
    const second = await limiter.take({ url: '/v1/no-such-route', credential: 'Bearer vsk_a', address: '10.0.0.2' });
    const third = await limiter.take({ url: '/v1?x=1', credential: 'Bearer vsk_a', address: '10.0.0.3' });

    expect(new Set(store.buckets).size).toBe(1);
    expect(store.buckets[0]).toMatch(/^key:/);
    expect(second).toMatchObject({ limit: 2, remaining: 0, exceeded: false });
    expect(third).toMatchObject({ remaining: 0, exceeded: true });
  });

  it('counts /v1 requests without a credential against the client address', async () => {
    const store = new RecordingStore();
    await new RateLimiter(5, 60, store).take({ url: '/v1/agents', address: '10.0.0.1' });

    expect(store.buckets).toEqual(['ip:10.0.0.1']);
  });

  it('counts every other path against the client address in memory, never in the shared store, and never refuses it', async () => {
    const store = new RecordingStore();
    const limiter = new RateLimiter(2, 60, store);

    await limiter.take({ url: '/healthz', credential: 'Bearer vsk_a', address: '10.0.0.1' });
    await limiter.take({ url: '/openapi.json', address: '10.0.0.1' });
    const over = await limiter.take({ url: '/readyz', address: '10.0.0.1' });
    const other = await limiter.take({ url: '/healthz', address: '10.0.0.9' });

    expect(store.buckets).toEqual([]);
    expect(over).toMatchObject({ remaining: 0, exceeded: false });
    expect(other.remaining).toBe(1);
  });

  it('says when the window resets and refuses with retry_after_seconds equal to it', async () => {
    const limiter = new RateLimiter(1, 60, new MemoryRateLimitStore());
    const count = await limiter.take({ url: '/v1/agents', address: 'a' });

    expect(count.reset).toBeGreaterThanOrEqual(1);
    expect(count.reset).toBeLessThanOrEqual(60);
    expect(rateLimitHeaders(count)).toEqual({
      'x-ratelimit-limit': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(count.reset),
    });
    expect(limiter.refusal(count)).toMatchObject({ code: 'rate_limited', extra: { retry_after_seconds: count.reset } });
  });
});
