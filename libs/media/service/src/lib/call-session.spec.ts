import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callsV1, LIVE } from '@parley/contracts';
import { parseWav, pcm16ToMulaw } from '@parley/audio';
import { TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { InProcessBus } from '@parley/messaging';
import { FakeLlm } from '@parley/llm';
import { FakeSpeechToText, FakeTextToSpeech } from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { AgentsPort, CallsPort } from './calls-port';
import { CallSession, CLOSE_REFUSED } from './call-session';

const CALL = { id: 'call_1', account_id: 'acc_1', status: 'in_progress', recording_enabled: true } as callsV1.Call;

class FakeCalls implements CallsPort {
  readonly heartbeats: callsV1.MediaHeartbeatRequest[] = [];
  readonly recordings: callsV1.RecordingReadyRequest[] = [];
  constructor(private readonly call: callsV1.Call | undefined) {}
  async attachMedia(req: callsV1.AttachMediaRequest) {
    if (!this.call || req.stream_token !== 'good-token') throw new Error('unauthenticated');
    return { call: this.call, resume: '' };
  }
  async getTranscript(): Promise<callsV1.Turn[]> {
    return [];
  }
  async heartbeat(req: callsV1.MediaHeartbeatRequest): Promise<boolean> {
    this.heartbeats.push(req);
    return !req.stopped;
  }
  async recordingReady(req: callsV1.RecordingReadyRequest): Promise<void> {
    this.recordings.push(req);
  }
  async appendTurn(): Promise<void> {
    return undefined;
  }
  async endCall(): Promise<void> {
    return undefined;
  }
  async transferCall(): Promise<void> {
    return undefined;
  }
  async recordToolCall(): Promise<void> {
    return undefined;
  }
  async recordOptOut(): Promise<void> {
    return undefined;
  }
}

/** An agent with no greeting: the engine listens and says nothing, so these tests see only the caller's side. */
const agents: AgentsPort = { getAgent: async () => ({ spec: { languages: [{ code: 'en-US' }] }, effective: {} }) };

const frames = {
  start: (token: string) =>
    JSON.stringify({
      event: 'start',
      sequenceNumber: '1',
      streamSid: 'MZ1',
      start: {
        streamSid: 'MZ1',
        accountSid: 'AC1',
        callSid: 'CA1',
        tracks: ['inbound'],
        customParameters: { token },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    }),
  media: (payload: Buffer, timestamp: number) =>
    JSON.stringify({ event: 'media', sequenceNumber: '2', streamSid: 'MZ1', media: { track: 'inbound', chunk: '1', timestamp: String(timestamp), payload: payload.toString('base64') } }),
  stop: () => JSON.stringify({ event: 'stop', sequenceNumber: '3', streamSid: 'MZ1', stop: { accountSid: 'AC1', callSid: 'CA1' } }),
};

function setup(call: callsV1.Call | undefined = CALL) {
  const closes: [number, string][] = [];
  const calls = new FakeCalls(call);
  const bus = new InProcessBus();
  const store = new LocalBlobStore(mkdtempSync(join(tmpdir(), 'session-')));
  const session = new CallSession(
    { send: () => undefined, close: (code, reason) => void closes.push([code, reason]) },
    {
      protocol: new TwilioMediaStreamProtocol(),
      calls,
      agents,
      bus,
      recordings: store,
      providers: { stt: [new FakeSpeechToText()], tts: [new FakeTextToSpeech()], llm: new FakeLlm() },
      defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    },
  );
  return { session, closes, calls, bus, store };
}

const loud = pcm16ToMulaw(new Int16Array(160).fill(10000));

describe('a carrier media stream session', () => {
  it('closes a stream whose token the calls service refuses, and reports nothing for it', async () => {
    const { session, closes, calls } = setup();
    await session.onFrame(frames.start('forged'));
    await session.onFrame(frames.media(loud, 0));
    await session.onClose();
    expect(closes).toEqual([[CLOSE_REFUSED, 'stream not accepted']]);
    expect(calls.heartbeats).toEqual([]);
    expect(calls.recordings).toEqual([]);
  });

  it('records the caller on the timeline the carrier stamps, stores the WAV and reports it with the stop', async () => {
    const { session, closes, calls, store } = setup();
    await session.onFrame(frames.start('good-token'));
    await session.onFrame(frames.media(loud, 0));
    await session.onFrame(frames.media(loud, 100)); // 80 ms lost in between: silence
    await session.onFrame(frames.stop());

    expect(calls.recordings).toEqual([
      { account_id: 'acc_1', call_id: 'call_1', key: 'recordings/acc_1/call_1.wav', content_type: 'audio/wav', duration_seconds: 0.12 },
    ]);
    const object = await store.get('recordings/acc_1/call_1.wav');
    const chunks: Buffer[] = [];
    for await (const c of object!.body) chunks.push(c as Buffer);
    const wav = parseWav(Buffer.concat(chunks));
    expect(wav.samples.length).toBe(960);
    expect(wav.samples[400]).toBe(0);
    expect(Math.abs(wav.samples[850])).toBeGreaterThan(9000);
    expect(calls.heartbeats).toEqual([{ account_id: 'acc_1', call_id: 'call_1', stopped: true }]);
    expect(closes).toEqual([[1000, 'stream stopped']]);
  });

  it('records nothing when the agent does not record calls', async () => {
    const { session, calls } = setup({ ...CALL, recording_enabled: false });
    await session.onFrame(frames.start('good-token'));
    await session.onFrame(frames.media(loud, 0));
    await session.onClose();
    expect(calls.recordings).toEqual([]);
    expect(calls.heartbeats).toHaveLength(1);
  });

  it('hangs up its side when the call is ended elsewhere', async () => {
    const { session, closes, bus } = setup();
    bus.open();
    await session.onFrame(frames.start('good-token'));
    await bus.broadcast(LIVE.callActivity('call_1').name, { kind: 'status', call: { ...CALL, status: 'ended' } });
    expect(closes).toEqual([[1000, 'call ended']]);
    await session.onClose();
  });

  it('ignores frames it cannot read', async () => {
    const { session, closes } = setup();
    await session.onFrame('not json');
    await session.onFrame(JSON.stringify({ event: 'something-new' }));
    expect(closes).toEqual([]);
  });
});
