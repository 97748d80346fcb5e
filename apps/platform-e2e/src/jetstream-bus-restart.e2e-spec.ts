import { BusMessage, JetStreamBus } from '@parley/messaging';
import { DisposableNatsServer } from '@parley/testing';

async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A NATS restart under running buses: a server of this test's own, killed and started again on its store. */
describe('JetStream bus across a NATS restart (own nats-server)', () => {
  let nats: DisposableNatsServer;
  const buses: JetStreamBus[] = [];

  beforeAll(async () => {
    nats = await DisposableNatsServer.start();
  });

  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close().catch(() => undefined)));
    await nats?.stop();
  });

  async function bus(name: string): Promise<JetStreamBus> {
    const b = await JetStreamBus.connect(nats.url, name, 'restart');
    buses.push(b);
    return b;
  }

  it('keeps listeners and durable consumers, and a listen() while NATS is down neither fails nor waits for it', async () => {
    const worker = await bus('worker');
    const calls = await bus('calls');
    const heardBefore: unknown[] = [];
    const heardDuring: unknown[] = [];
    const consumed: BusMessage[] = [];
    await worker.listen('parley.live.call.c1', (p) => heardBefore.push(p));
    await worker.subscribe('parley.events.call.ended', 'restart_test', async (m) => void consumed.push(m));
    await calls.publish('parley.events.call.ended', { n: 1 }, { id: 'restart:1' });
    await waitUntil(() => consumed.length === 1, 10_000, 'the first event');

    await nats.kill();
    const started = Date.now();
    await worker.listen('parley.live.call.c2', (p) => heardDuring.push(p));
    expect(Date.now() - started).toBeLessThan(5_000); // not held until NATS is back (it is not, yet)
    await nats.restart();

    // Both subscriptions are re-sent on reconnect: broadcasts after it are heard (broadcasts are fire-and-forget,
    // so they are repeated until the clients are back); the durable consumer resumes.
    const deadline = Date.now() + 20_000;
    while ((heardBefore.length === 0 || heardDuring.length === 0) && Date.now() < deadline) {
      await calls.broadcast('parley.live.call.c1', { to: 'c1' }).catch(() => undefined);
      await calls.broadcast('parley.live.call.c2', { to: 'c2' }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(heardBefore[0]).toEqual({ to: 'c1' });
    expect(heardDuring[0]).toEqual({ to: 'c2' });

    await calls.publish('parley.events.call.ended', { n: 2 }, { id: 'restart:2' });
    await waitUntil(() => consumed.length === 2, 20_000, 'the event published after the restart');
    expect(consumed.map((m) => m.payload)).toEqual([{ n: 1 }, { n: 2 }]);
  });
});
