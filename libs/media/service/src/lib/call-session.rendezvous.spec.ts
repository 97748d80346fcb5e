import { browserMediaProtocol } from '@parley/carrier-web';
import { callsV1, RealtimeServerMessage } from '@parley/contracts';
import { parseWav, powerAt } from '@parley/audio';
import { FakeSpeechToText } from '@parley/speech';
import { BlobStore } from '@parley/storage';
import { CallsPort } from './calls-port';
import { CallSession, CallSessionDeps } from './call-session';
import { CallLinks } from './call-links';
import { InProcessBus } from '@parley/messaging';
import { directSocket } from './testing/direct-socket';
import { until } from './testing/caller-line';

const CALL = { id: 'call_r', account_id: 'acc_1', agent_id: 'agt_meet', direction: 'web', status: 'ringing', recording_enabled: false } as callsV1.Call;

/** What the agent does with the seats' copies: record_calls (the call's recording_enabled), transcribe_calls. */
interface CopyOptions {
  record?: boolean;
  transcribe?: boolean;
  /** The recognizer the seats' sessions share (one worker, or each worker its own). */
  stt?: FakeSpeechToText;
}

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
function worker(ringSeconds = 30, links = new CallLinks(), copies: CopyOptions = {}) {
  const rooms = links;
  const ended: callsV1.EndCallRequest[] = [];
  const heartbeats: callsV1.MediaHeartbeatRequest[] = [];
  const turns: callsV1.AppendTurnRequest[] = [];
  const copyReports: callsV1.ReportSeatCopyRequest[] = [];
  const recordings: { key: string; wav: Buffer; ready?: callsV1.RecordingReadyRequest }[] = [];
  const call = { ...CALL, recording_enabled: copies.record === true };
  const calls = {
    attachMedia: async (req: callsV1.AttachMediaRequest) => ({ call, resume: '', seat: req.stream_token.slice(4) }),
    heartbeat: async (req: callsV1.MediaHeartbeatRequest) => (heartbeats.push(req), !req.stopped),
    endCall: async (req: callsV1.EndCallRequest) => void ended.push(req),
    appendTurn: async (req: callsV1.AppendTurnRequest) => void turns.push(req),
    reportSeatCopy: async (req: callsV1.ReportSeatCopyRequest) => void copyReports.push(req),
    recordingReady: async (req: callsV1.RecordingReadyRequest) => void recordings.filter((r) => r.key === req.key).forEach((r) => (r.ready = req)),
  } as unknown as CallsPort;
  const store = { put: async (key: string, wav: Buffer) => void recordings.push({ key, wav }) } as unknown as BlobStore;
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
        agents: { getAgent: async () => ({ spec: { mode: 'webrtc', ring_seconds: ringSeconds, transcribe_calls: copies.transcribe === true }, effective: {} }) },
        recordings: store,
        // A seat runs no engine: only a recognizer, for its copies, is ever asked.
        providers: { stt: copies.stt ? [copies.stt] : [] } as unknown as CallSessionDeps['providers'],
        defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
        links: rooms,
      },
    );
    await session.onFrame(JSON.stringify({ type: 'start', token: `rtk_${name}`, version: 1, call_id: CALL.id }));
    return { session, sent, closed };
  };
  const signal = (from: Seat, data: Record<string, unknown>) => from.session.onFrame(JSON.stringify({ type: 'signal', data }));
  return { rooms, ended, heartbeats, turns, recordings, copyReports, seat, signal };
}

/** Two workers behind a load balancer: each seat lands on its own, and they meet over the bus. */
function twoWorkers(copies: CopyOptions = {}) {
  const bus = new InProcessBus();
  const first = worker(30, new CallLinks(bus), copies);
  const second = worker(30, new CallLinks(bus), copies);
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
    expect(ended).toEqual([expect.objectContaining({ id: CALL.id, reason: 'caller_left' })]);
    expect(rooms.size).toBe(0);
    await new Promise((r) => setTimeout(r, 1_100));
    expect(ended).toHaveLength(1);
  });

  it('tells the only seat hanging up before the other came that the call was canceled', async () => {
    const { seat, ended } = worker();
    const a = await seat('a');
    await a.session.onFrame(JSON.stringify({ type: 'hangup' }));
    expect(ended).toEqual([expect.objectContaining({ reason: 'caller_left' })]);
    expect(of(a, 'call-end')).toEqual([{ type: 'call-end', reason: 'canceled' }]);
  });
});

