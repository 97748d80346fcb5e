import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { SUBJECTS } from '@parley/contracts';
import { FakeChatCompletionBody } from '@parley/llm';
import { RunningPlatform } from '@parley/testing';
import { say } from './support/caller-speech';
import { PhonePlatform, startPhonePlatform } from './support/phone-platform';
import { until } from './support/until';

const KEY = 'vsk_e2e_tracing_key_000000001';

/** One span as OTLP/JSON carries it (ids in hex), with the service.name of the process that sent it. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

const pathOf = (s: ReceivedSpan) => String(s.attributes['url.path']);
const valueOf = (v: AnyValue) => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue;
const attributesOf = (list: KeyValue[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** An OTLP/HTTP receiver on loopback, as a collector would be: it keeps every span the platform exports. */
async function otlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: (Omit<ReceivedSpan, 'service' | 'attributes'> & { attributes?: KeyValue[] })[] }[] }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attributesOf(rs.resource?.attributes)['service.name']);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) spans.push({ ...s, service, parentSpanId: s.parentSpanId ?? '', attributes: attributesOf(s.attributes) });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const eventually = <T>(probe: () => T | undefined, what: string) => until(probe, what, 20_000);
/** Distributed when a NATS is at hand (each service its own process, events over JetStream), standalone otherwise. */
const MODE = process.env['NATS_URL'] ? 'distributed' : 'standalone';
const serviceName = (service: string) => (MODE === 'distributed' ? `parley-${service}` : 'parley-standalone');

