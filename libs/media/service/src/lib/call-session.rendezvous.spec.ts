import { browserMediaProtocol } from '@parley/carrier-web';
import { callsV1, RealtimeServerMessage } from '@parley/contracts';
import { LocalBlobStore } from '@parley/storage';
import { CallsPort } from './calls-port';
import { CallSession, CallSessionDeps } from './call-session';
import { CallLinks } from './call-links';
import { InProcessBus } from '@parley/messaging';
import { directSocket } from './testing/direct-socket';
import { until } from './testing/caller-line';

const CALL = { id: 'call_r', account_id: 'acc_1', agent_id: 'agt_meet', direction: 'web', status: 'ringing', recording_enabled: true } as callsV1.Call;

/** One browser on a seat: what it was sent and how its socket closed. */
interface Seat {
  session: CallSession;
  sent: RealtimeServerMessage[];
  closed: [number, string][];
}

/**
 * Seats on one worker (its CallLinks; `links` of another shares a bus with it: two workers), a calls service that
 * seats tokens `rtk_<seat>`, and the agent's ring_seconds.
 */
function worker(ringSeconds = 30, links = new CallLinks()) {
  const rooms = links;
  const ended: callsV1.EndCallRequest[] = [];
  const heartbeats: callsV1.MediaHeartbeatRequest[] = [];
  const calls = {
    attachMedia: async (req: callsV1.AttachMediaRequest) => ({ call: CALL, resume: '', seat: req.stream_token.slice(4) }),
    heartbeat: async (req: callsV1.MediaHeartbeatRequest) => (heartbeats.push(req), !req.stopped),
    endCall: async (req: callsV1.EndCallRequest) => void ended.push(req),
  } as unknown as CallsPort;
  const seat = async (name: string): Promise<Seat> => {
    const sent: RealtimeServerMessage[] = [];
    const closed: [number, string][] = [];
    const session = new CallSession(
      directSocket(
        (frame) => void sent.push(JSON.parse(frame) as RealtimeServerMessage),
        (code, reason) => void closed.push([code, reason]),
      ),
      {
        protocol: browserMediaProtocol('web'),
        calls,
        agents: { getAgent: async () => ({ spec: { mode: 'webrtc', ring_seconds: ringSeconds }, effective: {} }) },
        recordings: new LocalBlobStore('/nonexistent'),
        // A seat runs no engine: no provider is ever asked.
        providers: {} as CallSessionDeps['providers'],
        defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
        links: rooms,
      },
    );
    await session.onFrame(JSON.stringify({ type: 'start', token: `rtk_${name}`, version: 1, call_id: CALL.id }));
    return { session, sent, closed };
  };
  const signal = (from: Seat, data: Record<string, unknown>) => from.session.onFrame(JSON.stringify({ type: 'signal', data }));
  return { rooms, ended, heartbeats, seat, signal };
}

/** Two workers behind a load balancer: each seat lands on its own, and they meet over the bus. */
function twoWorkers() {
  const bus = new InProcessBus();
  const first = worker(30, new CallLinks(bus));
  const second = worker(30, new CallLinks(bus));
  return { first, second };
}

const of = (seat: Seat, type: RealtimeServerMessage['type']) => seat.sent.filter((m) => m.type === type);

describe('a rendezvous whose seats reach two media workers', () => {
  it('pairs the seats over the bus: each told of the other, exactly one making the offer, signals relayed both ways, one leaving ends the other', async () => {
    const { first, second } = twoWorkers();
    const a = await first.seat('a');
    const b = await second.seat('b');
    await until(() => of(a, 'peer').length > 0 && of(b, 'peer').length > 0, 'the seats to meet', 1_000);
    expect(of(a, 'peer')[0]).toMatchObject({ state: 'joined', seat: 'b' });
    expect(of(b, 'peer')[0]).toMatchObject({ state: 'joined', seat: 'a' });
    const offers = [of(a, 'peer')[0], of(b, 'peer')[0]].filter((p) => p.type === 'peer' && p.offer);
    expect(offers).toHaveLength(1);

    await first.signal(a, { sdp: { type: 'offer', sdp: 'v=0' } });
    await second.signal(b, { candidate: null });
    await until(() => of(b, 'signal').length > 0 && of(a, 'signal').length > 0, 'the signals', 1_000);
    expect(of(b, 'signal')).toEqual([{ type: 'signal', data: { sdp: { type: 'offer', sdp: 'v=0' } } }]);
    expect(of(a, 'signal')).toEqual([{ type: 'signal', data: { candidate: null } }]);

    await a.session.onFrame(JSON.stringify({ type: 'hangup' }));
    await until(() => b.closed.length > 0, 'the other seat to close', 1_000);
    expect(of(b, 'call-end')).toEqual([{ type: 'call-end', reason: 'completed' }]);
    expect(first.ended).toEqual([]);
  });
});

