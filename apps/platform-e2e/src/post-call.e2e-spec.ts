import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { credentials, GrpcObject, loadPackageDefinition, Metadata, ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import Stripe from 'stripe';
import { FakeTwilioServer } from '@parley/carrier-twilio';
import { CALLS_V1, PROTO_ROOT } from '@parley/contracts';
import { FakeOpenAiServer } from '@parley/llm';
import { ApiClient, freePort, RunningPlatform, waitFor } from '@parley/testing';

const KEY = 'vsk_postcall_owner_key_0001';
const stripe = new Stripe('sk_test_unused');
const SUMMARY = 'The caller booked a table for four on Friday.';

type Unary = (request: object, metadata: Metadata, callback: (error: Error | null, response: unknown) => void) => void;

/** A plain gRPC client of the calls service, standing in for the media worker's engine (which appends turns). */
function callsClient(address: string): { appendTurn(request: object): Promise<unknown>; close(): void } {
  const definition = loadSync(join(PROTO_ROOT, CALLS_V1.protoFile), { keepCase: true, longs: String, enums: String, defaults: true, includeDirs: [PROTO_ROOT] });
  let node = loadPackageDefinition(definition) as GrpcObject;
  for (const part of CALLS_V1.package.split('.')) node = node[part] as GrpcObject;
  const Client = node[CALLS_V1.service] as ServiceClientConstructor;
  const client = new Client(address, credentials.createInsecure()) as unknown as Record<string, Unary> & { close(): void };
  return {
    appendTurn: (request) => new Promise((resolve, reject) => client['AppendTurn'](request, new Metadata(), (e, r) => (e ? reject(e) : resolve(r)))),
    close: () => client.close(),
  };
}

// Standalone (in-process bus) always; distributed (one process per service, NATS JetStream) when NATS_URL is set.
const MODES = process.env['NATS_URL'] ? (['standalone', 'distributed'] as const) : (['standalone'] as const);

describe.each(MODES)('post-call analysis (%s): call.analysed after call.ended, summary and extracted fields on the call', (mode) => {
  let platform: RunningPlatform;
  let twilio: FakeTwilioServer;
  let api: ApiClient;
  let receiver: Server;
  let calls: ReturnType<typeof callsClient>;
  const llm = new FakeOpenAiServer();
  const received: { body: string; signature: string; at: number }[] = [];
  let secret: string;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ body, signature: String(req.headers['service-signature']), at: Date.now() });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    twilio = new FakeTwilioServer();
    const callsAddress = `127.0.0.1:${await freePort()}`;
    platform = await RunningPlatform.start({
      mode,
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        EGRESS_ALLOWLIST: '127.0.0.1',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        ...(await twilio.platformEnv()),
        LLM_BASE_URL: await llm.start(),
        LLM_API_KEY: 'sk-test',
        CALLS_GRPC_URL: callsAddress,
      },
    });
    api = platform.api(KEY);
    calls = callsClient(callsAddress);
    const endpoint = await api.post('/v1/webhook_endpoints', {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
      events: ['call.ended', 'call.analysed'],
    });
    secret = endpoint.body.secret;
  });

  afterAll(async () => {
    calls?.close();
    await platform?.stop();
    await twilio?.stop();
    await llm.stop();
    await new Promise((r) => receiver.close(r));
  });

  const events = (callId: string) =>
    received.map((r) => ({ ...r, event: JSON.parse(r.body) })).filter((r) => r.event.call_id === callId);

  const EXTRACTION = [
    { name: 'party_size', description: 'How many people the table is for', type: 'number' },
    { name: 'outcome', description: 'Whether a table was booked', type: 'enum', options: ['booked', 'not_booked', 'unclear'] },
  ];

  /** Places a call through `agentId`, answers it, has the engine write three turns; resolves with the call. */
  async function answeredCallWithTurns(agentId: string): Promise<{ id: string; carrier_call_id: string }> {
    const call = (await api.post('/v1/calls', { agent_id: agentId, to: '+15550100042' })).body;
    expect(await twilio.sendStatusCallback(call.carrier_call_id, 'in-progress')).toBe(204);
    for (const [i, [role, text]] of [
      ['assistant', 'Good evening, Trattoria Ada.'],
      ['user', 'A table for four on Friday, please.'],
      ['assistant', 'Done: four people on Friday at eight.'],
    ].entries()) {
      await calls.appendTurn({ account_id: 'acme', call_id: call.id, turn: { role, text, language: 'en', start_ms: i * 2000, end_ms: i * 2000 + 1500, interrupted: false } });
    }
    return call;
  }

  it('analyses an ended call with the fake model: webhook after call.ended, then GET /v1/calls/{id} shows it', async () => {
    llm.reply(() => JSON.stringify({ summary: SUMMARY, extracted: { party_size: '4', outcome: 'Booked' } }));
    const agent = await api.post('/v1/agents', {
      name: 'Booker',
      languages: [{ code: 'en' }],
      post_call: { model: 'analysis-model', extraction: EXTRACTION },
    });
    expect(agent.status).toBe(201);
    const call = await answeredCallWithTurns(agent.body.id);
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'in_progress', turns: 3, summary: null, extracted: null });

    expect((await api.post(`/v1/calls/${call.id}/end`)).body).toMatchObject({ status: 'ended', end_reason: 'hangup' });
    const ended = await waitFor(() => events(call.id).find((e) => e.event.type === 'call.ended'), 30_000);
    const analysed = await waitFor(() => events(call.id).find((e) => e.event.type === 'call.analysed'), 30_000);

    const extracted = { party_size: 4, outcome: 'booked' };
    expect(ended.event.data).toEqual({ duration_seconds: expect.any(Number), turns: 3, end_reason: 'hangup' });
    expect(analysed.event.data).toEqual({ summary: SUMMARY, extracted, model: 'analysis-model', successful: null });
    expect(Date.parse(analysed.event.created_at)).toBeGreaterThanOrEqual(Date.parse(ended.event.created_at));
    expect(analysed.at).toBeGreaterThanOrEqual(ended.at);
    expect(() => stripe.webhooks.constructEvent(analysed.body, analysed.signature, secret, 300)).not.toThrow();

    const request = llm.requests.find((r) => r.body.model === 'analysis-model');
    expect(request?.body.response_format).toEqual({ type: 'json_object' });
    expect(JSON.stringify(request?.body.messages)).toContain('Caller: A table for four on Friday, please.');
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', end_reason: 'hangup', summary: SUMMARY, extracted });
    // One analysis per call: the worker keeps polling, the call is no longer due.
    await new Promise((r) => setTimeout(r, 1000));
    expect(events(call.id).filter((e) => e.event.type === 'call.analysed')).toHaveLength(1);
  }, 60_000);

  it('judges a call by the agent’s post_call.success: null until the analysis, then the extracted field decides', async () => {
    // A field the agent does not extract is refused, like a workflow's.
    const refused = await api.post('/v1/agents', {
      name: 'Booker',
      languages: [{ code: 'en' }],
      post_call: { extraction: EXTRACTION, success: { extracted_field: { name: 'booked' } } },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([{ field: 'post_call.success.extracted_field.name', message: "is not a field the agent's post_call.extraction extracts" }]);

    llm.reply(() => JSON.stringify({ summary: SUMMARY, extracted: { party_size: '4', outcome: 'Booked' } }));
    const success = { end_reasons: ['hangup', 'completed'], extracted_field: { name: 'outcome', equals: 'booked' } };
    const agent = await api.post('/v1/agents', { name: 'Booker', languages: [{ code: 'en' }], post_call: { model: 'analysis-model', extraction: EXTRACTION, success } });
    expect(agent.status).toBe(201);
    expect((await api.get(`/v1/agents/${agent.body.id}`)).body.post_call.success).toEqual(success);

    const call = await answeredCallWithTurns(agent.body.id);
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'in_progress', successful: null });
    // The end reason counts; the extracted field is still to come.
    expect((await api.post(`/v1/calls/${call.id}/end`)).body).toMatchObject({ status: 'ended', end_reason: 'hangup', successful: null });

    const analysed = await waitFor(() => events(call.id).find((e) => e.event.type === 'call.analysed'), 30_000);
    expect(analysed.event.data).toEqual({ summary: SUMMARY, extracted: { party_size: 4, outcome: 'booked' }, model: 'analysis-model', successful: true });
    expect((await api.get(`/v1/calls/${call.id}`)).body).toMatchObject({ status: 'ended', successful: true });
    const listed = await api.get(`/v1/calls?agent_id=${agent.body.id}`);
    expect(listed.body.data).toEqual([expect.objectContaining({ id: call.id, successful: true })]);
    expect((await api.get(`/v1/calls?agent_id=${agent.body.id}&successful=true`)).body.data.map((c: { id: string }) => c.id)).toEqual([call.id]);
    expect((await api.get(`/v1/calls?agent_id=${agent.body.id}&successful=false`)).body.data).toEqual([]);
    expect((await api.get(`/v1/calls?successful=maybe`)).status).toBe(400);
  }, 60_000);
});
