import { REALTIME_CLOSE, REALTIME_PROTOCOL_VERSION, RealtimeClientMessage, RealtimeServerMessage } from '@parley/contracts/realtime';
import { CallEndEvent, ErrorEvent, ParleyCall, VERSION, VolumeEvent } from './call';
import { AudioHandlers, AudioIO, CallEnvironment, SocketLike } from './environment';
import { ParleyError } from './errors';
import { decodePcm16, encodePcm16 } from './pcm';
import { Description, PeerConnectionLike, PeerIO } from './peer';

const URL = 'ws://media.example:8081/realtime';
const TOKEN = 'rtk_test_token';

class FakeSocket implements SocketLike {
  readyState = 0;
  onopen: SocketLike['onopen'] = null;
  onmessage: SocketLike['onmessage'] = null;
  onclose: SocketLike['onclose'] = null;
  onerror: SocketLike['onerror'] = null;
  readonly sent: RealtimeClientMessage[] = [];
  closedWith?: { code?: number; reason?: string };

  constructor(readonly url: string) {}

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }

  close(code?: number, reason?: string): void {
    this.closedWith = { code, reason };
    this.readyState = 3;
  }

  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }

  receive(message: RealtimeServerMessage): void {
    this.onmessage?.({ data: JSON.stringify(message) });
  }

  /** The worker closes the socket. */
  serverClose(code: number, reason = ''): void {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }

  of<T extends RealtimeClientMessage['type']>(type: T): Extract<RealtimeClientMessage, { type: T }>[] {
    return this.sent.filter((m): m is Extract<RealtimeClientMessage, { type: T }> => m.type === type);
  }
}

/** Audio at the call's own rate, so frames pass through unresampled and positions are easy to follow. */
class FakeAudio implements AudioIO {
  readonly sampleRate = 16_000;
  readonly played: Float32Array[] = [];
  clears = 0;
  closed = false;

  constructor(readonly handlers: AudioHandlers) {}

  play(samples: Float32Array): void {
    this.played.push(samples);
  }

  clear(): void {
    this.clears++;
  }

  close(): void {
    this.closed = true;
  }

  get queued(): number {
    return this.played.reduce((n, s) => n + s.length, 0);
  }
}

/** A peer connection that records what the signalling did to it; descriptions it makes are `local <type>`. */
class FakeConnection implements PeerConnectionLike {
  onicecandidate: PeerConnectionLike['onicecandidate'] = null;
  localDescription: Description | null = null;
  readonly calls: string[] = [];
  refuse?: string;

  async createOffer(): Promise<Description> {
    this.calls.push('createOffer');
    return { type: 'offer', sdp: 'local offer' };
  }

  async createAnswer(): Promise<Description> {
    this.calls.push('createAnswer');
    return { type: 'answer', sdp: 'local answer' };
  }

  async setLocalDescription(description: Description): Promise<void> {
    this.calls.push(`setLocal ${description.type}`);
    this.localDescription = description;
  }

  async setRemoteDescription(description: Description): Promise<void> {
    await flush();
    if (this.refuse) throw new Error(this.refuse);
    this.calls.push(`setRemote ${description.type}`);
  }

  async addIceCandidate(candidate?: unknown): Promise<void> {
    this.calls.push(candidate ? `candidate ${(candidate as { candidate: string }).candidate}` : 'candidates end');
  }

  /** The browser found a local candidate (null: no more). */
  gather(candidate: string | null): void {
    this.onicecandidate?.({ candidate: candidate ? { toJSON: () => ({ candidate, sdpMid: '0' }) } : null });
  }
}

class FakePeer implements PeerIO {
  readonly connection = new FakeConnection();
  readonly sampleRate = 48_000;
  closed = false;
  level = { microphone: 0.2, remote: 0.1 };
  /** Where the copy goes once the call asked for it. */
  capture?: (samples: Float32Array) => void;