describe('a rendezvous on the realtime socket (two seats, one worker)', () => {
  it('tells each seat when the other joined, the second to join making the offer, and speaks no greeting', async () => {
    const { seat } = worker();
    const a = await seat('a');
    expect(a.sent).toEqual([expect.objectContaining({ type: 'call-start', call_id: CALL.id, direction: 'web' })]);
    const b = await seat('b');
    expect(of(a, 'peer')).toEqual([{ type: 'peer', state: 'joined', seat: 'b' }]);
    expect(of(b, 'peer')).toEqual([{ type: 'peer', state: 'joined', seat: 'a', offer: true }]);
    expect([...a.sent, ...b.sent].some((m) => m.type === 'audio' || m.type === 'transcript')).toBe(false);
  });

  it('relays signals from one seat to the other as sent, in order, both ways; none is echoed, none kept before the peer came', async () => {
    const { seat, signal } = worker();
    const a = await seat('a');
    await signal(a, { early: true });
    const b = await seat('b');
    await signal(b, { sdp: { type: 'offer', sdp: 'v=0…' } });
    for (let i = 0; i < 5; i++) await signal(b, { candidate: { candidate: `candidate:${i}`, sdpMid: '0' } });
    await signal(a, { sdp: { type: 'answer', sdp: 'v=0…a' } });
    await signal(a, { candidate: null });

    expect(of(a, 'signal')).toEqual([
      { type: 'signal', data: { sdp: { type: 'offer', sdp: 'v=0…' } } },
      ...[0, 1, 2, 3, 4].map((i) => ({ type: 'signal', data: { candidate: { candidate: `candidate:${i}`, sdpMid: '0' } } })),
    ]);
    expect(of(b, 'signal')).toEqual([
      { type: 'signal', data: { sdp: { type: 'answer', sdp: 'v=0…a' } } },
      { type: 'signal', data: { candidate: null } },
    ]);
  });

  it('drops a signal larger than 64 KiB or that is not an object', async () => {
    const { seat, signal } = worker();
    const a = await seat('a');
    const b = await seat('b');
    await signal(a, { sdp: 'x'.repeat(70_000) });
    await a.session.onFrame(JSON.stringify({ type: 'signal', data: 'offer' }));
    expect(of(b, 'signal')).toEqual([]);
  });

  it('ends it when one seat hangs up: the other is told its peer left, gets call-end completed and is closed; both heartbeats stop', async () => {
    const { seat, rooms, heartbeats } = worker();
    const a = await seat('a');
    const b = await seat('b');
    await a.session.onFrame(JSON.stringify({ type: 'hangup' }));
    expect(of(b, 'peer').at(-1)).toEqual({ type: 'peer', state: 'left', seat: 'a' });
    expect(of(b, 'call-end')).toEqual([{ type: 'call-end', reason: 'completed' }]);
    expect(b.closed).toEqual([[1000, 'call ended: completed']]);
    expect(of(a, 'call-end')).toEqual([{ type: 'call-end', reason: 'completed' }]);
    await b.session.onClose();
    expect(heartbeats.filter((h) => h.stopped)).toHaveLength(2);
    expect(rooms.size).toBe(0);
  });

  it('passes the reason of an end from elsewhere (the API’s hangup) on to the other seat, once', async () => {
    const { seat } = worker();
    const a = await seat('a');
    const b = await seat('b');
    a.session.endStream('hangup');
    b.session.endStream('hangup');
    await a.session.onClose();
    expect(of(b, 'call-end')).toEqual([{ type: 'call-end', reason: 'hangup' }]);
    expect(b.closed).toHaveLength(1);
  });

  it('gives the call up after the agent’s ring_seconds when the second seat never comes: the first gets call-end no_answer', async () => {
    const { seat, ended } = worker(1);
    const startedAt = performance.now();
    const a = await seat('a');
    await until(() => of(a, 'call-end').length > 0, 'the ring to run out', 3_000);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(990);
    expect(ended).toEqual([expect.objectContaining({ id: CALL.id, reason: 'given_up' })]);
    expect(of(a, 'call-end')).toEqual([{ type: 'call-end', reason: 'no_answer' }]);
    expect(a.closed).toEqual([[1000, 'call ended: no_answer']]);
  });

  it('cancels the call when the only seat leaves before the other came (as a caller hanging up before the answer), and stops ringing', async () => {
    const { seat, ended, rooms } = worker(1);
    const a = await seat('a');
    await a.session.onClose();
    expect(ended).toEqual([expect.objectContaining({ id: CALL.id, reason: 'hangup' })]);
    expect(rooms.size).toBe(0);
    await new Promise((r) => setTimeout(r, 1_100));
    expect(ended).toHaveLength(1);
  });

  it('tells the only seat hanging up before the other came that the call was canceled', async () => {
    const { seat, ended } = worker();
    const a = await seat('a');
    await a.session.onFrame(JSON.stringify({ type: 'hangup' }));
    expect(ended).toEqual([expect.objectContaining({ reason: 'hangup' })]);
    expect(of(a, 'call-end')).toEqual([{ type: 'call-end', reason: 'canceled' }]);
  });
});
