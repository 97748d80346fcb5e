import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { callsV1 } from '@parley/contracts';
import { TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { concatPcm16, mulawToPcm16 } from '@parley/audio';
import { FakeLlm } from '@parley/llm';
import { FakeSpeechToText, FakeTextToSpeech } from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { CallsPort } from './calls-port';
import { carrierThread, stopCarrierThreads } from './testing/carrier-thread';
import { MediaStreamServer } from './media-stream.server';

const CALL = { id: 'call_1', account_id: 'acc_1', agent_id: 'agt_1', status: 'in_progress', recording_enabled: false, variables: {} } as unknown as callsV1.Call;

function start(token: string) {
  return JSON.stringify({
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
  });
}

describe('media stream server', () => {
  const ended: callsV1.EndCallRequest[] = [];
  let attached!: () => void;
  const attachedOnce = new Promise<void>((resolve) => (attached = resolve));
  const calls: CallsPort = {
    attachMedia: async () => (attached(), { call: CALL, resume: '' }),
    getTranscript: async () => ({ turns: [], transitions: [] }),
    heartbeat: async () => true,
    recordingReady: async () => undefined,
    appendTurn: async () => undefined,
    endCall: async (req) => void ended.push(req),
    transferCall: async () => undefined,
    recordToolCall: async () => undefined,
    recordOptOut: async () => undefined,
    recordFlowTransition: async () => undefined,
  };
  const server = new MediaStreamServer(
    { twilio: new TwilioMediaStreamProtocol() },
    {},
    {
      calls,
      agents: { getAgent: async () => ({ spec: { languages: [{ code: 'en-US' }] }, effective: {} }) },
      recordings: new LocalBlobStore(mkdtempSync(join(tmpdir(), 'drain-'))),
      providers: { stt: [new FakeSpeechToText()], tts: [new FakeTextToSpeech()], llm: new FakeLlm() },
      defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    },
  );
  let port = 0;

  beforeAll(async () => {
    port = await server.listen(0, '127.0.0.1');
  });

  // Ends the server's stream thread even when a test failed before its drain (a live thread keeps jest running).
  afterAll(() => server.close());

  it('refuses paths of carriers it does not speak', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/streams/carrier-pigeon`);
    const status = await new Promise<number | undefined>((resolve) => ws.on('unexpected-response', (_req, res) => resolve(res.statusCode)).on('error', () => resolve(undefined)));
    expect(status).toBe(404);
  });

  it('drains on shutdown: no new streams, live calls get the grace period, then end with reason shutdown', async () => {
    const live = new WebSocket(`ws://127.0.0.1:${port}/streams/twilio`);
    await new Promise((resolve) => live.once('open', resolve));
    const closed = new Promise<number>((resolve) => live.once('close', (code) => resolve(code)));
    live.send(start('tok'));
    await attachedOnce;

    const startedAt = Date.now();
    const draining = server.close({ graceMs: 400, endMs: 1000 });
    const late = await new Promise<number | undefined>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/streams/twilio`);
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode)).on('error', () => resolve(undefined));
    });
    // The listener may already be closed (connection refused) or answer 503: either way no new stream starts.
    expect([503, undefined]).toContain(late);
    expect(await closed).toBe(1001);
    expect(await draining).toEqual({ calls: 1, notEnded: [], recordingsNotStored: [] });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(380);
    expect(ended).toEqual([{ account_id: 'acc_1', id: 'call_1', reason: 'shutdown' }]);
  });
});

describe('media stream server, frames', () => {
  it('handles the frames that arrive while a stream attaches once it has attached, in order with those after', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let attaching!: () => void;
    const attachAsked = new Promise<void>((resolve) => (attaching = resolve));
    const stt = new FakeSpeechToText();
    const calls = {
      attachMedia: async () => (attaching(), await gate, { call: CALL, resume: '' }),
      getTranscript: async () => ({ turns: [], transitions: [] }),
      heartbeat: async () => true,
      endCall: async () => undefined,
    } as unknown as CallsPort;
    const server = new MediaStreamServer({ twilio: new TwilioMediaStreamProtocol() }, {}, {
      calls,
      agents: { getAgent: async () => ({ spec: { languages: [{ code: 'en-US' }] }, effective: {} }) },
      recordings: new LocalBlobStore(mkdtempSync(join(tmpdir(), 'frames-'))),
      providers: { stt: [stt], tts: [new FakeTextToSpeech()], llm: new FakeLlm() },
      defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    });
    try {
      const port = await server.listen(0, '127.0.0.1');
      const ws = new WebSocket(`ws://127.0.0.1:${port}/streams/twilio`);
      await new Promise((resolve) => ws.once('open', resolve));
      // Frame n carries μ-law byte n throughout, so the recognizer's audio says which frame it was.
      const media = (n: number) =>
        JSON.stringify({ event: 'media', sequenceNumber: String(n + 1), streamSid: 'MZ1', media: { track: 'inbound', chunk: String(n), timestamp: String(n * 20), payload: Buffer.alloc(160, n).toString('base64') } });
      const decoded = (n: number) => mulawToPcm16(Buffer.alloc(1, n))[0];

      ws.send(start('tok'));
      await attachAsked;
      for (let n = 1; n <= 5; n++) ws.send(media(n));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(stt.streams).toEqual([]);
      release();
      // 260 ms in all: a quiet caller's audio may reach the recognizer in 250 ms pieces (RecognizerFeed).
      for (let n = 6; n <= 13; n++) ws.send(media(n));
      await until(() => stt.current?.samples === 13 * 160);

      const audio = concatPcm16(stt.current?.frames ?? [], 13 * 160);
      expect(Array.from({ length: 13 }, (_, i) => audio[i * 160])).toEqual(Array.from({ length: 13 }, (_, i) => decoded(i + 1)));
      ws.close();
    } finally {
      await server.close();
    }
  });
});

