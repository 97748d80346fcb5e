import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callsV1, FlowNode } from '@parley/contracts';
import { encodeWav, parseWav, pcm16ToMulaw } from '@parley/audio';
import { TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { AppError } from '@parley/rpc';
import { FakeLlm } from '@parley/llm';
import { FakeSpeechToText, FakeTextToSpeech } from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { FakeKnowledgeSearch, realClock, VoiceEngine } from '@parley/voice-engine';
import { AgentsPort, CallsPort, Transcript } from './calls-port';
import { CallSession, CallSessionDeps, CLOSE_REFUSED } from './call-session';
import { recordingKey } from './resumed-timeline';
import { directSocket } from './testing/direct-socket';
import { until } from './testing/caller-line';

const CALL = { id: 'call_1', account_id: 'acc_1', status: 'in_progress', recording_enabled: true } as callsV1.Call;

class FakeCalls implements CallsPort {
  readonly heartbeats: callsV1.MediaHeartbeatRequest[] = [];
  readonly recordings: callsV1.RecordingReadyRequest[] = [];
  readonly attached: callsV1.AttachMediaRequest[] = [];
  /** Turns and flow transitions, in the order the session reported them. */
  readonly reports: (callsV1.AppendTurnRequest | callsV1.RecordFlowTransitionRequest)[] = [];
  /** Usage reports, each with the number of turns and transitions reported before it. */
  readonly usage: (callsV1.RecordUsageRequest & { after: number })[] = [];
  constructor(
    private readonly call: callsV1.Call | undefined,
    /** Events injected before the stream attached, as AttachMedia hands them over. */
    private readonly pendingEvents?: callsV1.PendingEvent[],
    /** The stream resumes the call after a transfer that did not connect, with the transcript so far. */
    private readonly resumed?: { reason: string; transcript: Transcript },
  ) {}
  async attachMedia(req: callsV1.AttachMediaRequest) {
    this.attached.push(req);
    if (!this.call || req.stream_token !== 'good-token') throw new Error('unauthenticated');
    return { call: this.call, resume: this.resumed?.reason ?? '', ...(this.pendingEvents ? { pendingEvents: this.pendingEvents } : {}) };
  }
  async getTranscript(): Promise<Transcript> {
    return this.resumed?.transcript ?? { turns: [], transitions: [] };
  }
  async heartbeat(req: callsV1.MediaHeartbeatRequest): Promise<boolean> {
    this.heartbeats.push(req);
    return !req.stopped;
  }
  async recordingReady(req: callsV1.RecordingReadyRequest): Promise<void> {
    this.recordings.push(req);
  }
  async appendTurn(req: callsV1.AppendTurnRequest): Promise<void> {
    this.reports.push(req);
  }
  async endCall(req: callsV1.EndCallRequest): Promise<void> {
    this.ended.push(req);
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
  async recordFlowTransition(req: callsV1.RecordFlowTransitionRequest): Promise<void> {
    this.reports.push(req);
  }
  readonly ratings: callsV1.RecordRatingRequest[] = [];
  readonly ended: callsV1.EndCallRequest[] = [];
  async recordRating(req: callsV1.RecordRatingRequest): Promise<void> {
    this.ratings.push(req);
  }
  async recordUsage(req: callsV1.RecordUsageRequest): Promise<void> {
    this.usage.push({ ...req, after: this.reports.length });
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
  dtmf: (digit: string) => JSON.stringify({ event: 'dtmf', sequenceNumber: '5', streamSid: 'MZ1', dtmf: { track: 'inbound_track', digit } }),
  mark: (name: string) => JSON.stringify({ event: 'mark', sequenceNumber: '4', streamSid: 'MZ1', mark: { name } }),
};

function setup(call: callsV1.Call | undefined = CALL, options: { calls?: FakeCalls; deps?: Partial<CallSessionDeps>; echoMarks?: boolean } = {}) {
  const closes: [number, string][] = [];
  const calls = options.calls ?? new FakeCalls(call);
  const store = new LocalBlobStore(mkdtempSync(join(tmpdir(), 'session-')));
  const session: CallSession = new CallSession(
    directSocket(
      // A carrier that has played what it was sent by the time it reads a mark echoes it.
      (frame) => {
        const sent = JSON.parse(frame) as { event: string; mark?: { name: string } };
        if (options.echoMarks && sent.event === 'mark') setTimeout(() => void session.onFrame(frames.mark(sent.mark!.name)), 0);
      },
      (code, reason) => void closes.push([code, reason]),
    ),
    {
      protocol: new TwilioMediaStreamProtocol(),
      calls,
      agents,
      recordings: store,
      providers: { stt: [new FakeSpeechToText()], tts: [new FakeTextToSpeech()], llm: new FakeLlm() },
      defaults: { model: 'fake', sttProvider: 'fake-stt', ttsProvider: 'fake-tts' },
      ...options.deps,
    },
  );
  return { session, closes, calls, store };
}

/**
 * A calls service under load: the first attempt of every append fails as a deadline does (after storing the turn,
 * for every other one: the answer was lost, not the write); turns are stored once per stream and number, as the
 * real service does.
 */
class FlakyCalls extends FakeCalls {
  readonly stored: callsV1.AppendTurnRequest[] = [];
  readonly attempts: number[] = [];

  override async appendTurn(req: callsV1.AppendTurnRequest): Promise<void> {
    const first = !this.attempts.includes(req.seq);
    this.attempts.push(req.seq);
    const duplicate = this.stored.some((t) => t.stream_id === req.stream_id && t.seq === req.seq);
    if (!duplicate && !(first && req.seq % 2 === 1)) this.stored.push(req);
    if (first) throw new AppError('service_unavailable', 'The calls service did not answer in time; retry shortly.');
  }
}

const loud = pcm16ToMulaw(new Int16Array(160).fill(10000));

/** A second of quiet, 400 ms of speech, 800 ms of quiet on the stream's timeline from 2 s: one question the VAD hears. */
async function askAfterTheGreeting(session: CallSession): Promise<void> {
  const quiet = pcm16ToMulaw(new Int16Array(160));
  for (let t = 0; t < 1000; t += 20) await session.onFrame(frames.media(quiet, 2000 + t));
  for (let t = 1000; t < 1400; t += 20) await session.onFrame(frames.media(loud, 2000 + t));
  for (let t = 1400; t < 2200; t += 20) await session.onFrame(frames.media(quiet, 2000 + t));
}

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
    expect(calls.heartbeats).toEqual([{ account_id: 'acc_1', call_id: 'call_1', stopped: true, stream_id: 'MZ1' }]);
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

  it('hangs up its side when the call is ended elsewhere (the EndStream command), and holds the call no more', async () => {
    const { session, closes } = setup();
    await session.onFrame(frames.start('good-token'));
    expect(session.holdsStream).toBe(true);
    session.endStream('hangup');
    expect(closes).toEqual([[1000, 'call ended: hangup']]);
    await session.onClose();
    expect(session.holdsStream).toBe(false);
  });

  it('closes as a drain does when the end it asked for while shutting down comes back as EndStream', async () => {
    const calls = new FakeCalls(CALL);
    const { session, closes } = setup(CALL, { calls });
    // The calls service commands the worker while it records the worker's own end.
    calls.endCall = async () => session.endStream('shutdown');
    await session.onFrame(frames.start('good-token'));
    await session.shutdown(Date.now() + 1_000);
    expect(closes).toEqual([[1001, 'media worker shutting down']]);
    expect(session.outcome).toMatchObject({ ended: true });
  });

  it('leaves a voicemail message commanded while the stream is still attaching, then ends the call voicemail', async () => {
    const calls = new FakeCalls(CALL);
    const ended: callsV1.EndCallRequest[] = [];
    const port: CallsPort = calls;
    port.endCall = async (req) => void ended.push(req);
    let agentRead: (() => void) | undefined;
    const slowAgent: AgentsPort = {
      getAgent: () => new Promise((resolve) => (agentRead = () => resolve({ spec: { languages: [{ code: 'en-US' }] }, effective: {} }))),
    };
    const { session } = setup(CALL, { calls, echoMarks: true, deps: { agents: slowAgent } });

    const attaching = session.onFrame(frames.start('good-token'));
    const left = session.leaveVoicemail('Please call us back.');
    (await until(() => agentRead, 'the agent asked for'))();
    await attaching;

    expect(await left).toBe(true);
    await until(() => ended.length > 0, 'the call ended');
    expect(ended).toEqual([{ account_id: 'acc_1', id: 'call_1', reason: 'voicemail' }]);
    await session.onClose();
  });

  it('hands an event commanded while the stream is still attaching to its conversation once that runs', async () => {
    const handedOn = jest.spyOn(VoiceEngine.prototype, 'injectEvent').mockImplementation(() => undefined);
    let agentRead: (() => void) | undefined;
    const slowAgent: AgentsPort = {
      getAgent: () => new Promise((resolve) => (agentRead = () => resolve({ spec: { languages: [{ code: 'en-US' }] }, effective: {} }))),
    };
    const { session } = setup(CALL, { deps: { agents: slowAgent } });

    const attaching = session.onFrame(frames.start('good-token'));
    const injected = session.injectEvent('payment_received', { amount: 42 });
    (await until(() => agentRead, 'the agent asked for'))();
    expect(handedOn).not.toHaveBeenCalled();
    await attaching;
    await injected;

    expect(handedOn.mock.calls).toEqual([['payment_received', { amount: 42 }]]);
    handedOn.mockRestore();
    await session.onClose();
  });

  it('hands the events kept before the stream attached to the conversation before it starts, in order, and takes each once', async () => {
    const seen: string[] = [];
    const handedOn = jest.spyOn(VoiceEngine.prototype, 'injectEvent').mockImplementation((name, payload) => void seen.push(`event ${name} ${JSON.stringify(payload)}`));
    const started = jest.spyOn(VoiceEngine.prototype, 'start').mockImplementation(async () => void seen.push('start'));
    const pending: callsV1.PendingEvent[] = [
      { id: 'cev_1', name: 'payment_received', payload_json: '{"amount":42,"order":{"id":"o_1"}}', created_at: '2026-01-01T00:00:00.000Z' },
      { id: 'cev_2', name: 'not_json', payload_json: '[1]', created_at: '2026-01-01T00:00:01.000Z' },
      { id: 'cev_3', name: 'shipped', payload_json: '{}', created_at: '2026-01-01T00:00:02.000Z' },
    ];
    const { session } = setup(CALL, { calls: new FakeCalls(CALL, pending) });

    await session.onFrame(frames.start('good-token'));
    // The same event commanded as the stream attached (InjectEvent raced the attach) is not taken twice.
    await session.injectEvent('payment_received', { amount: 42, order: { id: 'o_1' } }, 'cev_1');
    await session.injectEvent('refunded', {}, 'cev_4');

    expect(seen).toEqual(['event payment_received {"amount":42,"order":{"id":"o_1"}}', 'event shipped {}', 'start', 'event refunded {}']);
    handedOn.mockRestore();
    started.mockRestore();
    await session.onClose();
  });

  it('fires an event kept before the stream attached once the flow starts', async () => {
    const calls = new FakeCalls(CALL, [{ id: 'cev_1', name: 'payment_received', payload_json: '{"amount":42}', created_at: '2026-01-01T00:00:00.000Z' }]);
    const flow = {
      start: 'waiting',
      nodes: [
        { id: 'waiting', edges: [{ to: 'paid', type: 'event', event: 'payment_received' }] },
        { id: 'paid', type: 'static', say: 'Thank you for paying {{amount}}.', edges: [] },
      ] as FlowNode[],
    };
    const flowAgent: AgentsPort = {
      getAgent: async () => ({ spec: { languages: [{ code: 'en-US' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 }, flow }, effective: {} }),
    };
    const { session } = setup(CALL, { calls, echoMarks: true, deps: { agents: flowAgent } });
    await session.onFrame(frames.start('good-token'));
    await until(() => calls.reports.length >= 3, 'the paid line said');

    const report = (r: (typeof calls.reports)[number]) => ('to_node' in r ? [r.from_node, r.to_node, r.kind, r.event] : [r.turn?.role, r.turn?.text]);
    expect(calls.reports.map(report)).toEqual([
      ['', 'waiting', 'start', ''],
      ['waiting', 'paid', 'event', 'payment_received'],
      ['assistant', 'Thank you for paying 42.'],
    ]);
    await session.onClose();
  }, 15_000);

  it('resumes a flow on the node it was on when a transfer did not connect, recording no move', async () => {
    const transition = (from_node: string, to_node: string, kind: string, seq: number) =>
      ({ from_node, to_node, kind, seq, edge_index: from_node ? 0 : -1, when: '', event: '', captured_json: '', at_ms: seq * 1000 }) as callsV1.FlowTransition;
    const calls = new FakeCalls(CALL, undefined, {
      reason: 'transfer_no_answer',
      transcript: {
        turns: [{ role: 'user', text: 'I want to pay my bill.' } as callsV1.Turn],
        transitions: [transition('', 'greet', 'start', 1), transition('greet', 'billing', 'intent', 3)],
      },
    });
    const flow = {
      start: 'greet',
      nodes: [
        { id: 'greet', prompt: 'Ask what the caller needs.', edges: [{ to: 'billing', when: 'the caller asks about a bill' }] },
        { id: 'billing', prompt: 'Offer the billing team.', tools: ['transfer_call'], edges: [{ to: 'paid', type: 'event', event: 'payment_received' }] },
        { id: 'paid', type: 'static', say: 'Thank you for paying.', edges: [] },
      ] as FlowNode[],
    };
    const flowAgent: AgentsPort = {
      getAgent: async () => ({ spec: { languages: [{ code: 'en-US', greeting: 'Hi.' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 }, flow }, effective: {} }),
    };
    const { session } = setup(CALL, { calls, echoMarks: true, deps: { agents: flowAgent } });
    await session.onFrame(frames.start('good-token'));
    await until(() => calls.reports.length >= 1, 'the caller told');

    // Only `billing` waits for this event: the flow is there again, not at its start.
    await session.injectEvent('payment_received', {});
    await until(() => calls.reports.length >= 3, 'the paid line said');

    const report = (r: (typeof calls.reports)[number]) => ('to_node' in r ? [r.from_node, r.to_node, r.kind] : [r.turn?.role, r.turn?.text]);
    expect(calls.reports.map(report)).toEqual([
      ['assistant', 'I am sorry, I could not reach them. Is there anything else I can help you with?'],
      ['billing', 'paid', 'event'],
      ['assistant', 'Thank you for paying.'],
    ]);
    await session.onClose();
  }, 15_000);

  it('goes on with the call’s timeline on a stream that resumes it: the recording keeps the first part, turns count on after it', async () => {
    const sorry = 'I am sorry, I could not reach them. Is there anything else I can help you with?';
    const calls = new FakeCalls(CALL, undefined, {
      reason: 'transfer_busy',
      transcript: { turns: [{ role: 'user', text: 'Put me through.', start_ms: 400, end_ms: 900 } as callsV1.Turn], transitions: [] },
    });
    const { session, store } = setup(CALL, { calls, echoMarks: true });
    // The first stream's recording: one second, loud.
    await store.put(recordingKey(CALL), encodeWav(new Int16Array(8000).fill(12000), 8000), 'audio/wav');
    await session.onFrame(frames.start('good-token'));
    await until(() => calls.reports.length >= 1, 'the apology');
    const [apology] = calls.reports as callsV1.AppendTurnRequest[];
    expect(apology.turn).toMatchObject({ role: 'assistant', text: sorry });
    expect(Number(apology.turn!.start_ms)).toBeGreaterThanOrEqual(1000);
    // The caller speaks 200 ms after the apology, on the carrier's timeline of this stream (which starts at 0).
    const spokeAt = Number(apology.turn!.end_ms) + 200;
    await session.onFrame(frames.media(loud, spokeAt - 1000));
    await session.onFrame(frames.stop());

    const object = await store.get(recordingKey(CALL));
    const chunks: Buffer[] = [];
    for await (const c of object!.body) chunks.push(c as Buffer);
    const wav = parseWav(Buffer.concat(chunks));
    // The first second as it was, then this stream: its caller's frame where its turns say it was.
    expect(wav.samples.subarray(0, 8000).every((v) => v === 12000)).toBe(true);
    expect(Math.abs(wav.samples[spokeAt * 8 + 80])).toBeGreaterThan(9000);
    expect(calls.recordings.at(-1)?.duration_seconds).toBeCloseTo((spokeAt + 20) / 1000, 2);
    await session.onClose();
  }, 15_000);

  it('ignores an injected event on a stream where no conversation runs', async () => {
    const handedOn = jest.spyOn(VoiceEngine.prototype, 'injectEvent');
    const { session } = setup(CALL, { deps: { agents: { getAgent: async () => ({ spec: { mode: 'webrtc', languages: [{ code: 'en-US' }] }, effective: {} }) } } });
    await session.onFrame(frames.start('good-token'));

    await expect(session.injectEvent('payment_received', {})).resolves.toBeUndefined();

    expect(handedOn).not.toHaveBeenCalled();
    handedOn.mockRestore();
    await session.onClose();
  });

  it('reports each move of the agent’s flow to the calls service in order with the turns, numbered in the same sequence', async () => {
    const calls = new FakeCalls(CALL);
    const nodes: FlowNode[] = [
      { id: 'waiting', edges: [{ to: 'paid', type: 'event', event: 'payment_received', when: 'Payment arrived' }] },
      { id: 'paid', type: 'static', say: 'Thank you for paying {{amount}}.', edges: [{ to: 'waiting', type: 'event', event: 'refunded' }] },
    ];
    const flow = { start: 'waiting', nodes };
    const flowAgent: AgentsPort = {
      getAgent: async () => ({
        spec: { languages: [{ code: 'en-US', greeting: 'Hi.' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 }, flow },
        effective: {},
      }),
    };
    const { session } = setup(CALL, { calls, echoMarks: true, deps: { agents: flowAgent } });
    await session.onFrame(frames.start('good-token'));
    await until(() => calls.reports.some((r) => 'to_node' in r), 'the flow started');

    await session.injectEvent('payment_received', { amount: 42 });
    await until(() => calls.reports.length >= 4, 'the paid line said');

    const report = (r: (typeof calls.reports)[number]) =>
      'to_node' in r ? [r.seq, r.from_node, r.to_node, r.kind, r.edge_index, r.when, r.event, r.captured_json] : [r.seq, r.turn?.role, r.turn?.text];
    expect(calls.reports.map(report)).toEqual([
      [1, 'assistant', 'Hi.'],
      [2, '', 'waiting', 'start', -1, '', '', ''],
      [3, 'waiting', 'paid', 'event', 0, 'Payment arrived', 'payment_received', ''],
      [4, 'assistant', 'Thank you for paying 42.'],
    ]);
    expect(calls.reports.every((r) => r.stream_id === 'MZ1' && r.call_id === 'call_1' && r.account_id === 'acc_1')).toBe(true);
    const [start, paid] = calls.reports.filter((r): r is callsV1.RecordFlowTransitionRequest => 'to_node' in r);
    expect(paid.at_ms).toBeGreaterThanOrEqual(start.at_ms);
    await session.onClose();
  }, 15_000);

  it('records the end-of-call survey’s rating (source keypad) before it ends the call', async () => {
    const calls = new FakeCalls(CALL);
    const surveyAgent: AgentsPort = {
      getAgent: async () => ({
        spec: {
          languages: [{ code: 'en-US' }],
          conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
          // One last line: the flow is done after it, so the agent ends the call.
          flow: { start: 'bye', nodes: [{ id: 'bye', type: 'static', say: 'That is everything.' }] },
          csat_survey: { enabled: true, prompt: 'Rate us from 1 to 5.' },
        },
        effective: {},
      }),
    };
    const { session } = setup(CALL, { calls, echoMarks: true, deps: { agents: surveyAgent } });
    await session.onFrame(frames.start('good-token'));
    await until(() => calls.reports.some((r) => 'turn' in r && r.turn?.text === 'Rate us from 1 to 5.'), 'the survey asked');
    expect(calls.ended).toEqual([]);
    await session.onFrame(frames.dtmf('4'));
    await until(() => calls.ended.length === 1, 'the call ended');
    expect(calls.ratings).toEqual([{ account_id: 'acc_1', call_id: 'call_1', source: 'keypad', scale: 5, score: 4, comment: '' }]);
    expect(calls.ended[0]).toMatchObject({ id: 'call_1', reason: 'completed' });
    await session.onClose();
  }, 15_000);

  it('sends the address where it takes commands when it attaches the stream', async () => {
    const { session, calls } = setup(CALL, { deps: { commandAddress: '10.0.3.7:50053' } });
    await session.onFrame(frames.start('good-token'));
    expect(calls.attached).toEqual([expect.objectContaining({ stream_token: 'good-token', command_address: '10.0.3.7:50053' })]);
    await session.onClose();
  });

  it('stores every turn once and in order while the calls service fails transiently, the last before the stream ends', async () => {
    const calls = new FlakyCalls(CALL);
    const conversation = {
      getAgent: async () => ({ spec: { languages: [{ code: 'en-US', greeting: 'Hi.' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 } }, effective: {} }),
    };
    const stt = new FakeSpeechToText().queue('What time is it?', 'Thanks, bye.');
    const { session } = setup(CALL, {
      calls,
      echoMarks: true,
      deps: {
        agents: conversation,
        providers: { stt: [stt], tts: [new FakeTextToSpeech({ msPerChar: 10 })], llm: new FakeLlm(['It is noon.', 'Goodbye.']) },
        transcript: { backoffMs: 20 },
      },
    });
    const said = (n: number) => until(() => calls.stored.length >= n, `${n} turns stored`);
    // After a quiet line, the caller speaks 400 ms and falls quiet: the VAD ends the utterance, the recognizer
    // answers its text.
    const quiet = pcm16ToMulaw(new Int16Array(160));
    const speak = async (at: number) => {
      for (let t = 0; t < 1000; t += 20) await session.onFrame(frames.media(quiet, at + t));
      for (let t = 1000; t < 1400; t += 20) await session.onFrame(frames.media(loud, at + t));
      for (let t = 1400; t < 2200; t += 20) await session.onFrame(frames.media(quiet, at + t));
    };
    await session.onFrame(frames.start('good-token'));
    await said(1);
    await speak(2000);
    await said(3);
    await speak(5000);
    // The caller hangs up while the last answer's append waits for its retry: the stream's end writes it first.
    await until(() => calls.attempts.includes(5), 'the last turn sent');
    await session.onFrame(frames.stop());

    expect(calls.stored.map((t) => [t.seq, t.turn?.role, t.turn?.text])).toEqual([
      [1, 'assistant', 'Hi.'],
      [2, 'user', 'What time is it?'],
      [3, 'assistant', 'It is noon.'],
      [4, 'user', 'Thanks, bye.'],
      [5, 'assistant', 'Goodbye.'],
    ]);
    expect(calls.stored.every((t) => t.stream_id === 'MZ1' && t.call_id === 'call_1')).toBe(true);
    // Every append failed once and was sent again; the ones stored on the first attempt were not stored twice.
    for (const seq of [1, 2, 3, 4, 5]) expect(calls.attempts.filter((a) => a === seq)).toHaveLength(2);
    expect(calls.heartbeats.at(-1)).toMatchObject({ stopped: true });
  }, 30_000);

  it('appends an answer with the knowledge-base documents that grounded it, and the turns without grounding with none', async () => {
    const calls = new FakeCalls(CALL);
    const groundedAgent: AgentsPort = {
      getAgent: async () => ({
        spec: { languages: [{ code: 'en-US', greeting: 'Hi.' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 }, knowledge_base_id: 'kb_faq' },
        effective: { autonomy: 'agentic' },
      }),
    };
    const knowledge = new FakeKnowledgeSearch(realClock, [
      { documentId: 'doc_hours', knowledgeBaseId: 'kb_faq', title: 'Opening hours', text: 'The store opens at nine and closes at six.' },
    ]);
    const stt = new FakeSpeechToText().queue('When does the store open?');
    const accounts: string[] = [];
    const { session } = setup(CALL, {
      calls,
      echoMarks: true,
      // As the worker wires it: one search per call, bound to the call's account.
      deps: { agents: groundedAgent, providers: { stt: [stt], tts: [new FakeTextToSpeech()], llm: new FakeLlm(['We open at nine.']) }, knowledge: (account) => (accounts.push(account), knowledge) },
    });
    await session.onFrame(frames.start('good-token'));
    await until(() => calls.reports.length >= 1, 'the greeting appended');
    await askAfterTheGreeting(session);
    await until(() => calls.reports.length >= 3, 'the answer appended');

    const turns = calls.reports.filter((r): r is callsV1.AppendTurnRequest => 'turn' in r).map((r) => [r.turn?.role, r.turn?.text, r.turn?.grounding]);
    expect(turns).toEqual([
      ['assistant', 'Hi.', []],
      ['user', 'When does the store open?', []],
      ['assistant', 'We open at nine.', [{ document_id: 'doc_hours', knowledge_base_id: 'kb_faq', title: 'Opening hours', score: expect.any(Number) }]],
    ]);
    expect(knowledge.queries).toEqual([expect.objectContaining({ baseIds: ['kb_faq'], query: 'When does the store open?' })]);
    expect(accounts).toEqual([CALL.account_id]);
    await session.onClose();
  }, 15_000);

  it('reports the stream’s usage with its turns, after the first and once more as it finishes, as running totals', async () => {
    const calls = new FakeCalls(CALL);
    const talker: AgentsPort = {
      getAgent: async () => ({ spec: { languages: [{ code: 'en-US', greeting: 'Hi.' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 } }, effective: {} }),
    };
    const stt = new FakeSpeechToText().queue('When does the store open?');
    const llm = new FakeLlm([{ deltas: ['We open', ' at nine.'], usage: { inputTokens: 42, outputTokens: 5 } }]);
    const { session } = setup(CALL, { calls, echoMarks: true, deps: { agents: talker, providers: { stt: [stt], tts: [new FakeTextToSpeech()], llm } } });
    await session.onFrame(frames.start('good-token'));
    await until(() => calls.reports.length >= 1, 'the greeting appended');
    await askAfterTheGreeting(session);
    await until(() => calls.reports.some((r) => 'turn' in r && r.turn?.text === 'We open at nine.'), 'the answer appended');
    await session.onClose();

    // The first follows the first turn; the two turns after it come before the next heartbeat (10 s), so the next
    // report is the one sent after the last turn, as the stream finished.
    const usage = calls.usage;
    expect(calls.reports.map((r) => ('turn' in r ? r.turn?.role : 'other'))).toEqual(['assistant', 'user', 'assistant']);
    expect(usage.map((u) => u.after)).toEqual([1, 3]);
    const last = usage[usage.length - 1];
    expect(last).toMatchObject({ account_id: 'acc_1', call_id: 'call_1', stream_id: 'MZ1' });
    const line = (kind: string) => last.items.find((i) => i.kind === kind);
    expect(line('tts_characters')).toEqual({ kind: 'tts_characters', provider: 'fake-tts', model: '', quantity: 'Hi.'.length + 'We open at nine.'.length });
    expect(line('llm_input_tokens')).toMatchObject({ provider: 'fake', model: 'fake', quantity: 42 });
    expect(line('llm_output_tokens')).toMatchObject({ provider: 'fake', model: 'fake', quantity: 5 });
    // The caller's audio written to the recognizer: at least the 2.2 s of frames sent (8 kHz).
    expect(Number(line('stt_ms')?.quantity)).toBeGreaterThanOrEqual(2000);
    // Running totals: no line ever goes down from one report to the next.
    for (let i = 1; i < usage.length; i++) {
      for (const item of usage[i - 1].items) {
        const later = usage[i].items.find((x) => x.kind === item.kind && x.provider === item.provider && x.model === item.model);
        expect(Number(later?.quantity)).toBeGreaterThanOrEqual(Number(item.quantity));
      }
    }
  }, 15_000);

  it('reports the usage of the turns after the first on the next heartbeat, while the call runs', async () => {
    const calls = new FakeCalls(CALL);
    const talker: AgentsPort = {
      getAgent: async () => ({ spec: { languages: [{ code: 'en-US', greeting: 'Hi.' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 } }, effective: {} }),
    };
    const stt = new FakeSpeechToText().queue('When does the store open?');
    const llm = new FakeLlm([{ deltas: ['We open at nine.'], usage: { inputTokens: 42, outputTokens: 5 } }]);
    const deps = { agents: talker, providers: { stt: [stt], tts: [new FakeTextToSpeech()], llm }, heartbeatMs: 300 };
    const { session } = setup(CALL, { calls, echoMarks: true, deps });
    await session.onFrame(frames.start('good-token'));
    await until(() => calls.reports.length >= 1, 'the greeting appended');
    await askAfterTheGreeting(session);
    await until(() => calls.usage.some((u) => u.after === 3), 'a report after the answer');

    // The first report right after the first turn, the others on heartbeats after turns (one per heartbeat at most,
    // never two behind the same turns), the last after the answer, before the stream ends; none on heartbeats with
    // no turn since the last report.
    const beforeClose = calls.usage.map((u) => u.after);
    expect(beforeClose[0]).toBe(1);
    expect(beforeClose.at(-1)).toBe(3);
    expect(new Set(beforeClose).size).toBe(beforeClose.length);
    expect(calls.usage.at(-1)?.items.find((i) => i.kind === 'llm_output_tokens')?.quantity).toBe(5);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(calls.usage.map((u) => u.after)).toEqual(beforeClose);
    await session.onClose();
  }, 15_000);

  it('ignores frames it cannot read', async () => {
    const { session, closes } = setup();
    await session.onFrame('not json');
    await session.onFrame(JSON.stringify({ event: 'something-new' }));
    expect(closes).toEqual([]);
  });
});
