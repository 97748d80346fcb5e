import 'reflect-metadata';
import { callsV1 } from '@parley/contracts';
import { Principal } from '../auth/api-keys.repository';
import { CallsClient } from '../calls/calls.client';
import { QUERY_KEY } from '../http/operation';
import { fakeRpcClient } from '../testing/fake-rpc-client';
import { gatewayOpenApiDocument } from '../testing/gateway-openapi';
import { AnalyticsController, analyticsPeriod } from './analytics.controller';

type Service = callsV1.CallsServiceClient;

const who = { accountId: 'acme' } as Principal;

const analytics = (over: Partial<callsV1.CallAnalytics> = {}): callsV1.CallAnalytics => ({
  calls: 7,
  answered: 5,
  answered_seconds: 510,
  transferred: 1,
  end_reasons: [
    { end_reason: 'completed', count: 2 },
    { end_reason: 'no_answer', count: 1 },
  ],
  timed: 4,
  duration_avg_seconds: 127.5,
  duration_p50_seconds: 90,
  duration_p95_seconds: 272.99999999,
  csat_count: 3,
  csat_average: 4.223333,
  cost: '1.2345678901',
  cost_currency: 'EUR',
  latency_turns: 40,
  response_latency_p50_ms: 812.25,
  response_latency_p95_ms: 1690.3333,
  agent_turns: 52,
  barge_ins: 5,
  success_evaluated: 3,
  successful: 2,
  ...over,
});

function controller(answers: Partial<Record<keyof Service, unknown>>) {
  const { client, requests } = fakeRpcClient<Service, CallsClient>(answers as never);
  return { c: new AnalyticsController(client), requests };
}

