import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FakeMediaStream, FakeTwilioServer, TwilioCarrier, TwilioMediaStreamProtocol } from '@parley/carrier-twilio';
import { callsV1, EffectiveConfig, ToolCalendar, ToolConfigOf, ToolRequest } from '@parley/contracts';
import { parseEgressAllowlist } from '@parley/egress';
import { FakeOpenAiHandler, FakeOpenAiServer, OpenAiCompatibleLlm } from '@parley/llm';
import {
  callerSpeechMulaw,
  DeepgramSpeechToText,
  ElevenLabsTextToSpeech,
  FakeDeepgramServer,
  FakeDeepgramUtterance,
  FakeElevenLabsServer,
  FakeOpenAiSpeechServer,
  FakeOpenAiTranscriptionServer,
  OpenAiSpeechToText,
  OpenAiTextToSpeech,
} from '@parley/speech';
import { LocalBlobStore } from '@parley/storage';
import { callMessage } from '@parley/testing';
import type { AgentSpec, RuntimeTools } from '@parley/voice-engine';
import { AgentsPort, CallsPort } from './calls-port';
import { MediaStreamServer } from './media-stream.server';
import { CallerLine, until } from './testing/caller-line';

/*
 * Scenario tests of what an agent does besides talking, over the real stack (the harness of
 * conversation.int-spec.ts): the model (the real OpenAI-compatible adapter against FakeOpenAiServer) calls tools
 * a custom function served on 127.0.0.1 (allowed through the egress allowlist), a transfer with a webhook, the
 * opt-out, and the agent follows the caller into another language. Twilio's side is FakeTwilioServer; the
 * caller speaks real synthetic speech in real time.
 */

const KEYS = { deepgram: 'dg-key', openai: 'sk-test', elevenlabs: 'xi-key' };
const MS_PER_CHAR = 40;
/** What the worker's EGRESS_ALLOWLIST would say in a test deployment: the tools' server on 127.0.0.1. */
const EGRESS = parseEgressAllowlist('127.0.0.1').policy;

// ---- the control plane ------------------------------------------------------------------------------------

interface Agent {
  spec: AgentSpec;
  effective: EffectiveConfig;
  /** The runtime read (GetAgentRuntime): tool configs with their secrets unsealed. */
  runtime?: RuntimeTools;
}

type Timed<T> = T & { at: number };

/** The calls and agents services as the media worker sees them (see conversation.int-spec.ts). */
class FakeControlPlane implements CallsPort, AgentsPort {
  readonly turns: Timed<callsV1.Turn>[] = [];
  readonly ends: { reason: string; at: number }[] = [];
  readonly transfers: { destination: string; at: number }[] = [];
  readonly toolCalls: Timed<callsV1.RecordToolCallRequest>[] = [];
  readonly optOuts: callsV1.RecordOptOutRequest[] = [];
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
    this.carrierCallId = req.carrier_call_id;
    return { call: { ...call, carrier: req.carrier, carrier_call_id: req.carrier_call_id }, resume: '' };
  }

  async getTranscript(): Promise<callsV1.Turn[]> {
    return this.turns.map(({ at: _at, ...turn }) => turn);
  }

  async heartbeat(): Promise<boolean> {
    return this.ends.length === 0;
  }

  async recordingReady(): Promise<void> {
    return;
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

  async recordFlowTransition(): Promise<void> {
    return undefined;
  }

  async getAgent(): Promise<Agent> {
    return this.agent;
  }

  turnsOf(role: 'user' | 'assistant'): Timed<callsV1.Turn>[] {
    return this.turns.filter((t) => t.role === role);
  }
}

// ---- the caller's phone line ------------------------------------------------------------------------------

// ---- a customer's HTTP endpoint ----------------------------------------------------------------------------

