import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { mulawToPcm16, powerAt } from '@parley/audio';
import { FakeMediaStream, FakeMediaStreamMessage, FakeTwilioServer, TwilioCarrier, TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { callsV1, EffectiveConfig } from '@parley/contracts';
import { parseEgressAllowlist } from '@parley/egress';
import { FakeOpenAiHandler, FakeOpenAiServer, OpenAiCompatibleLlm } from '@parley/llm';
import {
  DeepgramSpeechToText,
  ElevenLabsTextToSpeech,
  FakeDeepgramServer,
  FakeDeepgramUtterance,
  FakeElevenLabsServer,
  FakeOpenAiSpeechServer,
  FakeOpenAiTranscriptionServer,
  FakeSpeechServerOptions,
  fakeToneFrequency,
  OpenAiSpeechToText,
  OpenAiTextToSpeech,
} from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { callMessage } from '@parley/testing';
import type { AgentSpec, KnowledgeSearch, RuntimeTools } from '@parley/voice-engine';
import { AgentsPort, CallsPort, Transcript } from '../calls-port';
import { MediaStreamServer } from '../media-stream.server';
import { CallerLine } from './caller-line';

/*
 * The harness of the media worker's scenario tests (conversation, agent actions, flows): one phone call over the
 * real stack. A MediaStreamServer on 127.0.0.1 runs the real provider adapters (Deepgram, ElevenLabs, OpenAI speech
 * and an OpenAI-compatible model) against local fake vendor servers; Twilio's side of the call is FakeTwilioServer:
 * the call is placed with TwilioCarrier (its TwiML names the media server's stream URL and the call's token), then
 * its <Connect><Stream> is opened and a CallerLine carries comfort noise and whatever the test has the caller say.
 * The control plane (calls and agents) is an in-process fake that ends and transfers the call through the
 * carrier, as the calls service does, so Twilio stops the stream.
 */

export const RATE = 8000;
const KEYS = { deepgram: 'dg-key', openai: 'sk-test', elevenlabs: 'xi-key' };
/** Audio length per character of the fake voices' tone (shorter than the fakes' 50 ms default: faster scenarios). */
export const MS_PER_CHAR = 40;
/** What the worker's EGRESS_ALLOWLIST would say in a test deployment: the tools' servers on 127.0.0.1. */
const EGRESS = parseEgressAllowlist('127.0.0.1').policy;
/** The command address the worker reports when a stream attaches (EndStream, LeaveVoicemail, InjectEvent). */
export const COMMAND_ADDRESS = '127.0.0.1:50053';

// ---- the control plane ------------------------------------------------------------------------------------

export interface Agent {
  spec: AgentSpec;
  effective: EffectiveConfig;
  /** The runtime read (GetAgentRuntime): tool configs with their secrets unsealed. */
  runtime?: RuntimeTools;
}

/** A report as the calls service received it, with the time (performance.now()) it arrived. */
export type Timed<T> = T & { at: number };

/**
 * The calls and agents services as the media worker sees them: the stream token maps to the call; turns, tool
 * calls, flow transitions, opt-outs, ends, transfers and recordings are recorded; ending or transferring the call
 * goes through the carrier like the real calls service (Twilio then stops the stream).
 */
export class FakeControlPlane implements CallsPort, AgentsPort {
  readonly turns: Timed<callsV1.Turn>[] = [];
  readonly ends: { reason: string; at: number }[] = [];
  readonly transfers: { destination: string; at: number }[] = [];
  readonly recordings: callsV1.RecordingReadyRequest[] = [];
  readonly heartbeats: callsV1.MediaHeartbeatRequest[] = [];
  readonly attached: callsV1.AttachMediaRequest[] = [];
  readonly agentReads: { accountId: string; agentId: string; at: number }[] = [];
  readonly toolCalls: Timed<callsV1.RecordToolCallRequest>[] = [];
  readonly optOuts: callsV1.RecordOptOutRequest[] = [];
  readonly transitions: Timed<callsV1.RecordFlowTransitionRequest>[] = [];
  private readonly byToken = new Map<string, callsV1.Call>();
  private carrierCallId = '';

  constructor(
    private readonly agent: Agent,
    private readonly carrier: TwilioCarrier,
  ) {}

  register(token: string, call: callsV1.Call): void {
    this.byToken.set(token, call);
  }

  async attachMedia(req: callsV1.AttachMediaRequest) {
    const call = this.byToken.get(req.stream_token);
    if (!call) throw new Error('unauthenticated: unknown stream token');
    this.attached.push(req);
    this.carrierCallId = req.carrier_call_id;
    return { call: { ...call, carrier: req.carrier, carrier_call_id: req.carrier_call_id }, resume: '' };
  }

  async getTranscript(): Promise<Transcript> {
    return { turns: this.turns.map(({ at: _at, ...turn }) => turn), transitions: [] };
  }

  async heartbeat(req: callsV1.MediaHeartbeatRequest): Promise<boolean> {
    this.heartbeats.push(req);
    return this.ends.length === 0;
  }

  async recordingReady(req: callsV1.RecordingReadyRequest): Promise<void> {
    this.recordings.push(req);
  }

  async appendTurn(req: callsV1.AppendTurnRequest): Promise<void> {
    if (req.turn) this.turns.push({ ...req.turn, at: performance.now() });
  }

  async endCall(req: callsV1.EndCallRequest): Promise<void> {
    this.ends.push({ reason: req.reason, at: performance.now() });
    await this.carrier.endCall(this.carrierCallId);
  }

  async transferCall(req: callsV1.TransferCallRequest): Promise<void> {
    this.transfers.push({ destination: req.destination, at: performance.now() });
    await this.carrier.transferCall(this.carrierCallId, req.destination);
  }

  async recordToolCall(req: callsV1.RecordToolCallRequest): Promise<void> {
    this.toolCalls.push({ ...req, at: performance.now() });
  }

  async recordOptOut(req: callsV1.RecordOptOutRequest): Promise<void> {
    this.optOuts.push(req);
  }

  async recordFlowTransition(req: callsV1.RecordFlowTransitionRequest): Promise<void> {
    this.transitions.push({ ...req, at: performance.now() });
  }

  async getAgent(accountId: string, agentId: string): Promise<Agent> {
    this.agentReads.push({ accountId, agentId, at: performance.now() });
    return this.agent;
  }

  turnsOf(role: 'user' | 'assistant'): Timed<callsV1.Turn>[] {
    return this.turns.filter((t) => t.role === role);
  }
}

// ---- a customer's HTTP endpoint ----------------------------------------------------------------------------

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A customer's server on 127.0.0.1: records every request and answers it with `answer` (JSON), or never answers
 * (`answer` undefined) until it is stopped.
 */
export class CustomerEndpoint {
  readonly requests: ReceivedRequest[] = [];
  private readonly server: Server;

  constructor(private readonly answer?: (req: ReceivedRequest) => unknown) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() };
        this.requests.push(received);
        if (!this.answer) return; // hangs
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(this.answer(received)));
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }
}

