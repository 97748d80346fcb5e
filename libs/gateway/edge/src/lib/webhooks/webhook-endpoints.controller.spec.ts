import 'reflect-metadata';
import { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { webhooksV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { Principal } from '../auth/api-keys.repository';
import { buildOpenApiDocument } from '../http/openapi';
import { CursorCodec } from '../http/pagination';
import { fakeRpcClient } from '../testing/fake-rpc-client';
import { ProblemFilter } from '../http/problem';
import { NoBodyGuard } from '../http/no-body';
import { BodyValidationPipe } from '../http/validation';
import { WebhookEndpointsController } from './webhook-endpoints.controller';
import { WebhooksClient } from './webhooks.client';
import { IdempotencyStore } from '../edge/idempotency.store';
import { ProjectsService } from '../projects/projects.service';

type Service = webhooksV1.WebhooksServiceClient;

const endpoint = (over: Partial<webhooksV1.Endpoint> = {}): webhooksV1.Endpoint => ({
  id: 'whep_1',
  account_id: 'acme',
  project_id: DEFAULT_PROJECT,
  url: 'https://example.com/hook',
  events: ['*'],
  description: '',
  enabled: true,
  metadata: {},
  disabled_reason: '',
  consecutive_failures: 0,
  created_at: '2025-01-01T00:00:00.000Z',
  updated_at: '2025-01-01T00:00:00.000Z',
  ...over,
});

const who = { accountId: 'acme' } as Principal;
const DEFAULT_PROJECT = `prj_${'0'.repeat(22)}`;
/** Every endpoint goes into the default project, without a ceiling. */
const projects = { within: (_a: string, _id: string, _f: string, work: (p: object) => unknown) => work({ id: DEFAULT_PROJECT, max_webhook_endpoints: null }) };
const cursors = new CursorCodec('unit-test-secret-key-0000000000000001');

function controller(answers: Partial<Record<keyof Service, unknown>>) {
  const { client, requests } = fakeRpcClient<Service, WebhooksClient>(answers);
  return { c: new WebhookEndpointsController(client, cursors, projects as unknown as ProjectsService), requests };
}

function fakeReply() {
  const reply = { statusCode: 200, status: (code: number) => ((reply.statusCode = code), reply) };
  return reply;
}

describe('WebhookEndpointsController', () => {
  it('creates with every default filled in and returns the secret once', async () => {
    const { c, requests } = controller({ createEndpoint: { endpoint: endpoint(), secret: 'whsec_abc' } });
    const res = await c.create(who, { url: 'https://example.com/hook' });
    expect(requests.createEndpoint).toEqual({
      account_id: 'acme',
      endpoint: { url: 'https://example.com/hook', events: { items: ['*'] }, description: '', enabled: true, metadata: { entries: {} } },
      project_id: DEFAULT_PROJECT,
      max_webhook_endpoints: 0,
    });
    expect(res).toEqual({
      id: 'whep_1',
      object: 'webhook_endpoint',
      project_id: DEFAULT_PROJECT,
      url: 'https://example.com/hook',
      events: ['*'],
      description: '',
      enabled: true,
      metadata: {},
      disabled_reason: null,
      created_at: '2025-01-01T00:00:00.000Z',
      updated_at: '2025-01-01T00:00:00.000Z',
      secret: 'whsec_abc',
    });
  });

  it('never shows the secret, the account or the failure counter on reads, and maps an automatic disable reason', async () => {
    const { c } = controller({
      getEndpoint: { endpoint: endpoint({ enabled: false, disabled_reason: '20 consecutive failed deliveries', consecutive_failures: 20 }) },
    });
    const res = await c.get(who, 'whep_1');
    expect(res).not.toHaveProperty('secret');
    expect(res).not.toHaveProperty('account_id');
    expect(res).not.toHaveProperty('consecutive_failures');
    expect(res).toMatchObject({ enabled: false, disabled_reason: '20 consecutive failed deliveries' });
  });

  it('declares: 201 with the secret when created, 200 without it otherwise, always sending the whole state', async () => {
    const created = controller({ declareEndpoint: { endpoint: endpoint(), created: true, secret: 'whsec_new' } });
    const reply = fakeReply();
    const first = await created.c.declare(who, { url: 'https://example.com/hook', events: ['call.*'] }, reply as never);
    expect(reply.statusCode).toBe(201);
    expect(first).toMatchObject({ id: 'whep_1', secret: 'whsec_new' });
    expect(created.requests.declareEndpoint).toEqual({
      account_id: 'acme',
      endpoint: { url: 'https://example.com/hook', events: { items: ['call.*'] }, description: '', enabled: true, metadata: { entries: {} } },
      project_id: DEFAULT_PROJECT,
      max_webhook_endpoints: 0,
    });

    const updated = controller({ declareEndpoint: { endpoint: endpoint(), created: false, secret: '' } });
    const again = fakeReply();
    const second = await updated.c.declare(who, { url: 'https://example.com/hook' }, again as never);
    expect(again.statusCode).toBe(200);
    expect(second).not.toHaveProperty('secret');
  });

  it('patches only the fields given', async () => {
    const { c, requests } = controller({ updateEndpoint: { endpoint: endpoint({ enabled: false }) } });
    await c.update(who, 'whep_1', { enabled: false });
    expect(requests.updateEndpoint).toEqual({ account_id: 'acme', id: 'whep_1', patch: { enabled: false } });
    await c.update(who, 'whep_1', { events: ['call.ended'], metadata: { a: 'b' } });
    expect(requests.updateEndpoint).toEqual({
      account_id: 'acme',
      id: 'whep_1',
      patch: { events: { items: ['call.ended'] }, metadata: { entries: { a: 'b' } } },
    });
  });

  it('deletes with {id, object, deleted}', async () => {
    const { c } = controller({ deleteEndpoint: { id: 'whep_1', deleted: true } });
    expect(await c.remove(who, 'whep_1')).toEqual({ id: 'whep_1', object: 'webhook_endpoint', deleted: true });
  });

  it('pages endpoints with signed cursors bound to the list', async () => {
    const { c, requests } = controller({ listEndpoints: { data: [endpoint()], has_more: true, next: 'pos-1' } });
    const page = await c.list(who, { limit: '1' });
    expect(requests.listEndpoints).toEqual({ account_id: 'acme', limit: 1, after: '', project_id: '' });
    expect(page).toMatchObject({ object: 'list', has_more: true, data: [{ id: 'whep_1' }] });
    await c.list(who, { starting_after: page.next_cursor });
    expect(requests.listEndpoints).toEqual({ account_id: 'acme', limit: 20, after: 'pos-1', project_id: '' });
    // A cursor of this list is no cursor of an endpoint's deliveries.
    await expect(c.deliveries(who, 'whep_1', { starting_after: page.next_cursor })).rejects.toMatchObject({ code: 'validation_error' });
  });

  it('lists deliveries with nulls for what did not happen, and cursors bound to the endpoint', async () => {
    const delivery: webhooksV1.Delivery = {
      id: 'whdl_1',
      event_id: 'evt_1',
      event_type: 'call.started',
      attempt: 2,
      status_code: 0,
      error: 'connect ECONNREFUSED',
      duration_ms: 3,
      succeeded: false,
      created_at: '2025-01-01T00:00:01.000Z',
      next_attempt_at: '2025-01-01T00:00:26.000Z',
      test: false,
      outcome: 'failed',
    };
    const ok = { ...delivery, id: 'whdl_2', attempt: 3, status_code: 204, error: '', succeeded: true, next_attempt_at: '', test: true, outcome: 'succeeded' };
    const { c, requests } = controller({ listDeliveries: { data: [ok, delivery], has_more: true, next: 'pos-9' } });
    const page = await c.deliveries(who, 'whep_1', {});
    expect(requests.listDeliveries).toEqual({ account_id: 'acme', id: 'whep_1', limit: 20, after: '' });
    expect(page.data).toEqual([
      { ...ok, object: 'webhook_delivery', error: null, next_attempt_at: null },
      { ...delivery, object: 'webhook_delivery', status_code: null },
    ]);
    await c.deliveries(who, 'whep_1', { starting_after: page.next_cursor });
    expect(requests.listDeliveries).toMatchObject({ after: 'pos-9' });
    const err = await c.deliveries(who, 'whep_2', { starting_after: page.next_cursor }).catch((e: AppError) => e);
    expect(err).toMatchObject({ code: 'validation_error', errors: [{ field: 'starting_after', message: expect.any(String) }] });
  });

  it('reports a test delivery, with an error only on failure', async () => {
    expect(await controller({ testEndpoint: { delivered: true, response_code: 200, error: '' } }).c.test(who, 'whep_1')).toEqual({
      delivered: true,
      response_code: 200,
    });
    expect(await controller({ testEndpoint: { delivered: false, response_code: 500, error: 'HTTP 500' } }).c.test(who, 'whep_1')).toEqual({
      delivered: false,
      response_code: 500,
      error: 'HTTP 500',
    });
    expect(await controller({ testEndpoint: { delivered: false, response_code: 0, error: '' } }).c.test(who, 'whep_1')).toEqual({
      delivered: false,
      response_code: 0,
      error: 'no response from the endpoint',
    });
  });

  it('rotates with a day of overlap unless told otherwise', async () => {
    const answer = { endpoint: endpoint(), secret: 'whsec_next', previous_secret_expires_at: '2025-01-02T00:00:00.000Z' };
    const { c, requests } = controller({ rotateSecret: answer });
    expect(await c.rotateSecret(who, 'whep_1', {})).toEqual({
      object: 'webhook_endpoint_secret',
      endpoint_id: 'whep_1',
      secret: 'whsec_next',
      previous_secret_expires_at: '2025-01-02T00:00:00.000Z',
    });
    expect(requests.rotateSecret).toEqual({ account_id: 'acme', id: 'whep_1', overlap_seconds: 86400 });
    await c.rotateSecret(who, 'whep_1', { overlap_seconds: 0 });
    expect(requests.rotateSecret).toEqual({ account_id: 'acme', id: 'whep_1', overlap_seconds: 0 });
  });
});

/** Stands in for AuthGuard: every request comes from account `acme`. */
class AcmeGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    context.switchToHttp().getRequest().principal = who;
    return true;
  }
}

