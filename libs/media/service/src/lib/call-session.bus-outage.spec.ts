import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callsV1 } from '@parley/contracts';
import { TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { Bus, InProcessBus } from '@parley/messaging';
import { FakeLlm } from '@parley/llm';
import { FakeSpeechToText, FakeTextToSpeech } from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { CallsPort } from './calls-port';
import { CallSession } from './call-session';
import { until } from './testing/caller-line';
import { directSocket } from './testing/direct-socket';

const CALL = { id: 'call_1', account_id: 'acc_1', agent_id: 'agt_1', status: 'in_progress', recording_enabled: false, variables: {} } as unknown as callsV1.Call;

const START = JSON.stringify({
  event: 'start',
  sequenceNumber: '1',
  streamSid: 'MZ1',
  start: {
    streamSid: 'MZ1',
    accountSid: 'AC1',
    callSid: 'CA1',
    tracks: ['inbound'],
    customParameters: { token: 'good-token' },
    mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
  },
});

/** The control plane answering everything at once: the stream attaches to CALL. */
const calls: CallsPort = {
  attachMedia: async () => ({ call: CALL, resume: '' }),
  getTranscript: async () => [],
  heartbeat: async (req) => !req.stopped,
  recordingReady: async () => undefined,
  appendTurn: async () => undefined,
  endCall: async () => undefined,
  transferCall: async () => undefined,
  recordToolCall: async () => undefined,
  recordOptOut: async () => undefined,
};

/** A bus whose live subscriptions do not come up: NATS reconnecting (never answering) or refusing. */
function busWhoseListen(behaviour: 'hangs' | 'fails'): Bus {
  const bus = new InProcessBus();
  bus.listen = () => (behaviour === 'hangs' ? new Promise(() => undefined) : Promise.reject(new Error('DISCONNECT')));
  return bus;
}

async function greetingSent(bus: Bus): Promise<{ session: CallSession; audioFrames: () => number }> {
  const sent: { event: string }[] = [];
  const session = new CallSession(
    directSocket((frame) => void sent.push(JSON.parse(frame) as { event: string })),
    {
      protocol: new TwilioMediaStreamProtocol(),
      calls,
      agents: { getAgent: async () => ({ spec: { languages: [{ code: 'en-US', greeting: 'Hello, this is the front desk.' }] }, effective: {} }) },
      bus,
      recordings: new LocalBlobStore(mkdtempSync(join(tmpdir(), 'session-'))),
      providers: { stt: [new FakeSpeechToText()], tts: [new FakeTextToSpeech()], llm: new FakeLlm() },
      defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    },
  );
  await session.onFrame(START);
  return { session, audioFrames: () => sent.filter((m) => m.event === 'media').length };
}

describe('a media stream session while the bus is down (a NATS restart)', () => {
  it.each(['hangs', 'fails'] as const)('speaks to the caller when subscribing to the call’s activity %s', async (behaviour) => {
    const { session, audioFrames } = await greetingSent(busWhoseListen(behaviour));

    await until(() => audioFrames() > 10, 'the greeting’s audio');

    await session.onClose();
  });
});