// ---- one call over the whole stack -----------------------------------------------------------------------

export interface Scenario {
  spec: AgentSpec | Record<string, unknown>;
  effective?: Record<string, unknown>;
  runtime?: RuntimeTools;
  variables?: Record<string, string>;
  recording?: boolean;
  /** The model's answers. Default `ok`. */
  llm?: FakeOpenAiHandler;
  /** Deepgram's transcripts, one per speech segment it hears. */
  utterances?: Array<string | FakeDeepgramUtterance>;
  /** Pacing of both fake voices. */
  voice?: Omit<FakeSpeechServerOptions, 'apiKey'>;
  /** Scripted before the call is placed. */
  before?: (call: Vendors) => void;
  /** Knowledge-base search for the call's account (the media worker's gRPC search in production). */
  knowledge?: (accountId: string) => KnowledgeSearch;
}

export interface Vendors {
  deepgram: FakeDeepgramServer;
  transcription: FakeOpenAiTranscriptionServer;
  elevenLabs: FakeElevenLabsServer;
  openAiSpeech: FakeOpenAiSpeechServer;
  llm: FakeOpenAiServer;
  twilio: FakeTwilioServer;
}

export type PhoneCall = Awaited<ReturnType<typeof placeCall>>;

const cleanups: (() => Promise<void>)[] = [];
let calls = 0;

/** Closes every call, endpoint and server the scenarios started, most recent first (afterEach, afterAll). */
export async function closeAll(): Promise<void> {
  for (const close of cleanups.splice(0).reverse()) await close();
}

