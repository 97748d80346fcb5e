import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { callsV1 } from '@parley/contracts';
import { FakeLlm } from '@parley/llm';
import { FakeSpeechToText, FakeTextToSpeech } from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { CallSession } from './call-session';
import { CallsPort } from './calls-port';
import { until } from './testing/caller-line';
import { directSocket } from './testing/direct-socket';

const CALL = { id: 'call_1', account_id: 'acc_1', status: 'in_progress', recording_enabled: false } as callsV1.Call;
const GREETING = 'Hello and thank you for calling. This line is answered by the front desk. We are open every day from nine to five. How can I help you today?';

function stream(event: 'start' | 'stop'): string {
  if (event === 'stop') return JSON.stringify({ event: 'stop', sequenceNumber: '9', streamSid: 'MZ1', stop: { accountSid: 'AC1', callSid: 'CA1' } });
  return JSON.stringify({
    event: 'start',
    sequenceNumber: '1',
    streamSid: 'MZ1',
    start: { streamSid: 'MZ1', accountSid: 'AC1', callSid: 'CA1', tracks: ['inbound'], customParameters: { token: 't' }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
  });
}

/** A call whose agent greets at length; the carrier echoes each mark as it is sent (what is sent is heard). */
function greetingCall() {
  const turns: callsV1.AppendTurnRequest[] = [];
  const calls: CallsPort = {
    attachMedia: async () => ({ call: CALL, resume: '' }),
    getTranscript: async () => ({ turns: [], transitions: [] }),
    heartbeat: async () => true,
    recordingReady: async () => undefined,
    appendTurn: async (req) => void turns.push(req),
    endCall: async () => undefined,
    transferCall: async () => undefined,
    recordToolCall: async () => undefined,
    recordOptOut: async () => undefined,
    recordFlowTransition: async () => undefined,
  };
  let audio = 0;
  const session: CallSession = new CallSession(
    directSocket((frame) => {
      const sent = JSON.parse(frame) as { event: string; mark?: { name: string } };
      if (sent.event === 'media') audio++;
      if (sent.event === 'mark') setTimeout(() => void session.onFrame(JSON.stringify({ event: 'mark', sequenceNumber: '5', streamSid: 'MZ1', mark: sent.mark })), 0);
    }),
    {
      protocol: new TwilioMediaStreamProtocol(),
      calls,
      agents: { getAgent: async () => ({ spec: { languages: [{ code: 'en-US', greeting: GREETING }] }, effective: {} }) },
      recordings: new LocalBlobStore(mkdtempSync(join(tmpdir(), 'hang-up-'))),
      providers: { stt: [new FakeSpeechToText()], tts: [new FakeTextToSpeech({ msPerChar: 10 })], llm: new FakeLlm() },
      defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
    },
  );
  return { session, turns, audioSent: () => audio };
}

describe('a caller hanging up in the middle of an answer', () => {
  it('stores the part of the answer that was heard, marked interrupted, when the carrier stops the stream', async () => {
    const { session, turns, audioSent } = greetingCall();
    await session.onFrame(stream('start'));
    await until(() => audioSent() > 60, 'over a second of the greeting played');
    await session.onFrame(stream('stop'));

    expect(turns).toHaveLength(1);
    const [{ turn }] = turns;
    expect(turn).toMatchObject({ role: 'assistant', interrupted: true });
    expect(turn?.text.length).toBeGreaterThan(0);
    expect(GREETING.startsWith(turn?.text ?? '-')).toBe(true);
    expect(turn?.text).not.toBe(GREETING);
  });

  it('stores it too when the call is ended elsewhere first and the stream closes after', async () => {
    const { session, turns, audioSent } = greetingCall();
    await session.onFrame(stream('start'));
    await until(() => audioSent() > 60, 'over a second of the greeting played');
    session.endStream('hangup');
    await session.onClose();

    expect(turns.map((t) => [t.turn?.role, t.turn?.interrupted])).toEqual([['assistant', true]]);
    expect(GREETING.startsWith(turns[0].turn?.text ?? '-')).toBe(true);
  });
});