describe('webhook endpoint routes over HTTP (body pipe, status codes)', () => {
  let app: INestApplication;
  let requests: Partial<Record<keyof Service, unknown>>;
  let created = true;
  let urlProblem = '';

  beforeAll(async () => {
    const fake = fakeRpcClient<Service, WebhooksClient>({
      createEndpoint: { endpoint: endpoint(), secret: 'whsec_abc' },
      get declareEndpoint() {
        return { endpoint: endpoint(), created, secret: created ? 'whsec_abc' : '' };
      },
      rotateSecret: { endpoint: endpoint(), secret: 'whsec_next', previous_secret_expires_at: '2025-01-02T00:00:00.000Z' },
      testEndpoint: { delivered: true, response_code: 204, error: '' },
      get checkEndpointUrl() {
        return { problem: urlProblem };
      },
    });
    requests = fake.requests;
    const module = await Test.createTestingModule({
      controllers: [WebhookEndpointsController],
      providers: [
        { provide: WebhooksClient, useValue: fake.client },
        { provide: CursorCodec, useValue: cursors },
        { provide: ProjectsService, useValue: projects },
        // The idempotent routes' interceptor; these requests send no Idempotency-Key, so it is never consulted.
        { provide: IdempotencyStore, useValue: {} },
        { provide: APP_GUARD, useClass: AcmeGuard },
        { provide: APP_GUARD, useClass: NoBodyGuard },
        { provide: APP_PIPE, useClass: BodyValidationPipe },
        { provide: APP_FILTER, useClass: ProblemFilter },
      ],
    }).compile();
    app = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter());
    await app.init();
    await (app as NestFastifyApplication).getHttpAdapter().getInstance().ready();
  });

  afterAll(() => app?.close());

  const inject = (method: 'POST' | 'PUT' | 'PATCH', url: string, payload?: unknown) =>
    (app as NestFastifyApplication).inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }) });

  it('answers PUT with 201 and the secret when the endpoint was created, 200 without it when it existed', async () => {
    created = true;
    const first = await inject('PUT', '/v1/webhook_endpoints', { url: 'https://example.com/hook' });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({ secret: 'whsec_abc' });
    created = false;
    const second = await inject('PUT', '/v1/webhook_endpoints', { url: 'https://example.com/hook' });
    expect(second.statusCode).toBe(200);
    expect(second.json()).not.toHaveProperty('secret');
  });

  it('answers POST with 201, and refuses unknown fields with 400 and bad events with 422 before calling the service', async () => {
    expect((await inject('POST', '/v1/webhook_endpoints', { url: 'https://example.com/hook' })).statusCode).toBe(201);
    delete requests.createEndpoint;
    const unknown = await inject('POST', '/v1/webhook_endpoints', { url: 'https://example.com/hook', nope: 1 });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({ code: 'invalid_request', errors: [{ field: 'nope', message: 'is not a known field' }] });
    const bad = await inject('POST', '/v1/webhook_endpoints', { url: 'https://example.com/hook', events: ['call.nope'] });
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ code: 'validation_error', errors: [{ field: 'events' }] });
    expect(requests.createEndpoint).toBeUndefined();
  });

  it("reports the service's refusal of the url beside the body's other problems, in one 422, on POST, PUT and PATCH", async () => {
    urlProblem = 'Outbound request refused: the scheme must be https';
    delete requests.createEndpoint;
    const body = { url: 'http://example.com/hook', enabled: 'yes' };
    for (const [method, path] of [['POST', '/v1/webhook_endpoints'], ['PUT', '/v1/webhook_endpoints'], ['PATCH', '/v1/webhook_endpoints/whep_1']] as const) {
      const res = await inject(method, path, body);
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual([
        { field: 'enabled', message: expect.any(String) },
        { field: 'url', message: urlProblem },
      ]);
    }
    expect(requests.checkEndpointUrl).toEqual({ url: 'http://example.com/hook' });
    expect(requests.createEndpoint).toBeUndefined();

    // A url the shape check already refused is reported once, without asking the service.
    delete requests.checkEndpointUrl;
    const both = await inject('POST', '/v1/webhook_endpoints', { url: '', enabled: 'yes' });
    expect(both.json().errors.map((e: { field: string }) => e.field).sort()).toEqual(['enabled', 'url']);
    expect(requests.checkEndpointUrl).toBeUndefined();
    urlProblem = '';
  });

  it('tests with no body (200), refuses a test with one (400, nothing sent), and rotates with or without one (200)', async () => {
    const test = await inject('POST', '/v1/webhook_endpoints/whep_1/test');
    expect(test.statusCode).toBe(200);
    expect(test.json()).toEqual({ delivered: true, response_code: 204 });
    delete requests.testEndpoint;
    const withBody = await inject('POST', '/v1/webhook_endpoints/whep_1/test', { event: 'call.ended' });
    expect(withBody.statusCode).toBe(400);
    expect(withBody.json()).toMatchObject({ code: 'invalid_request', errors: [{ field: 'event' }] });
    expect(requests.testEndpoint).toBeUndefined();
    const bare = await inject('POST', '/v1/webhook_endpoints/whep_1/rotate_secret');
    expect(bare.statusCode).toBe(200);
    expect(requests.rotateSecret).toEqual({ account_id: 'acme', id: 'whep_1', overlap_seconds: 86400 });
    const given = await inject('POST', '/v1/webhook_endpoints/whep_1/rotate_secret', { overlap_seconds: 60 });
    expect(given.statusCode).toBe(200);
    expect(requests.rotateSecret).toEqual({ account_id: 'acme', id: 'whep_1', overlap_seconds: 60 });
    const bad = await inject('POST', '/v1/webhook_endpoints/whep_1/rotate_secret', { overlap_seconds: 604801 });
    expect(bad.statusCode).toBe(422);
  });
});