const RATE = 16_000;
const FRAME = 320;
/** 20 ms frames: `before` of silence, `toneMs` of a sine at `hz`, then `afterMs` of silence (the VAD's end of speech). */
function utterance(hz: number, toneMs = 500, before = 200, afterMs = 1_000): Int16Array[] {
  const frames: Int16Array[] = [];
  let n = 0;
  for (let ms = 0; ms < before + toneMs + afterMs; ms += 20) {
    const loud = ms >= before && ms < before + toneMs;
    frames.push(Int16Array.from({ length: FRAME }, () => (loud ? Math.round(8_000 * Math.sin((2 * Math.PI * hz * n++) / RATE)) : 0)));
  }
  return frames;
}
/** A seat's client sends its copy (all at once: the worker places frames by arrival, back to back). */
async function sendCopy(seat: Seat, frames: Int16Array[]): Promise<void> {
  for (const [seq, pcm] of frames.entries()) {
    await seat.session.onFrame(JSON.stringify({ type: 'audio', seq, audio: Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64') }));
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Power of `hz` in the recording between `fromMs` and `toMs`. */
function energy(wav: Buffer, hz: number, fromMs: number, toMs: number): number {
  const { samples, sampleRate } = parseWav(wav);
  return powerAt(samples.subarray(Math.round((fromMs * sampleRate) / 1000), Math.round((toMs * sampleRate) / 1000)), hz, sampleRate);
}

/**
 * The two seats speak in turn: `a` (joined first: it records) a 440 Hz tone at 200-700 ms, `b` an 880 Hz one about
 * 900 ms later; then `a` hangs up.
 */
async function speakInTurn(a: Seat, b: Seat, close: () => Promise<void>): Promise<void> {
  await sendCopy(a, utterance(440));
  await sleep(900);
  await sendCopy(b, utterance(880));
  await sleep(50);
  await a.session.onFrame(JSON.stringify({ type: 'hangup' }));
  await close();
}

/** One recording holding both seats on one timeline: a's tone where a spoke, b's where b did, neither in the other's place. */
function expectBothOnOneTimeline(recordings: { wav: Buffer; ready?: callsV1.RecordingReadyRequest }[]): void {
  expect(recordings).toHaveLength(1);
  const [{ wav, ready }] = recordings;
  expect(ready).toMatchObject({ call_id: CALL.id, content_type: 'audio/wav' });
  const aSpoke = [300, 600] as const;
  const bSpoke = [1_250, 1_450] as const;
  expect(energy(wav, 440, ...aSpoke)).toBeGreaterThan(100 * Math.max(1, energy(wav, 880, ...aSpoke)));
  expect(energy(wav, 880, ...bSpoke)).toBeGreaterThan(100 * Math.max(1, energy(wav, 440, ...bSpoke)));
  // Silence between the two, on both tracks.
  expect(energy(wav, 440, 800, 1_000) + energy(wav, 880, 800, 1_000)).toBeLessThan(energy(wav, 440, ...aSpoke) / 1_000);
}

describe('copies of the seats’ microphones for the record (record_calls, transcribe_calls)', () => {
  it('asks each seat for a copy (call-start copy) only when the agent records or transcribes calls', async () => {
    const unasked = worker();
    const plain = await unasked.seat('a');
    expect(of(plain, 'call-start')[0]).not.toHaveProperty('copy');
    await unasked.seat('b');
    await plain.session.onClose();
    expect(unasked.copyReports).toEqual([]);
    expect(of(await worker(30, new CallLinks(), { record: true }).seat('a'), 'call-start')[0]).toMatchObject({ copy: true });
    expect(of(await worker(30, new CallLinks(), { transcribe: true, stt: new FakeSpeechToText() }).seat('a'), 'call-start')[0]).toMatchObject({ copy: true });
  });

  it('records both seats’ copies in one recording on the call’s timeline, stored by the seat that joined first', async () => {
    const { seat, recordings } = worker(30, new CallLinks(), { record: true });
    const a = await seat('a');
    const b = await seat('b');
    await speakInTurn(a, b, () => b.session.onClose());
    expectBothOnOneTimeline(recordings);
    expect(recordings[0].ready?.duration_seconds).toBeGreaterThan(2);
  });

  it('records both seats in one recording when they are on two workers (the other seat’s copy forwarded over the bus)', async () => {
    const { first, second } = twoWorkers({ record: true });
    const a = await first.seat('a');
    const b = await second.seat('b');
    await until(() => of(a, 'peer').length > 0 && of(b, 'peer').length > 0, 'the seats to meet', 1_000);
    // Across workers the seat that does not make the offer records, whichever joined first.
    const [recorder, other] = (of(a, 'peer')[0] as { offer?: boolean }).offer ? [b, a] : [a, b];
    await speakInTurn(recorder, other, async () => {
      await until(() => other.closed.length > 0, 'the other seat to close', 1_000);
      await other.session.onClose();
    });
    const stored = [...first.recordings, ...second.recordings];
    expectBothOnOneTimeline(stored);
  });

  it('transcribes each seat as its own speaker: user turns naming the seat, numbered on its stream', async () => {
    const stt = new FakeSpeechToText().queue('Good morning, doctor.', 'Morning! What brings you in?');
    const { seat, turns } = worker(30, new CallLinks(), { transcribe: true, stt });
    const patient = await seat('patient');
    const doctor = await seat('doctor');
    await sendCopy(patient, utterance(440));
    await until(() => turns.length === 1, 'the patient’s turn', 2_000);
    await sendCopy(doctor, utterance(880));
    await until(() => turns.length === 2, 'the doctor’s turn', 2_000);
    expect(turns.map((t) => [t.turn?.speaker, t.turn?.role, t.turn?.text, t.seq])).toEqual([
      ['patient', 'user', 'Good morning, doctor.', 1],
      ['doctor', 'user', 'Morning! What brings you in?', 1],
    ]);
    expect(turns[0].stream_id).not.toBe(turns[1].stream_id);
    // The copy is sent faster than real time, so a turn may start and end within the same millisecond.
    expect(turns[0].turn?.start_ms).toBeGreaterThanOrEqual(0);
    expect(turns[0].turn?.end_ms).toBeGreaterThanOrEqual(turns[0].turn?.start_ms ?? Infinity);
    await patient.session.onClose();
    await doctor.session.onClose();
    expect(stt.streams.map((s) => s.closed)).toEqual([true, true]);
  });

  it('yields nothing of a seat whose client sends no copy: no turns of it, no recording when neither sent one, and the call’s record says which', async () => {
    const stt = new FakeSpeechToText().queue('Only the doctor speaks.');
    const { seat, turns, recordings, copyReports } = worker(30, new CallLinks(), { record: true, transcribe: true, stt });
    const a = await seat('patient');
    const b = await seat('doctor');
    await sendCopy(b, utterance(880));
    await until(() => turns.length === 1, 'the doctor’s turn', 2_000);
    await a.session.onFrame(JSON.stringify({ type: 'hangup' }));
    await b.session.onClose();
    expect(turns.map((t) => t.turn?.speaker)).toEqual(['doctor']);
    // The patient records: only the doctor's copy reached it.
    expect(recordings).toHaveLength(1);
    expect(copyReports.map((r) => [r.seat, r.sent])).toEqual([
      ['patient', false],
      ['doctor', true],
    ]);

    const silent = worker(30, new CallLinks(), { record: true });
    const c = await silent.seat('a');
    const d = await silent.seat('b');
    await c.session.onFrame(JSON.stringify({ type: 'hangup' }));
    await d.session.onClose();
    expect(silent.recordings).toEqual([]);
    expect(c.session.outcome?.recording).toBe('none');
    expect(silent.copyReports.map((r) => r.sent)).toEqual([false, false]);
  });
});