/** Places one call to an agent over the whole stack and opens its stream; the caller's line carries comfort noise. */
export async function placeCall(scenario: Scenario) {
  const vendors: Vendors = {
    deepgram: new FakeDeepgramServer({ apiKey: KEYS.deepgram }),
    transcription: new FakeOpenAiTranscriptionServer({ apiKey: KEYS.openai }),
    elevenLabs: new FakeElevenLabsServer({ apiKey: KEYS.elevenlabs, msPerChar: MS_PER_CHAR, ...scenario.voice }),
    openAiSpeech: new FakeOpenAiSpeechServer({ apiKey: KEYS.openai, msPerChar: MS_PER_CHAR, ...scenario.voice }),
    llm: new FakeOpenAiServer({ models: ['fake-model'] }),
    twilio: new FakeTwilioServer(),
  };
  const { deepgram, transcription, elevenLabs, openAiSpeech, llm, twilio } = vendors;
  const [deepgramUrl, transcriptionUrl, elevenLabsUrl, openAiSpeechUrl, llmUrl, twilioUrl] = await Promise.all([
    deepgram.start(),
    transcription.start(),
    elevenLabs.start(),
    openAiSpeech.start(),
    llm.start(),
    twilio.start(),
  ]);
  if (scenario.llm) llm.reply(scenario.llm);
  if (scenario.utterances) deepgram.utterances(...scenario.utterances);
  scenario.before?.(vendors);

  const carrier = new TwilioCarrier({ accountSid: twilio.accountSid, authToken: twilio.authToken, apiBaseUrl: twilioUrl });
  const control = new FakeControlPlane({ spec: scenario.spec as AgentSpec, effective: scenario.effective ?? {}, runtime: scenario.runtime }, carrier);
  const dir = mkdtempSync(join(tmpdir(), 'parley-call-'));
  const store = new LocalBlobStore(dir);
  const media = new MediaStreamServer(
    { twilio: new TwilioMediaStreamProtocol() },
    {},
    {
      calls: control,
      agents: control,
      commandAddress: COMMAND_ADDRESS,
      recordings: store,
      providers: {
        stt: [
          new DeepgramSpeechToText({ apiKey: KEYS.deepgram, baseUrl: deepgramUrl }),
          new OpenAiSpeechToText({ apiKey: KEYS.openai, baseURL: transcriptionUrl }),
        ],
        tts: [
          new ElevenLabsTextToSpeech({ apiKey: KEYS.elevenlabs, baseUrl: elevenLabsUrl }),
          new OpenAiTextToSpeech({ apiKey: KEYS.openai, baseUrl: openAiSpeechUrl }),
        ],
        llm: new OpenAiCompatibleLlm({ name: 'conversation', baseURL: llmUrl, apiKey: KEYS.openai, timeoutMs: 20_000, maxRetries: 0 }),
      },
      defaults: { model: 'fake-model', sttProvider: 'deepgram', ttsProvider: 'elevenlabs' },
      tools: { egress: EGRESS, internalHosts: [] },
      ...(scenario.knowledge ? { knowledge: scenario.knowledge } : {}),
    },
  );
  const port = await media.listen(0, '127.0.0.1');
  const streamUrl = `ws://127.0.0.1:${port}/streams/twilio`;

  // Whatever of the call exists when the test ends is closed, however far placing it got.
  const live: { line?: CallerLine; stream?: FakeMediaStream } = {};
  const close = async () => {
    live.line?.stop();
    if (live.stream?.open) await live.stream.stop();
    await media.close();
    await Promise.all(Object.values(vendors).map((v: { stop(): Promise<void> }) => v.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  cleanups.push(close);

  const token = randomBytes(16).toString('base64url');
  const call = newCall(`call_${++calls}`, scenario);
  control.register(token, call);
  const placed = await carrier.placeCall({
    to: call.to,
    from: call.from,
    streamUrl,
    streamToken: token,
    statusCallbackUrl: 'https://parley.test/carriers/twilio/status',
  });
  twilio.setCallStatus(placed.carrierCallId, 'in-progress');
  const connectedAt = performance.now();
  const stream = (live.stream = await twilio.connectMediaStream(placed.carrierCallId));
  const firstMedia = stream.waitFor(isMedia, 15_000).then(
    () => performance.now(),
    () => NaN,
  );
  const line = (live.line = new CallerLine(stream));
  line.start();
  return { ...vendors, media, control, store, stream, line, call, token, streamUrl, sid: placed.carrierCallId, connectedAt, firstMedia, close };
}

/** Starts a customer endpoint, stopped with the calls. */
export async function endpoint(answer?: (req: ReceivedRequest) => unknown) {
  const server = new CustomerEndpoint(answer);
  const url = await server.start();
  cleanups.push(() => server.stop());
  return { server, url };
}

function newCall(id: string, scenario: Scenario): callsV1.Call {
  const now = new Date().toISOString();
  return callMessage({
    id,
    agent_id: 'agent_ada',
    to: '+15550100001',
    from: '+15550100002',
    carrier: 'twilio',
    variables: scenario.variables ?? { name: 'Sam' },
    created_at: now,
    answered_at: now,
    recording_enabled: scenario.recording ?? false,
  });
}

// ---- what the caller heard ----------------------------------------------------------------------------------

/** The next message from the server matching `predicate` that arrives after this call, with its arrival time. */
export function nextMessage(stream: FakeMediaStream, predicate: (m: FakeMediaStreamMessage) => boolean, timeoutMs = 10_000) {
  const from = stream.received.length;
  return stream
    .waitFor((m) => predicate(m) && stream.received.indexOf(m) >= from, timeoutMs)
    .then((message) => ({ message, at: performance.now() }));
}

export const isMedia = (m: FakeMediaStreamMessage) => m['event'] === 'media';
export const isClear = (m: FakeMediaStreamMessage) => m['event'] === 'clear';

export function pcmOf(message: FakeMediaStreamMessage): Int16Array {
  return mulawToPcm16(Buffer.from((message['media'] as { payload: string }).payload, 'base64'));
}

/** The fake voices' audio is a tone per sentence: true when `pcm` is that of `text` (and not 120 Hz beside it). */
export function carriesToneOf(pcm: Int16Array, text: string): boolean {
  const hz = fakeToneFrequency(text);
  return powerAt(pcm, hz, RATE) > 20 * Math.max(powerAt(pcm, hz - 120, RATE), powerAt(pcm, hz + 120, RATE));
}

/** What a fake voice was asked to say, in order (ElevenLabs' `text`, OpenAI speech's `input`). */
export const spokenTexts = (server: { requests: { body: Record<string, unknown> | undefined }[] }, field: 'text' | 'input') =>
  server.requests.map((r) => r.body?.[field]);
