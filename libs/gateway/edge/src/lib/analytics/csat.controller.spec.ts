import 'reflect-metadata';
import { callsV1 } from '@parley/contracts';
import { Principal } from '../auth/api-keys.repository';
import { CallsClient } from '../calls/calls.client';
import { BodyValidationPipe } from '../http/validation';
import { fakeRpcClient } from '../testing/fake-rpc-client';
import { gatewayOpenApiDocument } from '../testing/gateway-openapi';
import { CsatController } from './csat.controller';
import { RecordCsatDto } from './csat.dto';

type Service = callsV1.CallsServiceClient;

const who = { accountId: 'acme' } as Principal;
const rating = (over: Partial<callsV1.Rating> = {}): callsV1.Rating => ({
  id: 'csat_1',
  call_id: 'call_1',
  source: 'api',
  scale: 5,
  score: 4,
  comment: '',
  created_at: '2026-01-05T10:00:00.000Z',
  ...over,
});

function controller(answer: callsV1.RecordRatingResponse) {
  const { client, requests } = fakeRpcClient<Service, CallsClient>({ recordRating: answer });
  const statuses: number[] = [];
  const reply = { status: (code: number) => (statuses.push(code), reply) } as never;
  return { c: new CsatController(client), requests, statuses, reply };
}

const validate = (body: unknown) => new BodyValidationPipe().transform(body, { type: 'body', metatype: RecordCsatDto, data: undefined });

describe('CsatController (POST /v1/analytics/csat)', () => {
  it('records a rating with the defaults (scale 5, source api) and presents the csat_rating (201)', async () => {
    const { c, requests, statuses, reply } = controller({ rating: rating(), created: true });
    const res = await c.record(who, { call_id: 'call_1', score: 4 }, reply);
    expect(requests.recordRating).toEqual({ account_id: 'acme', call_id: 'call_1', source: 'api', scale: 5, score: 4, comment: '' });
    expect(res).toEqual({ id: 'csat_1', object: 'csat_rating', call_id: 'call_1', score: 4, scale: 5, comment: null, source: 'api', created_at: '2026-01-05T10:00:00.000Z' });
    expect(statuses).toEqual([]);
  });

  it('answers the stored rating with 200 on an idempotent repeat', async () => {
    const { c, requests, statuses, reply } = controller({ rating: rating({ scale: 10, score: 9, comment: 'Great', source: 'web' }), created: false });
    const res = await c.record(who, { call_id: 'call_1', score: 9, scale: 10, comment: 'Great', source: 'web' }, reply);
    expect(requests.recordRating).toMatchObject({ scale: 10, score: 9, comment: 'Great', source: 'web' });
    expect(res).toMatchObject({ score: 9, scale: 10, comment: 'Great', source: 'web' });
    expect(statuses).toEqual([200]);
  });

  it('takes a well-formed body', async () => {
    await expect(validate({ call_id: 'call_1', score: 10, scale: 10, comment: 'ok', source: 'web' })).resolves.toBeDefined();
  });

  it.each([
    ['no call_id', { score: 3 }, 'call_id'],
    ['no score', { call_id: 'call_1' }, 'score'],
    ['score 0', { call_id: 'call_1', score: 0 }, 'score'],
    ['score 11', { call_id: 'call_1', score: 11 }, 'score'],
    ['score "4"', { call_id: 'call_1', score: '4' }, 'score'],
    ['score 3.5', { call_id: 'call_1', score: 3.5 }, 'score'],
    ['scale 7', { call_id: 'call_1', score: 3, scale: 7 }, 'scale'],
    ['source keypad (the agent’s survey only)', { call_id: 'call_1', score: 3, source: 'keypad' }, 'source'],
    ['a comment too long', { call_id: 'call_1', score: 3, comment: 'x'.repeat(1001) }, 'comment'],
    ['an unknown field', { call_id: 'call_1', score: 3, stars: 3 }, 'stars'],
  ])('refuses %s with a problem naming the field', async (_label, body, field) => {
    await expect(validate(body)).rejects.toMatchObject({ errors: [expect.objectContaining({ field })] });
  });

  it('is published in OpenAPI with calls:write, 201 and 200 answers, and no longer planned (501)', async () => {
    const document = await gatewayOpenApiDocument();
    const op = (document.paths['/v1/analytics/csat'] as Record<string, { 'x-permission': string; responses: Record<string, unknown> }>).post;
    expect(op['x-permission']).toBe('calls:write');
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '201', '400', '404', '409']));
    expect(op.responses['501']).toBeUndefined();
    const schemas = document.components?.schemas as Record<string, { properties: Record<string, { example?: unknown }> }>;
    expect(schemas['CsatRatingDto'].properties['id'].example).toMatch(/^csat_/);
  });
});
