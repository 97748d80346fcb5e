import { mulawToPcm16, pcm16ToMulaw, rms } from '@parley/audio';
import { TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { browserMediaProtocol } from '@parley/carrier-web';
import { callsV1, RealtimeServerMessage } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { FakeSpeechToText } from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { CallLinks } from './call-links';
import { CallSession, CallSessionDeps } from './call-session';
import { CallsPort } from './calls-port';
import { until } from './testing/caller-line';
import { directSocket } from './testing/direct-socket';

const CALL = { id: 'call_op', account_id: 'acc_1', agent_id: 'agt_desk', direction: 'inbound', status: 'ringing', recording_enabled: false } as callsV1.Call;

/** The calls service as a claimable call sees it: ringing until `claimed`, then a given-up is refused (409). */
function controlPlane() {
  const state = {
    claimed: false,
    ended: [] as callsV1.EndCallRequest[],
    heartbeats: [] as callsV1.MediaHeartbeatRequest[],
    transfers: [] as string[],
    turns: [] as callsV1.AppendTurnRequest[],
    /** Runs inside an end, before it is recorded: the carrier hanging up first (its stream's stop). */
    whileEnding: async () => undefined as void,
  };
  const calls = {
    attachMedia: async (req: callsV1.AttachMediaRequest) =>
      req.stream_token === 'rtk_operator'
        ? { call: { ...CALL, status: 'in_progress', claimed_by: 'alice' }, resume: '', role: 'operator' }
        : { call: CALL, resume: '', role: 'carrier', awaitClaim: true },
    appendTurn: async (req: callsV1.AppendTurnRequest) => void state.turns.push(req),
    heartbeat: async (req: callsV1.MediaHeartbeatRequest) => (state.heartbeats.push(req), !req.stopped),
    endCall: async (req: callsV1.EndCallRequest) => {
      if (req.reason === 'given_up' && state.claimed) throw new AppError('conflict', 'The call was answered.');
      await state.whileEnding();
      state.ended.push(req);
    },
    transferCall: async (req: callsV1.TransferCallRequest) => {
      if (req.destination === '+15550000000') throw new AppError('validation_error', 'That number cannot be called.');
      state.transfers.push(req.destination);
    },
    recordingReady: async () => undefined,
  } as unknown as CallsPort;
  return { state, calls };
}

/** `stt`: the agent transcribes its calls (transcribe_calls) with this recognizer. */
function deps(calls: CallsPort, links: CallLinks, ringSeconds: number, stt?: FakeSpeechToText): Omit<CallSessionDeps, 'protocol'> {
  return {
    calls,
    agents: { getAgent: async () => ({ spec: { mode: 'conversation', autonomy: 'simple', ring_seconds: ringSeconds, transcribe_calls: !!stt }, effective: {} }) },
    recordings: new LocalBlobStore('/nonexistent'),
    // A call a person answers runs no engine: no provider is asked but a transcribing agent's recognizer.
    providers: (stt ? { stt: [stt] } : {}) as unknown as CallSessionDeps['providers'],
    defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    links,
  };
}

/** The caller's phone, as Twilio streams it. */
async function phone(calls: CallsPort, links: CallLinks, ringSeconds = 30) {
  const media: Int16Array[] = [];
  const closed: [number, string][] = [];
  const session = new CallSession(
    directSocket(
      (frame) => {
        const sent = JSON.parse(frame) as { event: string; media?: { payload: string } };
        if (sent.event === 'media' && sent.media) media.push(mulawToPcm16(Buffer.from(sent.media.payload, 'base64')));
      },
      (code, reason) => void closed.push([code, reason]),
    ),
    { ...deps(calls, links, ringSeconds), protocol: new TwilioMediaStreamProtocol() },
  );
  await session.onFrame(
    JSON.stringify({
      event: 'start',
      sequenceNumber: '1',
      streamSid: 'MZ1',
      start: { streamSid: 'MZ1', accountSid: 'AC1', callSid: 'CA1', tracks: ['inbound'], customParameters: { token: 'stream' }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
    }),
  );
  let seq = 2;
  const say = (pcm: Int16Array) =>
    session.onFrame(JSON.stringify({ event: 'media', sequenceNumber: String(seq++), streamSid: 'MZ1', media: { track: 'inbound', chunk: '1', timestamp: String(seq * 20), payload: pcm16ToMulaw(pcm).toString('base64') } }));
  const hangUp = async () => session.onFrame(JSON.stringify({ event: 'stop', sequenceNumber: '99', streamSid: 'MZ1', stop: { accountSid: 'AC1', callSid: 'CA1' } }));
  return { session, media, closed, say, hangUp };
}

/** A browser on the realtime socket: the operator with the claim's token, or (`rtk_caller`) a web caller. */
async function operator(calls: CallsPort, links: CallLinks, token = 'rtk_operator', stt?: FakeSpeechToText) {
  const sent: RealtimeServerMessage[] = [];
  const closed: [number, string][] = [];
  const session = new CallSession(
    directSocket(
      (frame) => void sent.push(JSON.parse(frame) as RealtimeServerMessage),
      (code, reason) => void closed.push([code, reason]),
    ),
    { ...deps(calls, links, 30, stt), protocol: browserMediaProtocol('web') },
  );
  await session.onFrame(JSON.stringify({ type: 'start', token, version: 1 }));
  let seq = 0;
  const send = (message: Record<string, unknown>) => session.onFrame(JSON.stringify(message));
  const say = (pcm: Int16Array) => send({ type: 'audio', seq: seq++, audio: Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64') });
  const audio = () => sent.filter((m): m is Extract<RealtimeServerMessage, { type: 'audio' }> => m.type === 'audio').map((m) => {
    const b = Buffer.from(m.audio, 'base64');
    return new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  });
  return { session, sent, closed, send, say, audio };
}

/** A 20 ms frame of a steady tone at `rate`. */
const tone = (rate: number, amplitude = 8000) => Int16Array.from({ length: rate / 50 }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / rate)));

describe('a phone call a person answers', () => {
  it('rings the caller (ringback, no agent speaking) until nobody claimed it in ring_seconds, then gives it up', async () => {
    const { state, calls } = controlPlane();
    const caller = await phone(calls, new CallLinks(), 1);
    expect(caller.media.length).toBeGreaterThan(0);
    expect(caller.media.slice(0, 5).every((f) => f.length === 160 && rms(f) > 1000)).toBe(true);
    await until(() => caller.closed.length > 0, 'the ring to run out', 3000);
    expect(state.ended).toEqual([{ account_id: 'acc_1', id: CALL.id, reason: 'given_up' }]);
  });

  it('once the operator who claimed it connects: the ring stops, and each hears the other, resampled both ways', async () => {
    const { state, calls } = controlPlane();
    const links = new CallLinks();
    const caller = await phone(calls, links);
    state.claimed = true;
    const desk = await operator(calls, links);
    expect(desk.sent[0]).toMatchObject({ type: 'call-start', call_id: CALL.id });
    const ringFrames = caller.media.length;

    await caller.say(tone(8000));
    expect(desk.audio()).toHaveLength(1);
    expect(desk.audio()[0]).toHaveLength(320); // 20 ms at 16 kHz
    expect(rms(desk.audio()[0])).toBeGreaterThan(3000);

    for (let i = 0; i < 3; i++) await desk.say(tone(16000));
    const heard = caller.media.slice(ringFrames);
    expect(heard).toHaveLength(3);
    expect(heard.every((f) => f.length === 160)).toBe(true);
    expect(rms(heard[2])).toBeGreaterThan(3000);
    // The ring does not come back.
    await new Promise((r) => setTimeout(r, 150));
    expect(caller.media.length).toBe(ringFrames + 3);
    expect(state.ended).toEqual([]);
  });

  it('plays the operator’s keypress to the caller as its two tones', async () => {
    const { state, calls } = controlPlane();
    const links = new CallLinks();
    const caller = await phone(calls, links);
    state.claimed = true;
    const desk = await operator(calls, links);
    const before = caller.media.length;
    await desk.send({ type: 'dtmf', digit: '5' });
    const keyed = caller.media.slice(before);
    expect(keyed).toHaveLength(9); // 120 ms of tone, 60 ms of silence
    expect(rms(keyed[0])).toBeGreaterThan(3000);
    expect(rms(keyed[8])).toBe(0);
  });

  it('ends the call when the operator hangs up: the operator is told, the phone stream closed', async () => {
    const { state, calls } = controlPlane();
    const links = new CallLinks();
    const caller = await phone(calls, links);
    state.claimed = true;
    const desk = await operator(calls, links);
    await desk.send({ type: 'hangup' });
    expect(desk.sent.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
    expect(caller.closed).toEqual([[1000, 'call ended: completed']]);
    expect(state.heartbeats.filter((h) => h.stopped)).toHaveLength(1);
  });

  it('ends the operator’s socket when the caller hangs up', async () => {
    const { state, calls } = controlPlane();
    const links = new CallLinks();
    const caller = await phone(calls, links);
    state.claimed = true;
    const desk = await operator(calls, links);
    await caller.hangUp();
    expect(desk.sent.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
    expect(desk.closed).toHaveLength(1);
    expect(state.ended).toEqual([]);
  });

  it('takes the carrier’s stop that its own give-up causes for that end, not for the caller hanging up', async () => {
    const { state, calls } = controlPlane();
    const caller = await phone(calls, new CallLinks(), 1);
    state.whileEnding = () => caller.hangUp();
    await until(() => state.ended.length > 0, 'the ring to run out', 3000);
    await new Promise((r) => setTimeout(r, 50));
    expect(state.ended).toEqual([{ account_id: 'acc_1', id: CALL.id, reason: 'given_up' }]);
  });

  it('cancels a call whose caller hung up while it rang', async () => {
    const { state, calls } = controlPlane();
    const caller = await phone(calls, new CallLinks());
    await caller.hangUp();
    expect(state.ended).toEqual([{ account_id: 'acc_1', id: CALL.id, reason: 'caller_left' }]);
  });

  it('puts the call through for the operator, whose socket then ends; a refused transfer is an error and the call goes on', async () => {
    const { state, calls } = controlPlane();
    const links = new CallLinks();
    const caller = await phone(calls, links);
    state.claimed = true;
    const desk = await operator(calls, links);
    await desk.send({ type: 'transfer', destination: '+15550000000' });
    await until(() => desk.sent.some((m) => m.type === 'error'), 'the refused transfer', 1000);
    expect(desk.sent.at(-1)).toMatchObject({ type: 'error', code: 'transfer_failed' });
    expect(desk.closed).toEqual([]);

    await desk.send({ type: 'transfer', destination: '+15551230000' });
    await until(() => desk.closed.length > 0, 'the transfer', 1000);
    expect(state.transfers).toEqual(['+15551230000']);
    expect(desk.sent.at(-1)).toEqual({ type: 'call-end', reason: 'transferred' });
    // The carrier moves the phone's leg; this worker does not close it.
    await desk.session.onClose();
    expect(caller.closed).toEqual([]);
  });
});

describe('a claimed call whose agent transcribes its calls', () => {
  /** 20 ms frames at `rate`: 200 ms of silence, `toneMs` of a sine at `hz`, then 1 s of silence (the end of speech). */
  const utterance = (rate: number, hz: number, toneMs = 500) =>
    Array.from({ length: (200 + toneMs + 1000) / 20 }, (_, f) =>
      f >= 10 && f < 10 + toneMs / 20 ? Int16Array.from({ length: rate / 50 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * hz * (f * rate / 50 + i)) / rate))) : new Int16Array(rate / 50),
    );

  it('transcribes the caller and the operator as their own speakers, and shows each turn on the operator’s page as it is said', async () => {
    const stt = new FakeSpeechToText().queue('I need help with my order.', 'Sure, what is the number?');
    const { state, calls } = controlPlane();
    const links = new CallLinks();
    const caller = await phone(calls, links);
    state.claimed = true;
    const desk = await operator(calls, links, 'rtk_operator', stt);
    for (const frame of utterance(8000, 440)) await caller.say(frame);
    await until(() => state.turns.length === 1, 'the caller’s turn', 3_000);
    for (const frame of utterance(16000, 880)) await desk.say(frame);
    await until(() => state.turns.length === 2, 'the operator’s turn', 3_000);
    expect(state.turns.map((t) => [t.turn?.speaker, t.turn?.role, t.turn?.text])).toEqual([
      ['caller', 'user', 'I need help with my order.'],
      ['alice', 'assistant', 'Sure, what is the number?'],
    ]);
    expect(desk.sent.filter((m) => m.type === 'transcript').map((m) => m.type === 'transcript' && [m.role, m.text])).toEqual([
      ['user', 'I need help with my order.'],
      ['assistant', 'Sure, what is the number?'],
    ]);
    await desk.session.onClose();
    expect(stt.streams.map((s) => s.closed)).toEqual([true, true]);
  });

  it('transcribes nothing when the agent does not ask', async () => {
    const { state, calls } = controlPlane();
    const links = new CallLinks();
    const caller = await phone(calls, links);
    state.claimed = true;
    await operator(calls, links);
    for (const frame of utterance(8000, 440)) await caller.say(frame);
    await new Promise((r) => setTimeout(r, 200));
    expect(state.turns).toEqual([]);
  });
});

describe('a web call a person answers', () => {
  it('rings the browser caller, then each hears the other at 16 kHz once the operator is on the line', async () => {
    const { state, calls } = controlPlane();
    const links = new CallLinks();
    const caller = await operator(calls, links, 'rtk_caller');
    expect(caller.audio().length).toBeGreaterThan(0);
    expect(caller.audio().slice(0, 5).every((f) => f.length === 320 && rms(f) > 1000)).toBe(true);
    state.claimed = true;
    const desk = await operator(calls, links);
    const rung = caller.audio().length;
    await desk.say(tone(16000));
    await caller.say(tone(16000));
    expect(caller.audio().slice(rung)).toHaveLength(1);
    expect(rms(caller.audio()[rung])).toBeGreaterThan(3000);
    expect(desk.audio()).toHaveLength(1);
    await caller.send({ type: 'hangup' });
    expect(desk.sent.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
  });
});

describe('a claimed call whose operator never connects', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('rings on through the claim token’s window, then ends no_answer', async () => {
    const { state, calls } = controlPlane();
    const caller = await phone(calls, new CallLinks(), 1);
    state.claimed = true;
    await jest.advanceTimersByTimeAsync(1000);
    expect(caller.closed).toEqual([]);
    await jest.advanceTimersByTimeAsync(64_000);
    expect(state.ended).toEqual([]);
    await jest.advanceTimersByTimeAsync(1_500);
    expect(state.ended).toEqual([{ account_id: 'acc_1', id: CALL.id, reason: 'no_answer' }]);
    expect(caller.closed).toEqual([[1000, 'call ended: no_answer']]);
  });
});