describe('media stream server, a paused main thread', () => {
  afterEach(() => stopCarrierThreads());

  it("plays the agent's speech on time through a 400 ms pause of the main thread, as long as a major GC's under load", async () => {
    // 50 ms of the fake voice a character: about 2 s of greeting.
    const greeting = 'Thank you for calling the front desk today.';
    const server = new MediaStreamServer({ twilio: new TwilioMediaStreamProtocol() }, {}, {
      calls: { attachMedia: async () => ({ call: CALL, resume: '' }), getTranscript: async () => ({ turns: [], transitions: [] }), heartbeat: async () => true, endCall: async () => undefined, appendTurn: async () => undefined } as unknown as CallsPort,
      agents: { getAgent: async () => ({ spec: { languages: [{ code: 'en-US', greeting }] }, effective: {} }) },
      recordings: new LocalBlobStore(mkdtempSync(join(tmpdir(), 'paused-'))),
      providers: { stt: [new FakeSpeechToText()], tts: [new FakeTextToSpeech()], llm: new FakeLlm() },
      defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    });
    try {
      const port = await server.listen(0, '127.0.0.1');
      const line = await carrierThread(`ws://127.0.0.1:${port}/streams/twilio`);
      line.send(start('tok'));
      const media = () => line.received.filter((r) => r.frame.includes('"event":"media"'));
      await until(() => media().length >= 5);
      // The engine has had time to queue its lead in the stream thread; then this thread is held, as by the marking.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const now = () => performance.timeOrigin + performance.now();
      const heldFrom = now();
      while (now() < heldFrom + 400);
      const heldTo = now();
      await until(() => media().some((r) => r.at > heldTo + 100));

      const during = media().filter((r) => r.at > heldFrom && r.at < heldTo);
      // 20 frames are due in 400 ms; a 160 ms lead gave 8 and then silence.
      expect(during.length).toBeGreaterThanOrEqual(16);
      const times = media().filter((r) => r.at > heldFrom - 100 && r.at < heldTo + 100).map((r) => r.at);
      expect(Math.max(...times.slice(1).map((t, i) => t - times[i]))).toBeLessThan(80);
      await line.stop();
    } finally {
      await server.close();
    }
  });
});

async function until(done: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