interface ReceivedRequest {
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
class CustomerEndpoint {
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

interface Scenario {
  spec: Record<string, unknown>;
  effective?: Record<string, unknown>;
  runtime?: RuntimeTools;
  llm: FakeOpenAiHandler;
  utterances?: Array<string | FakeDeepgramUtterance>;
}

const cleanups: (() => Promise<void>)[] = [];
let calls = 0;

async function placeCall(scenario: Scenario) {
  const vendors = {
    deepgram: new FakeDeepgramServer({ apiKey: KEYS.deepgram }),
    transcription: new FakeOpenAiTranscriptionServer({ apiKey: KEYS.openai }),
    elevenLabs: new FakeElevenLabsServer({ apiKey: KEYS.elevenlabs, msPerChar: MS_PER_CHAR }),
    openAiSpeech: new FakeOpenAiSpeechServer({ apiKey: KEYS.openai, msPerChar: MS_PER_CHAR }),
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
  llm.reply(scenario.llm);
  if (scenario.utterances) deepgram.utterances(...scenario.utterances);

  const carrier = new TwilioCarrier({ accountSid: twilio.accountSid, authToken: twilio.authToken, apiBaseUrl: twilioUrl });
  const control = new FakeControlPlane({ spec: scenario.spec, effective: scenario.effective ?? {}, runtime: scenario.runtime }, carrier);
  const dir = mkdtempSync(join(tmpdir(), 'parley-agent-actions-'));
  const media = new MediaStreamServer(
    { twilio: new TwilioMediaStreamProtocol() },
    {},
    {
      calls: control,
      agents: control,
      recordings: new LocalBlobStore(dir),
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
    },
  );
  const port = await media.listen(0, '127.0.0.1');

  const live: { line?: CallerLine; stream?: FakeMediaStream } = {};
  cleanups.push(async () => {
    live.line?.stop();
    if (live.stream?.open) await live.stream.stop();
    await media.close();
    await Promise.all(Object.values(vendors).map((v: { stop(): Promise<void> }) => v.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  const token = randomBytes(16).toString('base64url');
  const call = newCall(`call_${++calls}`, {});
  control.register(token, call);
  const placed = await carrier.placeCall({
    to: call.to,
    from: call.from,
    streamUrl: `ws://127.0.0.1:${port}/streams/twilio`,
    streamToken: token,
    statusCallbackUrl: 'https://parley.test/carriers/twilio/status',
  });
  twilio.setCallStatus(placed.carrierCallId, 'in-progress');
  const stream = (live.stream = await twilio.connectMediaStream(placed.carrierCallId));
  const line = (live.line = new CallerLine(stream));
  line.start();
  return { ...vendors, control, stream, line, call, sid: placed.carrierCallId };
}

/** Starts a customer endpoint, stopped after the test. */
async function endpoint(answer?: (req: ReceivedRequest) => unknown) {
  const server = new CustomerEndpoint(answer);
  const url = await server.start();
  cleanups.push(() => server.stop());
  return { server, url };
}

function newCall(id: string, scenario: { variables?: Record<string, string>; recording?: boolean }): callsV1.Call {
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

/** A conversation agent on Deepgram and ElevenLabs, quiet-line timers off. */
function conversationAgent(extra: AgentSpec = {}): AgentSpec {
  return {
    mode: 'conversation',
    languages: [{ code: 'en-US', greeting: 'Hello.', system_prompt: 'You are Ada.', stt_provider: 'deepgram', tts_provider: 'elevenlabs', voice_id: 'voice-ada' }],
    conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
    ...extra,
  };
}

/**
 * An order-lookup custom function: `{{order_id}}` in the path, a secret header, a closed schema. Without `secret`,
 * the redacted form the agent document carries; with it, the runtime read's.
 */
function orderLookup(baseUrl: string, secret: string | undefined): ToolConfigOf<ToolCalendar, ToolRequest & { secret_header_values?: Record<string, string> }> {
  return {
    kind: 'custom_function',
    name: 'lookup_order',
    description: 'Looks up an order by its number.',
    request: {
      url: `${baseUrl}/orders/{{order_id}}`,
      method: 'GET',
      headers: { accept: 'application/json' },
      ...(secret === undefined ? {} : { secret_header_values: { authorization: secret } }),
      timeout_seconds: 5,
      parameters: [{ name: 'order_id', type: 'string', required: true, in: 'path', description: 'The order number.' }],
    },
  };
}

/** The tool messages of a chat-completion request. */
const toolMessages = (body: { messages: { role: string; content: unknown; tool_call_id?: string }[] }) => body.messages.filter((m) => m.role === 'tool');

// ---- helpers ----------------------------------------------------------------------------------------------


afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

afterAll(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

// ---- the scenarios ----------------------------------------------------------------------------------------

describe('agent actions over the real stack', () => {
  it('calls a custom function with its templated URL and unsealed secret header, and speaks its JSON answer', async () => {
    const question = 'Where is my order one two three?';
    const { server, url } = await endpoint((req) => ({ order: req.url.split('/').pop(), status: 'shipped', eta: 'Friday' }));
    const secret = 'Bearer sk_live_unsealed';
    const c = await placeCall({
      // The agent document carries the tool redacted; the runtime read carries the secret in the clear.
      spec: conversationAgent({ tool_configs: [orderLookup(url, undefined)] }),
      runtime: { tool_configs: [orderLookup(url, secret)] },
      utterances: [question],
      llm: (body) => {
        const tool = toolMessages(body)[0];
        if (!tool) return { toolCalls: [{ id: 'call_order', name: 'lookup_order', arguments: '{"order_id":"A 123/4"}' }] };
        const answer = JSON.parse(String(tool.content)) as { status: string; eta: string };
        return `Your order has ${answer.status} and arrives ${answer.eta}.`;
      },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    const reply = await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    // The path parameter was filled percent-escaped; the secret header arrived unsealed.
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/orders/A%20123%2F4' });
    expect(server.requests[0].headers).toMatchObject({ authorization: secret, accept: 'application/json', 'user-agent': 'Parley-Tools/1' });
    // The model offered the tool with a closed schema, then got the function's JSON back as the tool result.
    const offered = c.llm.requests[0].body.tools?.find((t) => t.function.name === 'lookup_order');
    expect(offered?.function.parameters).toMatchObject({ additionalProperties: false, required: ['order_id'] });
    expect(c.llm.requests).toHaveLength(2);
    expect(toolMessages(c.llm.requests[1].body)).toEqual([
      { role: 'tool', tool_call_id: 'call_order', content: JSON.stringify({ order: 'A%20123%2F4', status: 'shipped', eta: 'Friday' }) },
    ]);
    // Spoken by ElevenLabs and heard by the caller.
    const spoken = 'Your order has shipped and arrives Friday.';
    expect(c.elevenLabs.requests.map((r) => r.body?.['text'])).toContain(spoken);
    expect(reply).toMatchObject({ text: spoken, interrupted: false });
    expect(c.control.toolCalls).toEqual([
      expect.objectContaining({ name: 'lookup_order', kind: 'custom_function', arguments_json: '{"order_id":"A 123/4"}', ok: true, error: '' }),
    ]);
    // Numbered on its stream after the greeting and the question, so a retried report is recognised.
    expect(c.control.toolCalls[0]).toMatchObject({ stream_id: expect.stringMatching(/.+/), seq: 3 });
  }, 30_000);

  it('refuses an argument outside the closed schema without a request, and tells the model', async () => {
    const question = 'Check order one two three please.';
    const { server, url } = await endpoint(() => ({ status: 'shipped' }));
    const c = await placeCall({
      spec: conversationAgent(),
      runtime: { tool_configs: [orderLookup(url, 'Bearer x')] },
      utterances: [question],
      llm: (body) =>
        toolMessages(body).length
          ? 'Sorry, I could not look that up.'
          : { toolCalls: [{ id: 'call_bad', name: 'lookup_order', arguments: '{"order_id":"123","discount":"100%"}' }] },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    expect(server.requests).toHaveLength(0);
    expect(c.llm.requests).toHaveLength(2);
    const [refusal] = toolMessages(c.llm.requests[1].body);
    expect(refusal).toMatchObject({ tool_call_id: 'call_bad' });
    expect(refusal.content).toContain('Refused, no request was made: unknown argument "discount"');
    expect(c.control.toolCalls).toEqual([
      expect.objectContaining({ name: 'lookup_order', kind: 'custom_function', ok: false, error: expect.stringContaining('unknown argument "discount"') }),
    ]);
  }, 30_000);

  it('refuses a tool URL on a private address that is not allow-listed, without connecting', async () => {
    const question = 'Check order one two three please.';
    const c = await placeCall({
      spec: conversationAgent(),
      runtime: { tool_configs: [orderLookup('http://10.0.0.1:8080', 'Bearer x')] },
      utterances: [question],
      llm: (body) =>
        toolMessages(body).length ? 'Sorry, that service is not reachable.' : { toolCalls: [{ id: 'call_private', name: 'lookup_order', arguments: '{"order_id":"123"}' }] },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    // The outbound-request guard refused the address before any connection (no timeout, no network error).
    expect(c.control.toolCalls).toEqual([
      expect.objectContaining({ name: 'lookup_order', kind: 'custom_function', ok: false, error: 'refused by the outbound request guard' }),
    ]);
    const [result] = toolMessages(c.llm.requests[1].body);
    expect(result).toEqual({ role: 'tool', tool_call_id: 'call_private', content: 'The tool call failed: the service could not be reached.' });
    expect(String(result.content)).not.toContain('10.0.0.1');
  }, 30_000);

  it('transfers the call within 3.2 s of the transfer webhook request when the webhook never answers', async () => {
    const question = 'I want to talk to a person.';
    const { server, url } = await endpoint(); // never answers
    const c = await placeCall({
      spec: conversationAgent(),
      runtime: {
        tool_configs: [
          { kind: 'transfer_call', name: 'transfer_to_desk', description: 'Puts the caller through to the front desk.', transfer: { destination: '+15550100999', webhook_url: `${url}/hooks/transfer` } },
        ],
      },
      utterances: [question],
      llm: () => ({ content: 'Putting you through now.', toolCalls: [{ id: 'call_xfer', name: 'transfer_to_desk', arguments: '{"reason":"wants a person"}' }] }),
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    const hook = await until(() => server.requests[0], 'the transfer webhook', 15_000);
    const transfer = await until(() => c.control.transfers[0], 'the transfer', 6_000);
    await c.stream.closed;

    expect(hook).toMatchObject({ method: 'POST', url: '/hooks/transfer' });
    expect(JSON.parse(hook.body)).toEqual({ type: 'call.transfer', call_id: c.call.id, tool: 'transfer_to_desk', destination: '+15550100999', reason: 'wants a person' });
    expect(transfer.destination).toBe('+15550100999');
    expect(transfer.at - hook.at).toBeLessThanOrEqual(3200);
    expect(transfer.at - hook.at).toBeGreaterThanOrEqual(2500);
    expect(c.twilio.calls.find((r) => r.action === 'update')?.twiml).toContain('<Dial><Number>+15550100999</Number></Dial>');
    expect(c.control.ends).toEqual([]);
    await until(() => c.control.toolCalls[0], 'the tool report');
    expect(c.control.toolCalls).toEqual([expect.objectContaining({ name: 'transfer_to_desk', kind: 'transfer_call', ok: true })]);
  }, 30_000);

  it('follows the caller into French: the reply is synthesized with the fr-FR entry\'s voice', async () => {
    const question = 'Bonjour, je voudrais parler en français.';
    const answer = 'Bien sûr, parlons français.';
    const c = await placeCall({
      spec: {
        ...conversationAgent(),
        language_detection: 'follow',
        languages: [
          { code: 'en-US', greeting: 'Hello.', system_prompt: 'You are Ada.', stt_provider: 'deepgram', tts_provider: 'elevenlabs', voice_id: 'voice-ada' },
          { code: 'fr-FR', system_prompt: 'Tu es Ada.', tts_provider: 'elevenlabs', voice_id: 'voice-fr' },
        ],
      },
      utterances: [{ text: question, languages: ['fr'] }],
      llm: () => answer,
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    const reply = await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    // The recognizer detects the language (Deepgram `multi`) and said French.
    expect(c.deepgram.connections[0].params['language']).toBe('multi');
    const final = c.deepgram.connections[0].sent.find((m) => m['is_final'] === true && m['type'] === 'Results');
    expect((final?.['channel'] as { alternatives: { languages?: string[] }[] }).alternatives[0].languages).toEqual(['fr']);
    // The greeting in the English voice; the reply in the French one, with the French prompt.
    expect(c.elevenLabs.requests.map((r) => [r.body?.['text'], FakeElevenLabsServer.voiceIdOf(r)])).toEqual([
      ['Hello.', 'voice-ada'],
      [answer, 'voice-fr'],
    ]);
    const conversation = c.llm.requests.filter((r) => r.body.stream);
    expect(conversation[0].body.messages[0]).toEqual({ role: 'system', content: 'Tu es Ada.' });
    // Moving to French also has the model write the built-in lines (silence prompt, goodbye) in French.
    expect(c.llm.requests.filter((r) => !r.body.stream).map((r) => String(r.body.messages[0].content))).toEqual([
      expect.stringContaining('in the language fr-FR, asking a caller who has gone quiet'),
      expect.stringContaining('in the language fr-FR, saying goodbye'),
    ]);
    expect(c.control.turnsOf('user')[0]).toMatchObject({ text: question, language: 'fr-FR' });
    expect(reply).toMatchObject({ text: answer, language: 'fr-FR' });
  }, 30_000);

  it('records the opt-out with the calls service when the model calls record_opt_out', async () => {
    const question = 'Please do not call me again.';
    const c = await placeCall({
      spec: conversationAgent(),
      utterances: [question],
      llm: (body) => (toolMessages(body).length ? 'Done, you will not hear from us again.' : { toolCalls: [{ id: 'call_opt', name: 'record_opt_out', arguments: '{}' }] }),
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.control.optOuts[0], 'the opt-out', 15_000);
    await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    expect(c.control.optOuts).toEqual([expect.objectContaining({ account_id: 'acc_1', call_id: c.call.id })]);
    expect(c.control.toolCalls).toEqual([expect.objectContaining({ name: 'record_opt_out', kind: 'record_opt_out', ok: true })]);
    expect(toolMessages(c.llm.requests[1].body)[0].content).toContain('will not be contacted again');
  }, 30_000);
});
