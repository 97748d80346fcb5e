import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { browserMediaProtocol } from '@parley/carrier-web';
import { callsV1, REALTIME_CLOSE, RealtimeServerMessage } from '@parley/contracts';
import { FakeLlm } from '@parley/llm';
import { AppError } from '@parley/rpc';
import { FakeSpeechToText, FakeTextToSpeech } from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { AgentsPort, CallsPort } from './calls-port';
import { CallSession } from './call-session';
import { directSocket } from './testing/direct-socket';
import { until } from './testing/caller-line';

const CALL = { id: 'call_1', account_id: 'acc_1', agent_id: 'agt_1', direction: 'web', status: 'in_progress', recording_enabled: false } as callsV1.Call;
const agents: AgentsPort = { getAgent: async () => ({ spec: { languages: [{ code: 'en-US', greeting: 'Hello there.' }] }, effective: {} }) };

function setup(attach: CallsPort['attachMedia']) {
  const sent: RealtimeServerMessage[] = [];
  const closes: [number, string][] = [];
  const attached: callsV1.AttachMediaRequest[] = [];
  const heartbeats: callsV1.MediaHeartbeatRequest[] = [];
  const calls: CallsPort = {
    attachMedia: async (req) => (attached.push(req), attach(req)),
    getTranscript: async () => ({ turns: [], transitions: [] }),
    heartbeat: async (req) => (heartbeats.push(req), !req.stopped),
    recordingReady: async () => undefined,
    appendTurn: async () => undefined,
    endCall: async () => undefined,
    transferCall: async () => undefined,
    recordToolCall: async () => undefined,
    recordOptOut: async () => undefined,
    recordFlowTransition: async () => undefined,
  };
  const session: CallSession = new CallSession(
    directSocket(
      (frame) => {
        const message = JSON.parse(frame) as RealtimeServerMessage;
        sent.push(message);
        // A browser echoes a mark once what came before it has played.
        if (message.type === 'mark') setTimeout(() => void session.onFrame(JSON.stringify({ type: 'mark', name: message.name })), 0);
      },
      (code, reason) => void closes.push([code, reason]),
    ),
    {
      protocol: browserMediaProtocol('web'),
      calls,
      agents,
      recordings: new LocalBlobStore(mkdtempSync(join(tmpdir(), 'browser-session-'))),
      providers: { stt: [new FakeSpeechToText()], tts: [new FakeTextToSpeech()], llm: new FakeLlm() },
      defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    },
  );
  return { session, sent, closes, attached, heartbeats };
}

const start = (token = 'rtk_good') => JSON.stringify({ type: 'start', token, version: 1, call_id: 'call_1' });

describe('a browser on the realtime socket', () => {
  it('is told the call started, hears the greeting with its transcript turn, and hangs up: the call ends completed', async () => {
    const { session, sent, closes, attached, heartbeats } = setup(async () => ({ call: CALL, resume: '' }));
    await session.onFrame(start());
    expect(attached[0]).toMatchObject({ stream_token: 'rtk_good', carrier: 'web', carrier_call_id: 'call_1' });
    expect(sent[0]).toEqual({ type: 'call-start', call_id: 'call_1', agent_id: 'agt_1', direction: 'web', sample_rate: 16000, frame_ms: 20 });
    await until(() => sent.some((m) => m.type === 'audio'), 'the greeting’s audio');
    await until(() => sent.some((m) => m.type === 'transcript' && m.role === 'assistant' && m.text === 'Hello there.'), 'the greeting’s turn', 4_000);
    await session.onFrame('{"type":"hangup"}');
    expect(heartbeats.at(-1)).toMatchObject({ stopped: true });
    expect(sent.at(-1)).toEqual({ type: 'call-end', reason: 'completed' });
    expect(closes).toEqual([[1000, 'stream stopped']]);
  });

  it('is closed with the refusal’s own code when the calls service refuses its token', async () => {
    const { session, closes, sent } = setup(async () => {
      throw new AppError('unauthenticated', 'the token’s window to connect passed', undefined, { refusal: 'token_expired' });
    });
    await session.onFrame(start());
    expect(closes).toEqual([[REALTIME_CLOSE.tokenExpired, 'token_expired: the token’s window to connect passed']]);
    expect(sent).toEqual([]);
  });

  it('refuses an API key without asking the calls service', async () => {
    const { session, closes, attached } = setup(async () => ({ call: CALL, resume: '' }));
    await session.onFrame(start('vsk_live_key'));
    expect(attached).toEqual([]);
    expect(closes[0][0]).toBe(REALTIME_CLOSE.tokenInvalid);
  });

  it('is closed when it never says start', async () => {
    jest.useFakeTimers();
    try {
      const { closes } = setup(async () => ({ call: CALL, resume: '' }));
      jest.advanceTimersByTime(5_000);
      expect(closes).toEqual([[REALTIME_CLOSE.badRequest, 'bad_request: no start within 5 s']]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('is told why the call ended when it is ended elsewhere', async () => {
    const { session, sent, closes } = setup(async () => ({ call: CALL, resume: '' }));
    await session.onFrame(start());
    session.endStream('hangup');
    expect(sent.at(-1)).toEqual({ type: 'call-end', reason: 'hangup' });
    expect(closes).toEqual([[1000, 'call ended: hangup']]);
    await session.onClose();
  });
});