  async copy(capture: (samples: Float32Array) => void): Promise<void> {
    this.capture = capture;
  }

  muted = false;

  mute(muted: boolean): void {
    this.muted = muted;
  }

  levels() {
    return this.level;
  }

  close(): void {
    this.closed = true;
  }
}

class FakeEnvironment implements CallEnvironment {
  secureContext = true;
  sockets: FakeSocket[] = [];
  audio?: FakeAudio;
  microphone: () => Promise<void> = async () => undefined;

  createSocket(url: string): SocketLike {
    const socket = new FakeSocket(url);
    this.sockets.push(socket);
    return socket;
  }

  async openAudio(handlers: AudioHandlers): Promise<AudioIO> {
    await this.microphone();
    return (this.audio = new FakeAudio(handlers));
  }

  peer?: FakePeer;
  peerOptions?: unknown;

  async openPeer(options: unknown): Promise<PeerIO> {
    await this.microphone();
    this.peerOptions = options;
    return (this.peer = new FakePeer());
  }

  get socket(): FakeSocket {
    return this.sockets[this.sockets.length - 1];
  }
}

const CALL_START: RealtimeServerMessage = {
  type: 'call-start',
  call_id: 'call_1',
  agent_id: 'agt_1',
  direction: 'web',
  sample_rate: 16_000,
  frame_ms: 20,
};

const tone = (samples: number, level = 0.3) => Float32Array.from({ length: samples }, (_, i) => level * Math.sin(i / 3));
const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Every call a test made, hung up after it so no timer outlives the test. */
const calls: ParleyCall[] = [];

function recorder(call: ParleyCall) {
  calls.push(call);
  const events: { name: string; payload?: unknown }[] = [];
  for (const name of ['call-start', 'call-end', 'speech-start', 'speech-end', 'transcript', 'error'] as const) {
    call.on(name, (payload: unknown) => events.push({ name, payload }));
  }
  return events;
}

/** A call through its handshake: started, `call-start` received. */
async function inCall(env = new FakeEnvironment(), options: Partial<ConstructorParameters<typeof ParleyCall>[0]> = {}) {
  const call = new ParleyCall({ url: URL, token: TOKEN, ...options }, env);
  const events = recorder(call);
  const started = call.start();
  await flush();
  env.socket.open();
  env.socket.receive(CALL_START);
  await started;
  return { call, env, events, socket: env.socket, audio: env.audio! };
}