describe(`traces: OpenTelemetry over OTLP (${MODE})`, () => {
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let phone: PhonePlatform;
  let platform: RunningPlatform;

  beforeAll(async () => {
    receiver = await otlpReceiver();
    // OTLP/JSON so the test reads it without protobuf; spans leave every 200 ms instead of every 5 s.
    phone = await startPhonePlatform(KEY, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '200' }, MODE);
    platform = phone.platform;
  }, 120_000);

  afterAll(async () => {
    await phone?.stop();
    await receiver?.close();
  }, 60_000);

  it('follows one request in one trace: the HTTP server span, the gRPC call both ways and the PostgreSQL query it made', async () => {
    const created = await platform.api(KEY).post('/v1/agents', { name: 'Traced desk', languages: [{ code: 'en-US' }] });
    expect(created.status).toBe(201);

    const server = await eventually(
      () => receiver.spans.find((s) => s.kind === 2 && s.attributes['http.request.method'] === 'POST' && pathOf(s) === '/v1/agents'),
      'the HTTP server span of POST /v1/agents',
    );
    const inTrace = () => receiver.spans.filter((s) => s.traceId === server.traceId);
    const grpcClient = await eventually(() => inTrace().find((s) => s.kind === 3 && s.name === 'grpc.parley.agents.v1.AgentsService/CreateAgent'), 'the gRPC client span');
    const grpcServer = await eventually(() => inTrace().find((s) => s.kind === 2 && s.name === 'grpc.parley.agents.v1.AgentsService/CreateAgent'), 'the gRPC server span');
    const query = await eventually(
      () => inTrace().find((s) => s.attributes['db.system.name'] === 'postgresql' && String(s.attributes['db.query.text']).startsWith('INSERT INTO "agents"."agents"')),
      'the query inserting the agent',
    );

    expect([server.service, grpcClient.service, grpcServer.service, query.service]).toEqual([
      serviceName('gateway'),
      serviceName('gateway'),
      serviceName('agents'),
      serviceName('agents'),
    ]);
    expect(grpcServer.parentSpanId).toBe(grpcClient.spanId);
    // The query ran in the agents service's handler: its ancestors lead back to the gRPC server span.
    const ancestors = (span: ReceivedSpan): string[] => {
      const parent = inTrace().find((s) => s.spanId === span.parentSpanId);
      return parent ? [parent.spanId, ...ancestors(parent)] : [];
    };
    expect(ancestors(query)).toContain(grpcServer.spanId);
    expect(ancestors(grpcClient)).toContain(server.spanId);
    // The outbox relay the request woke polls on in no trace (its own queries would otherwise join this one).
    await new Promise((r) => setTimeout(r, 1000));
    expect(inTrace().filter((s) => /"o"\."seq"|UPDATE outbox SET published_at/.test(String(s.attributes['db.query.text'])))).toEqual([]);
  });

  it('carries the trace through the outbox and the bus to the consumer of the event the request wrote', async () => {
    const api = platform.api(KEY);
    const { body: agent } = await api.post('/v1/agents', { name: 'Renamed desk', languages: [{ code: 'en-US' }] });
    const updated = await api.patch(`/v1/agents/${agent.id}`, { name: 'Renamed desk 2' });
    expect(updated.status).toBe(200);

    const server = await eventually(() => receiver.spans.find((s) => s.kind === 2 && s.attributes['http.request.method'] === 'PATCH' && pathOf(s) === `/v1/agents/${agent.id}`), 'the PATCH span');
    const consumer = await eventually(
      () => receiver.spans.find((s) => s.traceId === server.traceId && s.name === `parley.bus.${SUBJECTS.agentUpdated.name}`),
      'the webhook dispatcher’s consumer span in the request’s trace',
    );
    const grpcServer = receiver.spans.find((s) => s.traceId === server.traceId && s.kind === 2 && s.name === 'grpc.parley.agents.v1.AgentsService/UpdateAgent');
    // Parented on the span whose transaction wrote the outbox row: the agents service's handler.
    expect(consumer.parentSpanId).toBe(grpcServer?.spanId);
    expect(consumer.service).toBe(serviceName('webhook-dispatcher'));
    expect(consumer.kind).toBe(5); // consumer
  });

  it('records a call’s answered turn in the media worker as parley.turn with its call and agent ids, and its stt, llm and tts spans', async () => {
    const greeting = 'Hello, this is the front desk.';
    const question = 'When do you open tomorrow?';
    const answer = 'We open at nine tomorrow.';
    const agent = (await phone.api.post('/v1/agents', { name: 'Front desk', languages: [{ code: 'en-US', greeting, stt_provider: 'deepgram' }], conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 } })).body;
    phone.deepgram.utterances(question);
    phone.llm.reply((body: FakeChatCompletionBody) => (body.stream ? answer : '{}'));
    const call = (await phone.api.post('/v1/calls', { agent_id: agent.id, to: '+15550100231' })).body as { id: string; carrier_call_id: string };
    expect(await phone.twilio.sendStatusCallback(call.carrier_call_id, 'in-progress')).toBe(204);
    const media = await phone.twilio.connectMediaStream(call.carrier_call_id);
    const turns = async () => (await phone.api.get(`/v1/calls/${call.id}/transcript`)).body.turns as { role: string; text: string }[];
    await until(async () => (await turns()).some((t) => t.text === greeting), 'the greeting', 20_000);
    await say(media, question);
    await until(async () => (await turns()).some((t) => t.role === 'assistant' && t.text === answer), 'the answer', 20_000);

    const turn = await eventually(() => receiver.spans.find((s) => s.name === 'parley.turn' && s.attributes['parley.call_id'] === call.id), 'the turn span');
    expect(turn.service).toBe('parley-media-worker');
    expect(turn.attributes).toMatchObject({ 'parley.agent_id': agent.id, 'parley.interrupted': false });
    const children = receiver.spans.filter((s) => s.traceId === turn.traceId && s.parentSpanId === turn.spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['llm', 'stt', 'tts']);
    await media.stop();
  }, 60_000);

  it('leaves probes and scrapes untraced', async () => {
    await platform.api().get('/healthz');
    await platform.api().get('/metrics');
    await platform.api(KEY).get('/v1/agents');
    await eventually(() => receiver.spans.find((s) => s.kind === 2 && pathOf(s) === '/v1/agents' && s.attributes['http.request.method'] === 'GET'), 'the GET span');

    expect(receiver.spans.filter((s) => ['/healthz', '/metrics', '/readyz'].includes(pathOf(s)))).toEqual([]);
  });
});