describe('AnalyticsController', () => {
  it('overview: asks the calls service for the last 30 days by default and presents rates, minutes, durations, CSAT, cost, latency, barge-ins and success', async () => {
    const { c, requests } = controller({ getCallAnalytics: { analytics: analytics() } });
    const before = Date.now();
    const res = await c.overview(who, {});
    const filter = (requests.getCallAnalytics as callsV1.GetCallAnalyticsRequest).filter as callsV1.CallAnalyticsFilter;
    expect(filter).toMatchObject({ account_id: 'acme', agent_id: '', direction: '', project_id: '' });
    expect(Date.parse(filter.to) - Date.parse(filter.from)).toBe(30 * 86_400_000);
    expect(Date.parse(filter.to)).toBeGreaterThanOrEqual(before - 1);
    expect(res).toEqual({
      object: 'analytics_overview',
      from: filter.from,
      to: filter.to,
      agent_id: null,
      direction: null,
      project_id: null,
      calls: 7,
      answered: 5,
      answer_rate: 0.7143,
      minutes: 8.5,
      end_reasons: { completed: 2, no_answer: 1 },
      duration: { calls: 4, average_seconds: 127.5, p50_seconds: 90, p95_seconds: 273 },
      transferred: 1,
      transfer_rate: 0.2,
      csat: { count: 3, average: 4.22 },
      cost: { currency: 'EUR', total: 1.234568, average_per_call: 0.176367 },
      response_latency: { turns: 40, p50_ms: 812.3, p95_ms: 1690.3 },
      barge_in: { agent_turns: 52, count: 5, rate: 0.0962 },
      success: { evaluated: 3, succeeded: 2, rate: 0.6667 },
    });
  });

  it('overview: null rates and figures when there is nothing to compute them from', async () => {
    const none = analytics({
      calls: 0,
      answered: 0,
      answered_seconds: 0,
      transferred: 0,
      end_reasons: [],
      timed: 0,
      duration_avg_seconds: 0,
      duration_p50_seconds: 0,
      duration_p95_seconds: 0,
      csat_count: 0,
      csat_average: 0,
      cost: '0',
      latency_turns: 0,
      response_latency_p50_ms: 0,
      response_latency_p95_ms: 0,
      agent_turns: 0,
      barge_ins: 0,
      success_evaluated: 0,
      successful: 0,
    });
    const { c } = controller({ getCallAnalytics: { analytics: none } });
    expect(await c.overview(who, { from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z' })).toMatchObject({
      answer_rate: null,
      transfer_rate: null,
      minutes: 0,
      end_reasons: {},
      duration: { calls: 0, average_seconds: null, p50_seconds: null, p95_seconds: null },
      csat: { count: 0, average: null },
      cost: { currency: 'EUR', total: 0, average_per_call: null },
      response_latency: { turns: 0, p50_ms: null, p95_ms: null },
      barge_in: { agent_turns: 0, count: 0, rate: null },
      success: { evaluated: 0, succeeded: 0, rate: null },
    });
  });

  it('passes the period and filters given; one bound alone gives 30 days from or to it', async () => {
    const { c, requests } = controller({ getCallAnalytics: { analytics: analytics() } });
    const project = 'prj_0123456789abcdefghijkl';
    const res = await c.overview(who, { from: '2026-01-01T00:00:00+01:00', to: '2026-01-08T00:00:00Z', agent_id: 'agt_1', direction: 'inbound', project_id: project });
    expect(requests.getCallAnalytics).toEqual({
      filter: { account_id: 'acme', from: '2025-12-31T23:00:00.000Z', to: '2026-01-08T00:00:00.000Z', agent_id: 'agt_1', direction: 'inbound', project_id: project },
    });
    expect(res).toMatchObject({ agent_id: 'agt_1', direction: 'inbound', project_id: project, from: '2025-12-31T23:00:00.000Z' });
    expect(analyticsPeriod('acme', { from: '2026-01-01T00:00:00Z' })).toMatchObject({ to: '2026-01-31T00:00:00.000Z' });
    expect(analyticsPeriod('acme', { to: '2026-01-31T00:00:00Z' })).toMatchObject({ from: '2026-01-01T00:00:00.000Z' });
  });

  it.each([
    ['from not a time', { from: 'last week' }, 'from'],
    ['a date that does not exist', { to: '2026-02-30T00:00:00Z' }, 'to'],
    ['from after to', { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'from must be before to'],
    ['an unknown direction', { direction: 'sideways' }, 'direction'],
    ['a project filter that is not a project id', { project_id: 'sales' }, 'project_id'],
  ])('refuses %s with 400 invalid_request', async (_label, query, words) => {
    const { c, requests } = controller({ getCallAnalytics: { analytics: analytics() } });
    await expect(c.overview(who, query)).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining(words) });
    await expect(c.timeseries(who, query)).rejects.toMatchObject({ code: 'invalid_request' });
    expect(requests.getCallAnalytics).toBeUndefined();
  });

  it('timeseries: asks for the bucket and zone (default day, UTC) and presents every bucket with its start as given', async () => {
    const bucket = (start: string, calls: number, answered: number, seconds: number, csat = 0): callsV1.CallTimeseriesBucket => ({
      start,
      calls,
      answered,
      answered_seconds: seconds,
      transferred: 0,
      csat_count: csat,
      csat_average: csat ? 3.333333 : 0,
      cost: calls ? '0.0300000000' : '0',
      agent_turns: calls * 4,
      barge_ins: calls,
      successful: answered,
    });
    const { c, requests } = controller({
      getCallTimeseries: { buckets: [bucket('2026-03-08T00:00:00-05:00', 3, 2, 90, 3), bucket('2026-03-09T00:00:00-04:00', 0, 0, 0)] },
    });
    const res = await c.timeseries(who, { from: '2026-03-08T05:00:00Z', to: '2026-03-10T04:00:00Z', bucket: 'day', timezone: 'America/New_York' });
    expect(requests.getCallTimeseries).toMatchObject({ bucket: 'day', timezone: 'America/New_York', filter: { account_id: 'acme' } });
    expect(res).toMatchObject({ object: 'analytics_timeseries', bucket: 'day', timezone: 'America/New_York' });
    expect(res.data).toEqual([
      { start: '2026-03-08T00:00:00-05:00', calls: 3, answered: 2, answer_rate: 0.6667, minutes: 1.5, transferred: 0, csat_count: 3, csat_average: 3.33, cost: 0.03, agent_turns: 12, barge_ins: 3, successful: 2 },
      { start: '2026-03-09T00:00:00-04:00', calls: 0, answered: 0, answer_rate: null, minutes: 0, transferred: 0, csat_count: 0, csat_average: null, cost: 0, agent_turns: 0, barge_ins: 0, successful: 0 },
    ]);
    await c.timeseries(who, {});
    expect(requests.getCallTimeseries).toMatchObject({ bucket: 'day', timezone: 'UTC' });
  });

  it.each([
    ['an unknown bucket', { bucket: 'fortnight' }, 'bucket'],
    ['an unknown zone', { timezone: 'Mars/Olympus' }, 'timezone'],
    ['a POSIX rule', { timezone: 'EST5EDT,M3.2.0,M11.1.0' }, 'timezone'],
  ])('timeseries refuses %s with 400 invalid_request', async (_label, query, words) => {
    const { c } = controller({ getCallTimeseries: { buckets: [] } });
    await expect(c.timeseries(who, query)).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining(words) });
  });

  it('accepts only its own query parameters (project_id among them): QueryGuard refuses any other', () => {
    expect(Reflect.getMetadata(QUERY_KEY, AnalyticsController.prototype.overview)).toEqual(['from', 'to', 'agent_id', 'direction', 'project_id']);
    expect(Reflect.getMetadata(QUERY_KEY, AnalyticsController.prototype.timeseries)).toEqual(['from', 'to', 'agent_id', 'direction', 'project_id', 'bucket', 'timezone']);
  });

  it('is published in OpenAPI with analytics:read and its answers, and no longer planned (501)', async () => {
    const document = await gatewayOpenApiDocument();
    type Op = { 'x-permission': string; responses: Record<string, unknown>; parameters: { name: string }[] };
    for (const path of ['/v1/analytics/overview', '/v1/analytics/timeseries']) {
      const op = (document.paths[path] as Record<string, Op>).get;
      expect(op['x-permission']).toBe('analytics:read');
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '422']));
      expect(op.responses['501']).toBeUndefined();
      expect(op.parameters.map((p) => p.name)).toContain('project_id');
    }
    const schemas = document.components?.schemas as Record<string, { properties: Record<string, unknown> }>;
    expect(Object.keys(schemas['AnalyticsOverviewDto'].properties)).toEqual(expect.arrayContaining(['cost', 'response_latency', 'barge_in', 'success']));
    expect(Object.keys(schemas['AnalyticsBucketDto'].properties)).toEqual([
      'start',
      'calls',
      'answered',
      'answer_rate',
      'minutes',
      'transferred',
      'csat_count',
      'csat_average',
      'cost',
      'agent_turns',
      'barge_ins',
      'successful',
    ]);
    expect(Object.keys(schemas['CallDto'].properties)).toEqual(expect.arrayContaining(['usage', 'cost']));
  });
});
