import 'reflect-metadata';
import { EventEmitter } from 'node:events';
import { Metadata } from '@grpc/grpc-js';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { firstValueFrom, Observable, of } from 'rxjs';
import { callsV1, LIVE, RingingActivity } from '@parley/contracts';
import { GatewayConfig } from '@parley/config';
import { InProcessBus } from '@parley/messaging';
import { AppError } from '@parley/rpc';
import { BUS, CONFIG } from '@parley/runtime';
import { callMessage } from '@parley/testing';
import { ApiKeysRepository, Principal } from '../auth/api-keys.repository';
import { AuthGuard } from '../auth/auth.guard';
import { IdempotencyStore } from '../edge/idempotency.store';
import { CursorCodec } from '../http/pagination';
import { ProblemFilter } from '../http/problem';
import { BodyValidationPipe } from '../http/validation';
import { CallsClient } from './calls.client';
import { CallsController } from './calls.controller';
import { Recordings } from './recordings';
import { RealtimeTokensController } from './realtime-tokens.controller';
import { RingingController } from './ringing.controller';

type Service = callsV1.CallsServiceClient;

const call = (id: string, over: Partial<callsV1.Call> = {}): callsV1.Call =>
  callMessage({
    id,
    account_id: 'acme',
    direction: 'inbound',
    to: '+15550009999',
    from: '+15550177777',
    status: 'ringing',
    carrier: 'twilio',
    carrier_call_id: 'CA1',
    created_at: '2026-11-25T10:00:00.000Z',
    claimable: true,
    ...over,
  });

/** A CallsClient answering from `answers` (a function of the request, or a value) and recording every request. */
function fakeClient(answers: Partial<Record<keyof Service, unknown>>) {
  const requests: Partial<Record<keyof Service, unknown>> = {};
  const service = new Proxy({} as Service, {
    get: (_t, method: keyof Service) => (request: unknown) => {
      requests[method] = request;
      const answer = answers[method];
      return answer instanceof Observable ? answer : of(typeof answer === 'function' ? answer(request) : answer);
    },
  });
  const client = { call: <R>(_m: string, invoke: (s: Service, md: Metadata) => Observable<R>) => firstValueFrom(invoke(service, new Metadata())) } as unknown as CallsClient;
  return { client, requests };
}

const config = { MEDIA_PUBLIC_URL: 'wss://media.example.com/' } as GatewayConfig;
const apiKey = { accountId: 'acme', role: 'member', keyId: 'key_1' } as Principal;
const consoleToken = { accountId: 'acme', role: 'member', keyId: '', operator: 'alice', sessionExpiresAt: new Date(Date.now() + 3_600_000) } as Principal;

