import { BusMessage } from './bus';
import { InProcessBus } from './in-process-bus';
import { IpcBus, IpcBusHost } from './ipc-bus';
import { IpcChannel, IpcMessage, IpcPeer } from './ipc-peer';

/** Two ends of an in-memory channel that, like process IPC, delivers asynchronously and copies every message. */
function channelPair(): [IpcChannel, IpcChannel] {
  const handlers: [((m: IpcMessage) => void)[], ((m: IpcMessage) => void)[]] = [[], []];
  const end = (mine: 0 | 1): IpcChannel => ({
    send: (message) => {
      const copy = JSON.parse(JSON.stringify(message)) as IpcMessage;
      setImmediate(() => handlers[mine === 0 ? 1 : 0].forEach((h) => h(copy)));
    },
    onMessage: (handler) => void handlers[mine].push(handler),
  });
  return [end(0), end(1)];
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

function child(host: IpcBusHost): { bus: IpcBus; peer: IpcPeer } {
  const [parentEnd, childEnd] = channelPair();
  host.attach(new IpcPeer(parentEnd));
  const peer = new IpcPeer(childEnd);
  return { bus: new IpcBus(peer), peer };
}

describe("the bus of a child process (IpcBus over IPC to the parent's bus)", () => {
  let parentBus: InProcessBus;
  let host: IpcBusHost;

  beforeEach(() => {
    parentBus = new InProcessBus();
    parentBus.open();
    host = new IpcBusHost(parentBus);
  });

  afterEach(() => parentBus.close());

  it("hears broadcasts made in the parent, and the parent hears the child's, until it stops listening", async () => {
    const { bus } = child(host);
    const heard: unknown[] = [];
    const stop = await bus.listen('parley.live.call.*', (payload, subject) => heard.push({ subject, payload }));
    const parentHeard: unknown[] = [];
    await parentBus.listen('parley.live.media.>', (payload) => parentHeard.push(payload));

    await parentBus.broadcast('parley.live.call.call_1', { kind: 'status' });
    await bus.broadcast('parley.live.media.load', { streams: 3 });
    await settle();
    expect(heard).toEqual([{ subject: 'parley.live.call.call_1', payload: { kind: 'status' } }]);
    expect(parentHeard).toEqual([{ streams: 3 }]);

    stop();
    await settle();
    await parentBus.broadcast('parley.live.call.call_1', { kind: 'status' });
    await settle();
    expect(heard).toHaveLength(1);
  });

  it("publishes through the parent's bus and acknowledges a durable delivery only after the child's handler succeeded", async () => {
    const { bus } = child(host);
    const received: BusMessage[] = [];
    let fail = true;
    await bus.subscribe('parley.events.>', 'media.events', async (message) => {
      if (fail) throw new Error('not yet');
      received.push(message);
    });

    await expect(parentBus.publish('parley.events.call.started', { id: 1 }, { id: 'e1' })).rejects.toThrow('not yet');
    fail = false;
    await bus.publish('parley.events.call.started', { id: 2 }, { id: 'e2', headers: { 'x-request-id': 'req_1' } });
    expect(received.map((m) => [m.id, m.payload, m.headers['x-request-id']])).toEqual([['e2', { id: 2 }, 'req_1']]);
  });

  it('keeps a durable subscription across a child restart: deliveries fail while no child holds it, then reach the new one', async () => {
    const first = child(host);
    await first.bus.subscribe('parley.events.>', 'media.events', async () => undefined);
    host.detach();
    first.peer.close('exited');
    await expect(parentBus.publish('parley.events.call.ended', {}, { id: 'e1' })).rejects.toThrow(/no process holds the subscription/);

    const second = child(host);
    const received: string[] = [];
    await second.bus.subscribe('parley.events.>', 'media.events', async (m) => void received.push(m.id));
    await parentBus.publish('parley.events.call.ended', {}, { id: 'e1' });
    expect(received).toEqual(['e1']);
  });

  it('ends the listeners of a child that exited', async () => {
    const first = child(host);
    const heard: unknown[] = [];
    await first.bus.listen('parley.live.>', (p) => heard.push(p));
    host.detach();
    await parentBus.broadcast('parley.live.call.call_1', {});
    await settle();
    expect(heard).toEqual([]);
  });

  it("reports the parent bus's health, and unhealthy once the parent is gone", async () => {
    const { bus, peer } = child(host);
    await expect(bus.isHealthy()).resolves.toBe(true);
    peer.close('the parent process has gone');
    await expect(bus.isHealthy()).resolves.toBe(false);
  });
});

describe('IpcPeer', () => {
  it('answers a request for a method nobody handles with an error instead of leaving it pending', async () => {
    const [a, b] = channelPair();
    const caller = new IpcPeer(a);
    new IpcPeer(b);
    await expect(caller.request('nothing.here')).rejects.toThrow('no handler for nothing.here');
  });

  it('fails pending requests when the other side is gone', async () => {
    const [a] = channelPair();
    const caller = new IpcPeer(a);
    const pending = caller.request('slow');
    caller.close('child exited');
    await expect(pending).rejects.toThrow('child exited');
  });
});
