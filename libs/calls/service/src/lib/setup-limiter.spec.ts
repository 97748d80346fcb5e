import { Release, SetupLimiter } from './setup-limiter';

describe('SetupLimiter: bounded call set-ups with a bounded queue wait', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs up to its concurrency at once and hands a released place to the longest waiter first', async () => {
    const limiter = new SetupLimiter(2);
    const first = (await limiter.acquire(1000)) as Release;
    const second = (await limiter.acquire(1000)) as Release;
    expect(limiter.inFlight).toBe(2);
    const order: string[] = [];
    const third = limiter.acquire(1000).then((r) => (order.push('third'), r));
    const fourth = limiter.acquire(1000).then((r) => (order.push('fourth'), r));
    expect(limiter.waiting).toBe(2);

    first();
    expect(await third).toBeInstanceOf(Function);
    second();
    expect(await fourth).toBeInstanceOf(Function);
    expect(order).toEqual(['third', 'fourth']);
    expect(limiter.inFlight).toBe(2);
    expect(limiter.waiting).toBe(0);
  });

  it('refuses a waiter whose budget runs out, and the place it would have had goes to the next one', async () => {
    const limiter = new SetupLimiter(1);
    const held = (await limiter.acquire(1000)) as Release;
    const impatient = limiter.acquire(100);
    const patient = limiter.acquire(5000);
    jest.advanceTimersByTime(150);
    expect(await impatient).toBeUndefined();
    expect(limiter.waiting).toBe(1);
    held();
    expect(await patient).toBeInstanceOf(Function);
  });

  it('refuses at once when the expected wait already exceeds the budget, and when there is no budget to wait', async () => {
    const limiter = new SetupLimiter(1);
    // One set-up held for 2 s teaches the limiter the average hold.
    (await limiter.acquire(0))!();
    const slow = (await limiter.acquire(0)) as Release;
    jest.advanceTimersByTime(2000);
    slow();
    const busy = (await limiter.acquire(0)) as Release;
    expect(limiter.expectedWaitMs()).toBeGreaterThan(1000);
    expect(await limiter.acquire(1000)).toBeUndefined();
    expect(await limiter.acquire(0)).toBeUndefined();
    expect(limiter.waiting).toBe(0);
    busy();
    expect(limiter.inFlight).toBe(0);
  });

  it('counts a place once however often its release is called', async () => {
    const limiter = new SetupLimiter(1);
    const release = (await limiter.acquire(0)) as Release;
    release();
    release();
    expect(limiter.inFlight).toBe(0);
    const again = (await limiter.acquire(0)) as Release;
    expect(limiter.inFlight).toBe(1);
    again();
  });
});