/** A request and a hijackable reply whose raw stream is recorded as the SSE events it wrote. */
function sse(accept = 'text/event-stream') {
  const raw = new EventEmitter();
  const written: string[] = [];
  const reply = {
    hijacked: false,
    status: 0,
    headers: {} as Record<string, string>,
    ended: false,
    hijack() {
      this.hijacked = true;
    },
    getHeaders: () => ({ 'x-request-id': 'req_1' }),
    raw: {
      writeHead: (status: number, headers: Record<string, string>) => Object.assign(reply, { status, headers }),
      write: (chunk: string) => written.push(chunk),
      end: () => (reply.ended = true),
    },
  };
  const request = { headers: { accept }, raw };
  const events = () =>
    written
      .filter((w) => w.startsWith('id:'))
      .map((w) => {
        const [, id, event, data] = /^id: (.*)\nevent: (.*)\ndata: (.*)\n\n$/.exec(w) ?? [];
        return { id, event, data: JSON.parse(data) as Record<string, unknown> };
      });
  return { request, reply, events, close: () => raw.emit('close') };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('GET /v1/calls/ringing', () => {
  let bus: InProcessBus;

  beforeEach(() => {
    bus = new InProcessBus();
    bus.open();
  });

  const broadcast = (activity: RingingActivity, account = 'acme') => bus.broadcast(LIVE.ringing(account).name, activity);

  it('answers the list envelope of the ringing calls without Accept: text/event-stream', async () => {
    const { client, requests } = fakeClient({ listRinging: { calls: [call('call_1'), call('call_2')] } });
    const { request, reply } = sse('application/json');
    const list = await new RingingController(client, bus, config).ringing(apiKey, request as never, reply as never);
    expect(requests.listRinging).toEqual({ account_id: 'acme' });
    expect(list).toMatchObject({ object: 'list', has_more: false, data: [{ id: 'call_1', claimable: true, claimed_by: null, claimed_at: null }, { id: 'call_2' }] });
  });

  it('streams the snapshot first, then arrivals and departures, each call announced once and gone once', async () => {
    const { client } = fakeClient({ listRinging: { calls: [call('call_1')] } });
    const s = sse();
    await new RingingController(client, bus, config).ringing(apiKey, s.request as never, s.reply as never);
    expect(s.reply).toMatchObject({ hijacked: true, status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-accel-buffering': 'no', 'x-request-id': 'req_1' } });

    await broadcast({ kind: 'ringing', call: call('call_1') }); // already in the snapshot
    await broadcast({ kind: 'ringing', call: call('call_2') });
    await broadcast({ kind: 'ringing', call: call('call_2') }); // its stream re-attached
    await broadcast({ kind: 'gone', reason: 'claimed', call: call('call_1', { status: 'in_progress', claimed_by: 'bob' }) });
    await broadcast({ kind: 'gone', reason: 'ended', call: call('call_1', { status: 'ended' }) });
    await broadcast({ kind: 'gone', reason: 'ended', call: call('call_9', { status: 'ended' }) }); // never announced
    await broadcast({ kind: 'ringing', call: call('call_9') }); // late, after its end
    await broadcast({ kind: 'ringing', call: call('call_3') }, 'other_account');
    await flush();

    expect(s.events().map((e) => `${e.event} ${e.id}`)).toEqual(['ringing call_1:ringing', 'ringing call_2:ringing', 'gone call_1:gone']);
    expect(s.events()[0].data).toMatchObject({ id: 'call_1', object: 'call', status: 'ringing' });
    expect(s.events()[2].data).toMatchObject({ call_id: 'call_1', reason: 'claimed', call: { id: 'call_1', claimed_by: 'bob' } });
    s.close();
    await broadcast({ kind: 'ringing', call: call('call_4') });
    expect(s.reply.ended).toBe(true);
    expect(s.events()).toHaveLength(3);
  });

  it('loses nothing that happens while the snapshot is read, and never announces a call that left meanwhile', async () => {
    let answer: (calls: callsV1.Call[]) => void = () => undefined;
    const snapshot = new Observable<callsV1.ListRingingResponse>((subscriber) => {
      answer = (calls) => {
        subscriber.next({ calls });
        subscriber.complete();
      };
    });
    const { client } = fakeClient({ listRinging: snapshot });
    const s = sse();
    const opened = new RingingController(client, bus, config).ringing(apiKey, s.request as never, s.reply as never);
    await flush();
    await broadcast({ kind: 'ringing', call: call('call_new') });
    await broadcast({ kind: 'gone', reason: 'claimed', call: call('call_old', { status: 'in_progress' }) });
    answer([call('call_old'), call('call_new')]);
    await opened;

    expect(s.events().map((e) => `${e.event} ${e.id}`)).toEqual(['ringing call_new:ringing']);
    s.close();
  });

  it('closes a console token’s stream at the session’s end, saying so first', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const { client } = fakeClient({ listRinging: { calls: [] } });
      const s = sse();
      const ending = { ...consoleToken, sessionExpiresAt: new Date(Date.now() + 60_000) };
      await new RingingController(client, bus, config).ringing(ending, s.request as never, s.reply as never);
      jest.advanceTimersByTime(30_000);
      expect(s.reply.ended).toBe(false);
      jest.advanceTimersByTime(30_000);
      expect(s.events()).toEqual([{ id: expect.stringMatching(/^session:/), event: 'session-expired', data: { session_expires_at: ending.sessionExpiresAt.toISOString() } }]);
      expect(s.reply.ended).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('POST /v1/calls/{id}/claim', () => {
  const claimed = (operator: string) => ({
    call: call('call_1', { status: 'in_progress', claimed_by: operator, claimed_at: '2026-11-25T10:00:05.000Z', answered_at: '2026-11-25T10:00:05.000Z' }),
    token: { token: 'rtk_op', expires_at: '2026-11-25T10:01:05.000Z', role: 'operator', seat: '' },
  });

  it('answers a realtime token of role operator with the socket’s url and the claimed call', async () => {
    const { client, requests } = fakeClient({ claimCall: (req: callsV1.ClaimCallRequest) => claimed(req.operator || 'api') });
    const token = await new RingingController(client, new InProcessBus(), config).claim(apiKey, 'call_1', { operator: 'bob' });
    expect(requests.claimCall).toEqual({ account_id: 'acme', id: 'call_1', operator: 'bob' });
    expect(token).toEqual({
      object: 'realtime_token',
      token: 'rtk_op',
      url: 'wss://media.example.com/realtime',
      call_id: 'call_1',
      role: 'operator',
      expires_at: '2026-11-25T10:01:05.000Z',
      call: expect.objectContaining({ id: 'call_1', status: 'in_progress', claimed_by: 'bob', claimed_at: '2026-11-25T10:00:05.000Z' }),
    });
  });

  it('records a console token’s operator, whatever the body says', async () => {
    const { client, requests } = fakeClient({ claimCall: (req: callsV1.ClaimCallRequest) => claimed(req.operator) });
    await new RingingController(client, new InProcessBus(), config).claim(consoleToken, 'call_1', { operator: 'mallory' });
    expect(requests.claimCall).toMatchObject({ operator: 'alice' });
  });

  it('answers the free seat’s token for a rendezvous', async () => {
    const { client } = fakeClient({ claimCall: { call: call('call_2', { direction: 'web', seats: [{ name: 'a', taken: true }, { name: 'b', taken: false }] }), token: { token: 'rtk_seat', expires_at: '', role: 'seat', seat: 'b' } } });
    expect(await new RingingController(client, new InProcessBus(), config).claim(apiKey, 'call_2', {})).toMatchObject({ role: 'seat', seat: 'b', call: { status: 'ringing' } });
  });
});

describe('POST /v1/realtime/tokens role console, and its refresh', () => {
  const minted = { token: { token: 'rtk_console', expires_at: '2026-11-25T10:15:00.000Z', role: 'console', seat: '' }, session_expires_at: '2026-11-25T22:00:00.000Z' };
  const controller = (answers: Partial<Record<keyof Service, unknown>>) => {
    const { client, requests } = fakeClient(answers);
    return { c: new RealtimeTokensController(client, config), requests };
  };
  const problems = async (run: () => Promise<unknown>) => {
    try {
      await run();
      return undefined;
    } catch (error) {
      return { code: (error as AppError).code, fields: (error as AppError).errors?.map((e) => e.field) };
    }
  };
  const noKey = { headers: {} } as never;

  it('mints a console token: no call, no socket, its operator and session end', async () => {
    const { c, requests } = controller({ mintConsoleToken: minted });
    expect(await c.create(apiKey, { role: 'console', operator: 'alice', ttl_seconds: 900 }, noKey)).toEqual({
      object: 'realtime_token',
      role: 'console',
      token: 'rtk_console',
      expires_at: '2026-11-25T10:15:00.000Z',
      session_expires_at: '2026-11-25T22:00:00.000Z',
      operator: 'alice',
      url: null,
      call_id: null,
      call: null,
    });
    expect(requests.mintConsoleToken).toEqual({ account_id: 'acme', operator: 'alice', ttl_seconds: 900, refresh: '' });
    expect(requests.createWebCall).toBeUndefined();
  });

  it('refuses a console mint naming an agent or no operator, and a web call naming no agent or console fields, each field named (422)', async () => {
    const { c, requests } = controller({ mintConsoleToken: minted });
    expect(await problems(() => c.create(apiKey, { role: 'console', agent_id: 'agt_1', operator: 'alice' }, noKey))).toEqual({ code: 'validation_error', fields: ['agent_id'] });
    expect(await problems(() => c.create(apiKey, { role: 'console' }, noKey))).toEqual({ code: 'validation_error', fields: ['operator'] });
    expect(await problems(() => c.create(apiKey, {}, noKey))).toEqual({ code: 'validation_error', fields: ['agent_id'] });
    expect(await problems(() => c.create(apiKey, { role: 'caller', agent_id: 'agt_1', operator: 'alice' }, noKey))).toEqual({ code: 'validation_error', fields: ['operator'] });
    expect(requests.mintConsoleToken).toBeUndefined();
  });

  it('places a web call as before without a role', async () => {
    const { c, requests } = controller({ createWebCall: { call: call('call_w', { direction: 'web', status: 'queued', claimable: false }), token: { token: 'rtk_w', expires_at: '', role: 'caller', seat: '' } } });
    expect(await c.create(apiKey, { agent_id: 'agt_1' }, noKey)).toMatchObject({ role: 'caller', call_id: 'call_w', url: 'wss://media.example.com/realtime' });
    expect(requests.createWebCall).toMatchObject({ agent_id: 'agt_1' });
  });

  it('refreshes with the presented console token, keeping its operator', async () => {
    const { c, requests } = controller({ mintConsoleToken: minted });
    const request = { headers: { authorization: 'Bearer rtk_current.mac' } } as never;
    expect(await c.refresh(consoleToken, { ttl_seconds: 600 }, request)).toMatchObject({ role: 'console', operator: 'alice', token: 'rtk_console', call: null });
    expect(requests.mintConsoleToken).toEqual({ account_id: 'acme', operator: '', ttl_seconds: 600, refresh: 'rtk_current.mac' });
  });
});

describe('ringing and claim over HTTP (the real AuthGuard, body pipe, routing)', () => {
  const API_KEY = 'vsk_test_0123456789abcdef';
  const CONSOLE = `rtk_${'e'.repeat(40)}.${'m'.repeat(43)}`;
  let app: NestFastifyApplication;
  let requests: Partial<Record<keyof Service, unknown>>;

  beforeAll(async () => {
    const fake = fakeClient({
      listRinging: { calls: [call('call_1')] },
      claimCall: (req: callsV1.ClaimCallRequest) => ({ call: call(req.id, { status: 'in_progress', claimed_by: req.operator }), token: { token: 'rtk_op', expires_at: '', role: 'operator', seat: '' } }),
      getCall: (req: callsV1.GetCallRequest) => ({ call: call(req.id) }),
      verifyConsoleToken: (req: callsV1.VerifyConsoleTokenRequest) => {
        if (req.token !== CONSOLE) throw new AppError('unauthenticated', 'The console token is invalid or expired.');
        return { account_id: 'acme', operator: 'alice', session_expires_at: new Date(Date.now() + 3_600_000).toISOString() };
      },
    });
    requests = fake.requests;
    const keys = { authenticate: async (key: string) => (key === API_KEY ? apiKey : undefined) };
    const module = await Test.createTestingModule({
      controllers: [CallsController, RingingController],
      providers: [
        { provide: CallsClient, useValue: fake.client },
        { provide: ApiKeysRepository, useValue: keys },
        { provide: CursorCodec, useValue: new CursorCodec('unit-test-secret-key-0000000000000001') },
        { provide: Recordings, useValue: {} },
        // The idempotent routes' interceptor; these requests send no Idempotency-Key, so it is never consulted.
        { provide: IdempotencyStore, useValue: {} },
        { provide: BUS, useValue: new InProcessBus() },
        { provide: CONFIG, useValue: config },
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_PIPE, useClass: BodyValidationPipe },
        { provide: APP_FILTER, useClass: ProblemFilter },
      ],
    }).compile();
    app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter());
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });

  afterAll(() => app?.close());

  const get = (url: string, bearer: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${bearer}` } });
  const post = (url: string, bearer: string, payload: object) => app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${bearer}` }, payload });

  it('routes GET /v1/calls/ringing to the ringing list (not to a call named ringing), for a key and a console token alike', async () => {
    for (const bearer of [API_KEY, CONSOLE]) {
      const res = await get('/v1/calls/ringing', bearer);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ object: 'list', data: [{ id: 'call_1' }], has_more: false });
    }
    expect(requests.getCall).toBeUndefined();
  });

  it('claims with a console token for its operator, and refuses the token on any other route (401)', async () => {
    const claimed = await post('/v1/calls/call_1/claim', CONSOLE, { operator: 'mallory' });
    expect(claimed.statusCode).toBe(201);
    expect(claimed.json()).toMatchObject({ role: 'operator', call: { claimed_by: 'alice' } });
    const elsewhere = await get('/v1/calls/call_1', CONSOLE);
    expect(elsewhere.statusCode).toBe(401);
    expect(elsewhere.json()).toMatchObject({ code: 'unauthenticated', detail: expect.stringContaining('console token') });
    expect((await get('/v1/calls/ringing', `rtk_${'x'.repeat(40)}.${'m'.repeat(43)}`)).statusCode).toBe(401);
  });

  it('refuses an unknown claim field and an overlong operator (422 naming them)', async () => {
    const unknown = await post('/v1/calls/call_1/claim', API_KEY, { operator: 'bob', seat: 'a' });
    expect(unknown.statusCode).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(unknown.json())).toContain('seat');
    const long = await post('/v1/calls/call_1/claim', API_KEY, { operator: 'x'.repeat(81) });
    expect(long.statusCode).toBe(422);
    expect(long.json()).toMatchObject({ errors: [{ field: 'operator' }] });
  });
});