interface Schema extends Record<string, unknown> {
  properties?: Record<string, Schema>;
  required?: string[];
}
type Op = {
  'x-permission'?: string;
  parameters?: { name: string; in: string }[];
  requestBody?: { required?: boolean };
  responses: Record<string, unknown>;
  description?: string;
};

describe('OpenAPI of the webhook endpoints', () => {
  let paths: Record<string, Record<string, Op>>;
  let schemas: Record<string, Schema>;

  beforeAll(async () => {
    const module = await Test.createTestingModule({
      controllers: [WebhookEndpointsController],
      providers: [
        { provide: WebhooksClient, useValue: {} },
        { provide: CursorCodec, useValue: cursors },
        { provide: ProjectsService, useValue: projects },
        { provide: IdempotencyStore, useValue: {} },
      ],
    }).compile();
    const app = module.createNestApplication(new FastifyAdapter());
    await app.init();
    const document = buildOpenApiDocument(app);
    await app.close();
    paths = document.paths as never;
    schemas = document.components?.schemas as Record<string, Schema>;
  });

  it('publishes the eight routes of the interface plus rotate_secret, each with its permission', () => {
    const routes = Object.entries(paths).flatMap(([path, ops]) => Object.entries(ops).map(([m, op]) => `${m} ${path} ${op['x-permission']}`));
    expect(routes.sort()).toEqual(
      [
        'get /v1/webhook_endpoints agents:read',
        'post /v1/webhook_endpoints agents:write',
        'put /v1/webhook_endpoints agents:write',
        'get /v1/webhook_endpoints/{id} agents:read',
        'patch /v1/webhook_endpoints/{id} agents:write',
        'delete /v1/webhook_endpoints/{id} agents:write',
        'get /v1/webhook_endpoints/{id}/deliveries agents:read',
        'post /v1/webhook_endpoints/{id}/test agents:write',
        'post /v1/webhook_endpoints/{id}/rotate_secret agents:write',
      ].sort(),
    );
  });

  it('shows the secret only in creation responses', () => {
    expect(Object.keys(schemas['WebhookEndpointDto'].properties ?? {})).not.toContain('secret');
    expect(schemas['CreatedWebhookEndpointDto'].required).toContain('secret');
    const put = paths['/v1/webhook_endpoints']['put'];
    expect(JSON.stringify(put.responses['201'])).toContain('CreatedWebhookEndpointDto');
    expect(JSON.stringify(put.responses['200'])).toContain('"#/components/schemas/WebhookEndpointDto"');
    expect(put.description).toContain('Safe to repeat.');
    expect(put.description).toContain('never resets the failure count');
  });

  it('takes no body on test and an optional one on rotate_secret', () => {
    expect(paths['/v1/webhook_endpoints/{id}/test']['post'].requestBody).toMatchObject({ required: false, content: { 'application/json': { schema: { maxProperties: 0 } } } });
    expect(paths['/v1/webhook_endpoints/{id}/rotate_secret']['post'].requestBody?.required).toBe(false);
    expect(paths['/v1/webhook_endpoints/{id}/rotate_secret']['post'].description).toContain('one v1= signature per active secret');
  });

  it('accepts limit and starting_after on the lists', () => {
    for (const path of ['/v1/webhook_endpoints', '/v1/webhook_endpoints/{id}/deliveries']) {
      expect(paths[path]['get'].parameters?.map((p) => p.name)).toEqual(expect.arrayContaining(['limit', 'starting_after']));
    }
  });

  it('documents every input field and marks nullable outputs', () => {
    for (const name of ['WebhookEndpointInputDto', 'RotateSecretInputDto']) {
      const undocumented = Object.entries(schemas[name].properties ?? {}).filter(([, s]) => !s['description']);
      expect(undocumented).toEqual([]);
    }
    expect(schemas['WebhookEndpointInputDto'].required).toEqual(['url']);
    expect(schemas['WebhookEndpointPatchDto'].required ?? []).toEqual([]);
    expect(schemas['WebhookEndpointDto'].properties?.['disabled_reason']['type']).toEqual(['string', 'null']);
    expect(schemas['WebhookDeliveryDto'].properties?.['status_code']['type']).toEqual(['integer', 'null']);
  });
});
