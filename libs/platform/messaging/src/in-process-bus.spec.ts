import { BusMessage } from './bus';
import { InProcessBus } from './in-process-bus';

/** Lets pending promise callbacks and timers run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

function recorder() {
  const messages: BusMessage[] = [];
  return { messages, handler: async (m: BusMessage) => void messages.push(m) };
}

describe('InProcessBus', () => {
  let bus: InProcessBus;

  beforeEach(() => {
    bus = new InProcessBus();
  });

  afterEach(async () => {
    await bus.close();
  });

  it('holds publishes until open() and then delivers them', async () => {
    const { messages, handler } = recorder();
    await bus.subscribe('parley.domain.>', 'agents-projector', handler);

    let resolved = false;
    const published = bus.publish('parley.domain.agents.agent.created', { agent_id: 'agt_1' }, { id: 'm1' }).then(() => {
      resolved = true;
    });
    await settle();
    expect(messages).toHaveLength(0);
    expect(resolved).toBe(false);

    bus.open();
    await published;

    expect(resolved).toBe(true);
    expect(messages).toHaveLength(1);
  });

  it('delivers to a subscriber that subscribed after the publish but before open()', async () => {
    const published = bus.publish('parley.events.call.started', { n: 1 }, { id: 'm1' });
    const { messages, handler } = recorder();
    await bus.subscribe('parley.events.>', 'dispatcher', handler);

    bus.open();
    await published;

    expect(messages.map((m) => m.payload)).toEqual([{ n: 1 }]);
  });

  it('delivers the id, subject, payload, headers and a first delivery count', async () => {
    const { messages, handler } = recorder();
    await bus.subscribe('parley.events.call.started', 'dispatcher', handler);
    bus.open();

    await bus.publish('parley.events.call.started', { call_id: 'call_1' }, { id: 'evt_1', headers: { 'X-Request-Id': 'req_1' } });

    expect(messages).toEqual([
      {
        id: 'evt_1',
        subject: 'parley.events.call.started',
        payload: { call_id: 'call_1' },
        headers: { 'X-Request-Id': 'req_1' },
        deliveryCount: 1,
      },
    ]);
  });

  it('delivers each message once per durable name', async () => {
    const first = recorder();
    const second = recorder();
    await bus.subscribe('parley.events.>', 'dispatcher', first.handler);
    await bus.subscribe('parley.events.call.*', 'dispatcher', second.handler);
    bus.open();

    await bus.publish('parley.events.call.started', {}, { id: 'm1' });

    expect(first.messages.length + second.messages.length).toBe(1);
  });

  it('fans a message out to every durable name', async () => {
    const dispatcher = recorder();
    const analytics = recorder();
    await bus.subscribe('parley.events.>', 'dispatcher', dispatcher.handler);
    await bus.subscribe('parley.events.call.started', 'analytics', analytics.handler);
    bus.open();

    await bus.publish('parley.events.call.started', { n: 1 }, { id: 'm1' });

    expect(dispatcher.messages.map((m) => m.id)).toEqual(['m1']);
    expect(analytics.messages.map((m) => m.id)).toEqual(['m1']);
  });

  it('delivers only to subscriptions whose subject matches, wildcards included', async () => {
    const events = recorder();
    const domain = recorder();
    const oneToken = recorder();
    await bus.subscribe('parley.events.>', 'events', events.handler);
    await bus.subscribe('parley.domain.>', 'domain', domain.handler);
    await bus.subscribe('parley.events.*', 'one-token', oneToken.handler);
    bus.open();

    await bus.publish('parley.events.call.started', {}, { id: 'e1' });
    await bus.publish('parley.events.call.transcript.updated', {}, { id: 'e2' });
    await bus.publish('parley.domain.agents.agent.created', {}, { id: 'd1' });
    await bus.publish('parley.other', {}, { id: 'o1' });

    expect(events.messages.map((m) => m.id)).toEqual(['e1', 'e2']);
    expect(domain.messages.map((m) => m.id)).toEqual(['d1']);
    expect(oneToken.messages).toEqual([]);
  });

  it('resolves a publish no subscription matches', async () => {
    bus.open();

    await expect(bus.publish('parley.events.call.started', {}, { id: 'm1' })).resolves.toBeUndefined();
  });

  it('rejects the publish when a handler fails, after waiting for every handler', async () => {
    const other = recorder();
    await bus.subscribe('parley.events.>', 'failing', async () => {
      throw new Error('handler failed');
    });
    await bus.subscribe('parley.events.>', 'other', other.handler);
    bus.open();

    await expect(bus.publish('parley.events.call.started', {}, { id: 'm1' })).rejects.toThrow('handler failed');
    expect(other.messages).toHaveLength(1);
  });

  it('resolves only once every handler has finished', async () => {
    let finished = false;
    await bus.subscribe('parley.events.>', 'slow', async () => {
      await settle();
      finished = true;
    });
    bus.open();

    await bus.publish('parley.events.call.started', {}, { id: 'm1' });

    expect(finished).toBe(true);
  });

  it('gives each handler its own copy of the payload and headers', async () => {
    const payload = { call: { id: 'call_1', tags: ['a'] } };
    const headers = { 'X-Request-Id': 'req_1' };
    const seen: unknown[] = [];
    await bus.subscribe('parley.events.>', 'mutator', async (m) => {
      (m.payload as typeof payload).call.tags.push('mutated');
      (m.payload as typeof payload).call.id = 'changed';
      m.headers['X-Request-Id'] = 'changed';
    });
    await bus.subscribe('parley.events.>', 'observer', async (m) => {
      await settle();
      seen.push(structuredClone({ payload: m.payload, headers: m.headers }));
    });
    bus.open();

    await bus.publish('parley.events.call.started', payload, { id: 'm1', headers });

    expect(seen).toEqual([{ payload: { call: { id: 'call_1', tags: ['a'] } }, headers: { 'X-Request-Id': 'req_1' } }]);
    expect(payload).toEqual({ call: { id: 'call_1', tags: ['a'] } });
    expect(headers).toEqual({ 'X-Request-Id': 'req_1' });
  });

  it('delivers the payload as it would cross the wire (JSON)', async () => {
    const { messages, handler } = recorder();
    await bus.subscribe('parley.events.>', 'dispatcher', handler);
    bus.open();

    await bus.publish('parley.events.call.started', { at: new Date('2024-01-02T03:04:05.000Z'), gone: undefined }, { id: 'm1' });

    expect(messages[0].payload).toEqual({ at: '2024-01-02T03:04:05.000Z' });
  });

  it('is healthy until closed, then refuses publishes', async () => {
    bus.open();
    expect(await bus.isHealthy()).toBe(true);

    await bus.close();

    expect(await bus.isHealthy()).toBe(false);
    await expect(bus.publish('parley.events.call.started', {}, { id: 'm1' })).rejects.toThrow('bus closed');
  });

  it('reports its kind', () => {
    expect(bus.kind).toBe('in-process');
  });

  it('broadcasts to every matching listener at once, and to none after it stops listening', async () => {
    const heard: [unknown, string][] = [];
    const stop = await bus.listen('parley.live.call.*', (payload, subject) => void heard.push([payload, subject]));
    await bus.listen('parley.live.call.other', () => void heard.push(['other', 'x']));

    await bus.broadcast('parley.live.call.call_1', { n: 1 });
    stop();
    await bus.broadcast('parley.live.call.call_1', { n: 2 });

    expect(heard).toEqual([[{ n: 1 }, 'parley.live.call.call_1']]);
  });
});