describe('the browser call', () => {
  afterEach(() => {
    for (const call of calls.splice(0)) call.hangup();
    jest.useRealTimers();
  });

  it('start handshake: opens the given URL, sends start with the token, protocol version and client, and resolves on call-start', async () => {
    const env = new FakeEnvironment();
    const call = new ParleyCall({ url: URL, token: TOKEN, callId: 'call_1' }, env);
    const events = recorder(call);
    let resolved = false;
    const started = call.start().then(() => (resolved = true));
    await flush();

    expect(env.socket.url).toBe(URL);
    env.socket.open();
    expect(env.socket.sent).toEqual([
      { type: 'start', token: TOKEN, version: REALTIME_PROTOCOL_VERSION, call_id: 'call_1', client: `parley-browser/${VERSION}` },
    ]);
    await flush();
    expect(resolved).toBe(false);

    env.socket.receive(CALL_START);
    await started;
    expect(call.active).toBe(true);
    expect(events).toEqual([{ name: 'call-start', payload: { call_id: 'call_1', agent_id: 'agt_1', direction: 'web', sample_rate: 16_000, frame_ms: 20 } }]);
  });

  it('returns the same promise when started twice, and opens one socket', async () => {
    const env = new FakeEnvironment();
    const call = new ParleyCall({ url: URL, token: TOKEN }, env);
    recorder(call);
    const started = call.start();
    started.catch(() => undefined);

    expect(call.start()).toBe(started);
    await flush();
    expect(env.sockets).toHaveLength(1);
  });

  it('does nothing when constructed: no microphone, no socket', () => {
    const env = new FakeEnvironment();
    new ParleyCall({ url: URL, token: TOKEN }, env);
    new ParleyCall({ url: URL, token: TOKEN }, env);

    expect(env.sockets).toHaveLength(0);
    expect(env.audio).toBeUndefined();
  });

  it('refuses options without a ws(s) URL or a token at construction', () => {
    expect(() => new ParleyCall({ url: 'https://media.example/realtime', token: TOKEN }, new FakeEnvironment())).toThrow(/ws:\/\/ or wss:\/\//);
    expect(() => new ParleyCall({ url: URL, token: '' }, new FakeEnvironment())).toThrow(/token/);
  });

  describe('close codes become end reasons', () => {
    it.each([
      [REALTIME_CLOSE.tokenInvalid, 'token_invalid'],
      [REALTIME_CLOSE.tokenForbidden, 'token_forbidden'],
      [REALTIME_CLOSE.tokenExpired, 'token_expired'],
      [REALTIME_CLOSE.tokenUsed, 'token_used'],
      [REALTIME_CLOSE.callOver, 'call_over'],
      [REALTIME_CLOSE.badRequest, 'protocol_error'],
      [REALTIME_CLOSE.goingAway, 'shutdown'],
      [REALTIME_CLOSE.internal, 'server_error'],
      [1006, 'connection_lost'],
    ])('a refusal at connect with %i rejects start, then error and call-end say %s', async (code, reason) => {
      const env = new FakeEnvironment();
      const call = new ParleyCall({ url: URL, token: TOKEN }, env);
      const events = recorder(call);
      const started = call.start();
      await flush();
      env.socket.open();
      env.socket.serverClose(code, code === REALTIME_CLOSE.tokenExpired ? 'token expired' : '');

      await expect(started).rejects.toMatchObject({ name: 'ParleyError', code: reason });
      expect(events.map((e) => e.name)).toEqual(['error', 'call-end']);
      expect(events[0].payload).toMatchObject({ code: reason, message: expect.any(String) });
      expect(events[1].payload).toEqual({ reason });
      expect(env.audio?.closed).toBe(true);
    });

    it('keeps the worker’s reason text as the error message', async () => {
      const env = new FakeEnvironment();
      const call = new ParleyCall({ url: URL, token: TOKEN }, env);
      const started = call.start();
      await flush();
      env.socket.serverClose(REALTIME_CLOSE.tokenExpired, 'token expired 3 s ago');

      await expect(started).rejects.toThrow('token expired 3 s ago');
    });

    it('ends with the reason of call-end when the worker ends the call, without an error', async () => {
      const { socket, events, audio } = await inCall();
      socket.receive({ type: 'call-end', reason: 'no_answer' });
      socket.serverClose(REALTIME_CLOSE.normal);

      expect(events.slice(1)).toEqual([{ name: 'call-end', payload: { reason: 'no_answer' } }]);
      expect(audio.closed).toBe(true);
    });

    it('ends with an error when the connection drops during the call', async () => {
      const { socket, events } = await inCall();
      socket.serverClose(1006);

      expect(events.slice(1).map((e) => [e.name, e.payload])).toEqual([
        ['error', expect.objectContaining({ code: 'connection_lost' })],
        ['call-end', { reason: 'connection_lost' }],
      ]);
    });

    it('gives up with timeout when call-start never comes', async () => {
      jest.useFakeTimers();
      const env = new FakeEnvironment();
      const call = new ParleyCall({ url: URL, token: TOKEN }, env);
      const events = recorder(call);
      const outcome = call.start().catch((error: unknown) => error);
      await jest.advanceTimersByTimeAsync(0);
      env.socket.open();
      await jest.advanceTimersByTimeAsync(15_000);

      expect(await outcome).toMatchObject({ code: 'timeout' });
      expect(events.at(-1)).toEqual({ name: 'call-end', payload: { reason: 'timeout' } });
      expect(env.socket.closedWith?.code).toBe(1000);
    });
  });

  describe('playback', () => {
    const frame = (level = 0.3) => ({ type: 'audio' as const, audio: encodePcm16(tone(320, level)) });

    it('plays the agent’s frames in order', async () => {
      const { socket, audio } = await inCall();
      const first = tone(320, 0.1);
      const second = tone(320, 0.2);
      socket.receive({ type: 'audio', audio: encodePcm16(first) });
      socket.receive({ type: 'audio', audio: encodePcm16(second) });

      expect(audio.played).toHaveLength(2);
      expect(audio.played[0][5]).toBeCloseTo(first[5], 3);
      expect(audio.played[1][5]).toBeCloseTo(second[5], 3);
    });

    it('echoes a mark once everything received before it has played, not before', async () => {
      const { socket, audio } = await inCall();
      socket.receive(frame());
      socket.receive(frame());
      socket.receive({ type: 'mark', name: 'turn-1' });
      socket.receive(frame());

      audio.handlers.consumed(320);
      expect(socket.of('mark')).toEqual([]);
      audio.handlers.consumed(640);
      expect(socket.of('mark')).toEqual([{ type: 'mark', name: 'turn-1' }]);
      audio.handlers.consumed(960);
      expect(socket.of('mark')).toHaveLength(1);
    });

    it('echoes a mark at once when nothing is left to play', async () => {
      const { socket, audio } = await inCall();
      socket.receive(frame());
      audio.handlers.consumed(320);
      socket.receive({ type: 'mark', name: 'after-all' });

      expect(socket.of('mark')).toEqual([{ type: 'mark', name: 'after-all' }]);
    });

    it('clear drops unplayed audio and echoes pending marks in order; a late report of the player changes nothing', async () => {
      const { socket, audio, events } = await inCall();
      socket.receive(frame());
      socket.receive({ type: 'mark', name: 'a' });
      socket.receive(frame());
      socket.receive({ type: 'mark', name: 'b' });
      audio.handlers.consumed(320);
      expect(socket.of('mark').map((m) => m.name)).toEqual(['a']);

      socket.receive({ type: 'clear' });
      expect(audio.clears).toBe(1);
      expect(socket.of('mark').map((m) => m.name)).toEqual(['a', 'b']);
      expect(events.map((e) => e.name)).toEqual(['call-start', 'speech-start', 'speech-end']);

      audio.handlers.consumed(330);
      socket.receive(frame());
      socket.receive({ type: 'mark', name: 'c' });
      expect(socket.of('mark').map((m) => m.name)).toEqual(['a', 'b']);
      audio.handlers.consumed(960);
      expect(socket.of('mark').map((m) => m.name)).toEqual(['a', 'b', 'c']);
    });

    it('speech-start when audio with energy plays, speech-end once it has stopped playing', async () => {
      jest.useFakeTimers();
      const env = new FakeEnvironment();
      const pending = inCall(env);
      await jest.advanceTimersByTimeAsync(0);
      const { socket, audio, events } = await pending;

      socket.receive(frame(0));
      audio.handlers.consumed(320);
      expect(events.map((e) => e.name)).toEqual(['call-start']);

      socket.receive(frame());
      socket.receive(frame());
      audio.handlers.consumed(640);
      expect(events.map((e) => e.name)).toEqual(['call-start', 'speech-start']);
      await jest.advanceTimersByTimeAsync(200);
      audio.handlers.consumed(960);
      expect(events.map((e) => e.name)).toEqual(['call-start', 'speech-start']);

      await jest.advanceTimersByTimeAsync(1_000);
      expect(events.map((e) => e.name)).toEqual(['call-start', 'speech-start', 'speech-end']);
    });
  });

  describe('microphone', () => {
    it('sends 20 ms frames of PCM16 at the call’s rate with seq counting from 0', async () => {
      const { socket, audio } = await inCall();
      audio.handlers.capture(tone(500));
      audio.handlers.capture(tone(300));

      const frames = socket.of('audio');
      expect(frames.map((f) => f.seq)).toEqual([0, 1]);
      for (const f of frames) expect(decodePcm16(f.audio)).toHaveLength(320);
      expect(decodePcm16(frames[0].audio)[10]).toBeCloseTo(tone(500)[10], 3);
    });

    it('mute sends silence in place of the microphone, keeping seq whole; unmute sends it again', async () => {
      const { call, socket, audio } = await inCall();
      audio.handlers.capture(tone(320));
      call.mute(true);
      audio.handlers.capture(tone(320));
      expect(call.isMuted).toBe(true);
      call.mute(false);
      audio.handlers.capture(tone(320));

      const frames = socket.of('audio');
      expect(frames.map((f) => f.seq)).toEqual([0, 1, 2]);
      expect(decodePcm16(frames[1].audio).every((s) => s === 0)).toBe(true);
      expect(decodePcm16(frames[2].audio).some((s) => s !== 0)).toBe(true);
    });

    it('sends nothing before call-start', async () => {
      const env = new FakeEnvironment();
      const call = new ParleyCall({ url: URL, token: TOKEN }, env);
      recorder(call);
      call.start().catch(() => undefined);
      await flush();
      env.socket.open();
      env.audio!.handlers.capture(tone(640));

      expect(env.socket.of('audio')).toEqual([]);
    });

    it('reports the levels of microphone and agent every 100 ms', async () => {
      jest.useFakeTimers();
      const env = new FakeEnvironment();
      const pending = inCall(env);
      await jest.advanceTimersByTimeAsync(0);
      const { call, socket, audio } = await pending;
      const volumes: VolumeEvent[] = [];
      call.on('volume', (v) => volumes.push(v));

      audio.handlers.capture(tone(320, 0.5));
      socket.receive({ type: 'audio', audio: encodePcm16(tone(320, 0.2)) });
      audio.handlers.consumed(320);
      await jest.advanceTimersByTimeAsync(100);
      await jest.advanceTimersByTimeAsync(100);

      expect(volumes).toHaveLength(2);
      expect(volumes[0].microphone).toBeGreaterThan(0.2);
      expect(volumes[0].agent).toBeGreaterThan(0.05);
      expect(volumes[0].remote).toBe(volumes[0].agent);
      expect(volumes[1]).toEqual({ microphone: 0, agent: 0, remote: 0 });
    });

    it('insecure context: a page on plain http gets an insecure_context error and a rejected start, never a silent call', async () => {
      const env = new FakeEnvironment();
      env.secureContext = false;
      const call = new ParleyCall({ url: URL, token: TOKEN }, env);
      const events = recorder(call);

      await expect(call.start()).rejects.toMatchObject({ code: 'insecure_context', message: expect.stringMatching(/https/) });
      expect(events.map((e) => [e.name, (e.payload as ErrorEvent | CallEndEvent)])).toEqual([
        ['error', expect.objectContaining({ code: 'insecure_context' })],
        ['call-end', { reason: 'insecure_context' }],
      ]);
      expect(env.sockets).toHaveLength(0);
    });

    it.each([
      ['NotAllowedError', 'microphone_denied'],
      ['SecurityError', 'microphone_denied'],
      ['NotFoundError', 'microphone_unavailable'],
      ['NotReadableError', 'microphone_unavailable'],
    ])('a microphone refused with %s rejects start with %s and opens no socket', async (name, code) => {
      const env = new FakeEnvironment();
      env.microphone = () => Promise.reject(Object.assign(new Error('refused'), { name }));
      const call = new ParleyCall({ url: URL, token: TOKEN }, env);
      const events = recorder(call);

      await expect(call.start()).rejects.toMatchObject({ code });
      expect(events.map((e) => e.name)).toEqual(['error', 'call-end']);
      expect(env.sockets).toHaveLength(0);
    });
  });

  describe('controls', () => {
    it('sends one dtmf message per digit', async () => {
      const { call, socket } = await inCall();
      call.sendDigits('12#*a');

      expect(socket.of('dtmf').map((m) => m.digit)).toEqual(['1', '2', '#', '*', 'A']);
    });

    it.each(['', '12x', '1 2', 'E', '+1'])('digits validation: refuses %j and sends nothing', async (digits) => {
      const { call, socket } = await inCall();

      expect(() => call.sendDigits(digits)).toThrow(expect.objectContaining({ code: 'invalid_digits' }));
      expect(socket.of('dtmf')).toEqual([]);
    });

    it('refuses digits outside a call', () => {
      const call = new ParleyCall({ url: URL, token: TOKEN }, new FakeEnvironment());

      expect(() => call.sendDigits('1')).toThrow(expect.objectContaining({ code: 'not_in_call' }));
    });

    it('transfer sends the destination trimmed; refuses one that is no number or sip: URI, and outside a call', async () => {
      const { call, socket } = await inCall();
      call.transfer(' +15551230000 ');
      call.transfer('sip:desk@example.org');
      expect(socket.of('transfer').map((m) => m.destination)).toEqual(['+15551230000', 'sip:desk@example.org']);
      for (const bad of ['', '555-1234', '+0123', 'http://x']) expect(() => call.transfer(bad)).toThrow(expect.objectContaining({ code: 'invalid_destination' }));
      expect(socket.of('transfer')).toHaveLength(2);
      expect(() => new ParleyCall({ url: URL, token: TOKEN }, new FakeEnvironment()).transfer('+15551230000')).toThrow(expect.objectContaining({ code: 'not_in_call' }));
    });

    it('hangup sends hangup, closes, and emits call-end once; a double hangup does nothing more', async () => {
      const { call, socket, events, audio } = await inCall();
      call.hangup();
      call.hangup();
      socket.serverClose(REALTIME_CLOSE.normal);

      expect(socket.of('hangup')).toHaveLength(1);
      expect(socket.closedWith).toEqual({ code: 1000, reason: 'completed' });
      expect(events.filter((e) => e.name === 'call-end')).toEqual([{ name: 'call-end', payload: { reason: 'completed' } }]);
      expect(audio.closed).toBe(true);
      expect(call.active).toBe(false);
    });

    it('a hangup while the microphone prompt is open ends the call canceled and rejects start', async () => {
      const env = new FakeEnvironment();
      let allow!: () => void;
      env.microphone = () => new Promise<void>((resolve) => (allow = resolve));
      const call = new ParleyCall({ url: URL, token: TOKEN }, env);
      const events = recorder(call);
      const started = call.start();
      await flush();
      call.hangup();
      allow();

      await expect(started).rejects.toMatchObject({ code: 'call_ended' });
      expect(events).toEqual([{ name: 'call-end', payload: { reason: 'canceled' } }]);
      expect(env.audio?.closed).toBe(true);
      expect(env.sockets).toHaveLength(0);
    });

    it('start after the call ended rejects with call_ended', async () => {
      const call = new ParleyCall({ url: URL, token: TOKEN }, new FakeEnvironment());
      call.hangup();

      await expect(call.start()).rejects.toBeInstanceOf(ParleyError);
      await expect(call.start()).rejects.toMatchObject({ code: 'call_ended' });
    });

    it('passes transcript turns and the worker’s errors on as events', async () => {
      const { socket, events } = await inCall();
      socket.receive({ type: 'transcript', role: 'assistant', text: 'Hello!', language: 'en-US', start_ms: 0, end_ms: 900, interrupted: false });
      socket.receive({ type: 'error', code: 'invalid_digit', message: 'not a key' });

      expect(events.slice(1)).toEqual([
        { name: 'transcript', payload: { role: 'assistant', text: 'Hello!', language: 'en-US', start_ms: 0, end_ms: 900, interrupted: false } },
        { name: 'error', payload: { code: 'invalid_digit', message: 'not a key' } },
      ]);
    });
  });

  describe('a rendezvous seat (peer-to-peer audio, the socket only signals)', () => {
    /** A seat's token: its claims (readable by anyone) say role `seat`. */
    const SEAT_TOKEN = `rtk_${Buffer.from(JSON.stringify({ jti: 'j', account_id: 'acc_1', call_id: 'call_1', role: 'seat', seat: 'a', exp: 1 })).toString('base64url')}.mac`;
    const signals = (socket: FakeSocket) => socket.of('signal').map((m) => m.data);

    async function seated(options: Partial<ConstructorParameters<typeof ParleyCall>[0]> = {}, start: Partial<typeof CALL_START> = {}) {
      const env = new FakeEnvironment();
      const call = new ParleyCall({ url: URL, token: SEAT_TOKEN, ...options }, env);
      const events = recorder(call);
      const started = call.start();
      await flush();
      env.socket.open();
      env.socket.receive({ ...CALL_START, ...start } as RealtimeServerMessage);
      await started;
      return { call, events, socket: env.socket, env, peer: env.peer as FakePeer, connection: (env.peer as FakePeer).connection };
    }

    it('told copy: also streams the microphone on the socket as 20 ms frames at the call’s rate, seq from 0, silence while muted', async () => {
      const { call, socket, peer } = await seated({}, { copy: true });
      await flush();
      // A 48 kHz device: 60 ms of it make about three 16 kHz frames (the resampler's filter holds a few samples back).
      peer.capture?.(tone(2_880));
      call.mute(true);
      peer.capture?.(tone(2_880));
      const frames = socket.of('audio');
      expect(frames.length).toBeGreaterThanOrEqual(5);
      expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i));
      for (const f of frames) expect(decodePcm16(f.audio)).toHaveLength(320);
      expect(decodePcm16(frames[1].audio).some((s) => s !== 0)).toBe(true);
      expect(decodePcm16(frames[frames.length - 1].audio).every((s) => s === 0)).toBe(true);
    });

    it('mute silences the microphone on the peer connection too; unmute gives it back', async () => {
      const { call, peer } = await seated();
      call.mute(true);
      expect(peer.muted).toBe(true);
      call.mute(false);
      expect(peer.muted).toBe(false);
    });

    it('not told copy: sends no audio on the socket and takes no copy of the microphone', async () => {
      const { socket, peer } = await seated();
      await flush();
      expect(peer.capture).toBeUndefined();
      expect(socket.of('audio')).toEqual([]);
    });

    it('opens a peer connection with the given ICE servers (none by default) instead of inline audio, and sends no audio frames', async () => {
      const { env, events } = await seated({ iceServers: [{ urls: 'stun:stun.example.org:3478' }] });
      expect(env.peerOptions).toEqual({ iceServers: [{ urls: 'stun:stun.example.org:3478' }] });
      expect(env.audio).toBeUndefined();
      expect(events.map((e) => e.name)).toEqual(['call-start']);
      expect((await seated()).env.peerOptions).toEqual({ iceServers: [] });
    });

    it('offers when told to (the second seat to join): offer, then its candidates, each a signal in order', async () => {
      const { call, socket, connection } = await seated();
      const peers: unknown[] = [];
      call.on('peer', (p) => peers.push(p));
      socket.receive({ type: 'peer', state: 'joined', seat: 'b', offer: true });
      await flush();
      connection.gather('candidate:1');
      connection.gather(null);
      expect(peers).toEqual([{ state: 'joined', seat: 'b' }]);
      expect(signals(socket)).toEqual([{ sdp: { type: 'offer', sdp: 'local offer' } }, { candidate: { candidate: 'candidate:1', sdpMid: '0' } }, { candidate: null }]);

      socket.receive({ type: 'signal', data: { sdp: { type: 'answer', sdp: 'remote answer' } } });
      socket.receive({ type: 'signal', data: { candidate: { candidate: 'candidate:9' } } });
      await flush();
      await flush();
      expect(connection.calls).toEqual(['createOffer', 'setLocal offer', 'setRemote answer', 'candidate candidate:9']);
    });

    it('answers an offer when it does not offer, holding candidates that come before the offer until it is set', async () => {
      const { socket, connection } = await seated();
      socket.receive({ type: 'peer', state: 'joined', seat: 'b' });
      socket.receive({ type: 'signal', data: { candidate: { candidate: 'candidate:early' } } });
      socket.receive({ type: 'signal', data: { sdp: { type: 'offer', sdp: 'remote offer' } } });
      socket.receive({ type: 'signal', data: { candidate: { candidate: 'candidate:late' } } });
      socket.receive({ type: 'signal', data: { candidate: null } });
      for (let i = 0; i < 4; i++) await flush();
      expect(connection.calls).toEqual([
        'setRemote offer',
        'createAnswer',
        'setLocal answer',
        'candidate candidate:early',
        'candidate candidate:late',
        'candidates end',
      ]);
      expect(signals(socket)).toEqual([{ sdp: { type: 'answer', sdp: 'local answer' } }]);
    });

    it('says peer_failed when a description is refused, and the call goes on', async () => {
      const { call, socket, connection, events } = await seated();
      connection.refuse = 'bad sdp';
      socket.receive({ type: 'signal', data: { sdp: { type: 'offer', sdp: 'garbled' } } });
      await flush();
      await flush();
      expect(events.filter((e) => e.name === 'error')).toEqual([{ name: 'error', payload: { code: 'peer_failed', message: expect.stringContaining('bad sdp') } }]);
      expect(call.active).toBe(true);
    });

    it('reports the microphone’s and the other seat’s levels every 100 ms', async () => {
      jest.useFakeTimers({ doNotFake: ['setImmediate'] });
      const { call, peer } = await seated();
      const volumes: unknown[] = [];
      call.on('volume', (v) => volumes.push(v));
      jest.advanceTimersByTime(100);
      peer.level = { microphone: 0, remote: 0.4 };
      jest.advanceTimersByTime(100);
      expect(volumes).toEqual([
        { microphone: 0.2, agent: 0, remote: 0.1 },
        { microphone: 0, agent: 0, remote: 0.4 },
      ]);
    });

    it('tells the page its peer left; the worker’s call-end ends the call with that reason and closes the peer connection', async () => {
      const { call, socket, peer, events } = await seated();
      const peers: unknown[] = [];
      call.on('peer', (p) => peers.push(p));
      socket.receive({ type: 'peer', state: 'left', seat: 'b' });
      socket.receive({ type: 'call-end', reason: 'completed' });
      socket.serverClose(REALTIME_CLOSE.normal, 'call ended: completed');
      expect(peers).toEqual([{ state: 'left', seat: 'b' }]);
      expect(events.at(-1)).toEqual({ name: 'call-end', payload: { reason: 'completed' } });
      expect(peer.closed).toBe(true);
    });

    it('hangs up: sends hangup, ends completed, closes the peer connection', async () => {
      const { call, socket, peer, events } = await seated();
      call.hangup();
      expect(socket.of('hangup')).toHaveLength(1);
      expect(events.at(-1)).toEqual({ name: 'call-end', payload: { reason: 'completed' } });
      expect(peer.closed).toBe(true);
    });

    it('refuses to start in an environment without peer connections (unsupported_browser)', async () => {
      const env = new FakeEnvironment();
      (env as { openPeer?: unknown }).openPeer = undefined;
      const call = new ParleyCall({ url: URL, token: SEAT_TOKEN }, env);
      calls.push(call);
      await expect(call.start()).rejects.toMatchObject({ code: 'unsupported_browser' });
    });
  });
});
