import { applyDecorators, Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiQuery, ApiTags } from '@nestjs/swagger';
import { callsV1 } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { CallsClient } from '../calls/calls.client';
import { callListFilter } from '../calls/calls.controller';
import { Operation } from '../http/operation';
import { AnalyticsBucketDto, AnalyticsOverviewDto, AnalyticsTimeseriesDto, BUCKETS } from './analytics.dto';

const DIRECTIONS = ['outbound', 'inbound', 'web'];
const FILTERS = ['from', 'to', 'agent_id', 'direction', 'project_id'];
/** The default period: the last 30 days. */
const DEFAULT_PERIOD_MS = 30 * 86_400_000;
/** RFC 3339 date-time with a four-digit year. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const IANA_ZONE = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;
const ratio = (part: number, whole: number) => (whole ? round(part / whole, 4) : null);
/** An exact decimal from the calls service as a JSON number, to 6 decimals. */
const amount = (s: string) => round(Number(s || 0), 6);

interface Period {
  filter: callsV1.CallAnalyticsFilter;
  from: string;
  to: string;
}

function text(query: Record<string, unknown>, name: string): string {
  return query[name] === undefined ? '' : String(query[name]);
}

function time(query: Record<string, unknown>, name: string): Date | undefined {
  const value = text(query, name);
  if (!value) return undefined;
  const at = new Date(value);
  const [y, m, d] = value.slice(0, 10).split('-').map(Number);
  const day = new Date(Date.UTC(y, m - 1, d));
  if (!RFC3339.test(value) || Number.isNaN(at.getTime()) || day.getUTCMonth() !== m - 1 || day.getUTCDate() !== d) {
    throw new AppError('invalid_request', `${name} must be an RFC 3339 date-time (e.g. 2026-01-31T00:00:00Z).`);
  }
  return at;
}

/** The period (default: the 30 days up to now; one bound given, 30 days from or to it) and the filters. */
export function analyticsPeriod(accountId: string, query: Record<string, unknown>, now = new Date()): Period {
  const givenFrom = time(query, 'from');
  const givenTo = time(query, 'to');
  const to = givenTo ?? (givenFrom ? new Date(givenFrom.getTime() + DEFAULT_PERIOD_MS) : now);
  const from = givenFrom ?? new Date(to.getTime() - DEFAULT_PERIOD_MS);
  if (from.getTime() >= to.getTime()) throw new AppError('invalid_request', 'from must be before to.');
  const direction = text(query, 'direction');
  if (direction && !DIRECTIONS.includes(direction)) throw new AppError('invalid_request', `direction must be one of ${DIRECTIONS.join(', ')}.`);
  const agentId = text(query, 'agent_id');
  if (agentId.length > 100) throw new AppError('invalid_request', 'agent_id is not an agent id.');
  const projectId = callListFilter(query, 'project_id');
  return {
    filter: { account_id: accountId, from: from.toISOString(), to: to.toISOString(), agent_id: agentId, direction, project_id: projectId },
    from: from.toISOString(),
    to: to.toISOString(),
  };
}

/** An IANA zone name this runtime knows (Intl); PostgreSQL's own list decides last. */
function timezoneOf(query: Record<string, unknown>): string {
  const zone = text(query, 'timezone') || 'UTC';
  let known = IANA_ZONE.test(zone);
  try {
    if (known) new Intl.DateTimeFormat('en-US', { timeZone: zone });
  } catch {
    known = false;
  }
  if (!known) throw new AppError('invalid_request', 'timezone must be an IANA time zone name (e.g. Europe/Paris, America/New_York, UTC).');
  return zone;
}

const PeriodQuery = () =>
  applyDecorators(
  ApiQuery({ name: 'from', required: false, schema: { type: 'string', format: 'date-time' }, description: 'Start of the period (inclusive, on the call’s `created_at`). Default: 30 days before `to`.' }),
  ApiQuery({ name: 'to', required: false, schema: { type: 'string', format: 'date-time' }, description: 'End of the period (exclusive). Default: now (or 30 days after `from`).' }),
  ApiQuery({ name: 'agent_id', required: false, schema: { type: 'string' }, description: 'Only this agent’s calls.' }),
  ApiQuery({ name: 'direction', required: false, schema: { type: 'string', enum: DIRECTIONS }, description: 'Only calls of this direction.' }),
  ApiQuery({
    name: 'project_id',
    required: false,
    schema: { type: 'string' },
    description: 'Only this project’s calls (a call belongs to its agent’s project; calls from before projects are the default project’s). A value that is not a project id (`prj_…`) is refused with 400 `invalid_request`.',
  }),
  );

/** Usage and quality of the account's calls, computed by the calls service in PostgreSQL (docs/analytics.md). */
@ApiTags('Analytics')
@Controller('v1/analytics')
export class AnalyticsController {
  constructor(private readonly calls: CallsClient) {}

  @Get('overview')
  @Operation({
    summary: 'Usage and quality overview',
    description: [
      'Figures over the calls created in the period (default: the last 30 days): calls, answered and answer rate, answered minutes,',
      'end reasons, duration average/p50/p95 of answered calls, transfers and transfer rate, satisfaction ratings,',
      'cost (total and per call, by the operator’s price table), per-turn response latency p50/p95, the barge-in rate and post-call success',
      '(calls evaluated against their agent’s `post_call.success`, succeeded, rate).',
      'A bad query value is 400 `invalid_request`; an unknown query parameter is refused.',
    ].join(' '),
    project: 'list', permission: 'analytics:read',
    problems: ['invalid_request', 'validation_error'],
    query: FILTERS,
  })
  @PeriodQuery()
  @ApiOkResponse({ type: AnalyticsOverviewDto })
  async overview(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<AnalyticsOverviewDto> {
    const period = analyticsPeriod(who.accountId, query);
    const res = await this.calls.call('getCallAnalytics', (s, md) => s.getCallAnalytics({ filter: period.filter }, md));
    const a = res.analytics;
    if (!a) throw new Error('the calls service answered without analytics');
    const timed = a.timed > 0;
    return {
      object: 'analytics_overview',
      from: period.from,
      to: period.to,
      agent_id: period.filter.agent_id || null,
      direction: period.filter.direction || null,
      project_id: period.filter.project_id || null,
      calls: a.calls,
      answered: a.answered,
      answer_rate: ratio(a.answered, a.calls),
      minutes: round(a.answered_seconds / 60, 2),
      end_reasons: Object.fromEntries((a.end_reasons ?? []).map((r) => [r.end_reason, r.count])),
      duration: {
        calls: a.timed,
        average_seconds: timed ? round(a.duration_avg_seconds, 3) : null,
        p50_seconds: timed ? round(a.duration_p50_seconds, 3) : null,
        p95_seconds: timed ? round(a.duration_p95_seconds, 3) : null,
      },
      transferred: a.transferred,
      transfer_rate: ratio(a.transferred, a.answered),
      csat: { count: a.csat_count, average: a.csat_count ? round(a.csat_average, 2) : null },
      cost: { currency: a.cost_currency, total: amount(a.cost), average_per_call: a.calls ? round(Number(a.cost || 0) / a.calls, 6) : null },
      response_latency: {
        turns: a.latency_turns,
        p50_ms: a.latency_turns ? round(a.response_latency_p50_ms, 1) : null,
        p95_ms: a.latency_turns ? round(a.response_latency_p95_ms, 1) : null,
      },
      barge_in: { agent_turns: a.agent_turns, count: a.barge_ins, rate: ratio(a.barge_ins, a.agent_turns) },
      success: { evaluated: a.success_evaluated, succeeded: a.successful, rate: ratio(a.successful, a.success_evaluated) },
    };
  }

  @Get('timeseries')
  @Operation({
    summary: 'Bucketed call volume and cost',
    description: [
      'The overview’s count measures per `bucket` (minute, hour, day, week, month; default day) aligned in `timezone` (IANA, default UTC):',
      'every bucket present, zeros included, each starting at a local time given with the zone’s offset.',
      'Day, week (from Monday) and month buckets are local calendar units, so a day is 23 or 25 hours on a daylight-saving change;',
      'the hour a change skips has no bucket and the hour it repeats has two. At most 1000 buckets: more is 422 `validation_error` on `bucket`.',
    ].join(' '),
    project: 'list', permission: 'analytics:read',
    problems: ['invalid_request', 'validation_error'],
    query: [...FILTERS, 'bucket', 'timezone'],
  })
  @PeriodQuery()
  @ApiQuery({ name: 'bucket', required: false, schema: { type: 'string', enum: [...BUCKETS], default: 'day' } })
  @ApiQuery({ name: 'timezone', required: false, schema: { type: 'string', default: 'UTC', example: 'America/New_York' }, description: 'IANA time zone the buckets are aligned in.' })
  @ApiOkResponse({ type: AnalyticsTimeseriesDto })
  async timeseries(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<AnalyticsTimeseriesDto> {
    const period = analyticsPeriod(who.accountId, query);
    const bucket = text(query, 'bucket') || 'day';
    if (!(BUCKETS as readonly string[]).includes(bucket)) throw new AppError('invalid_request', `bucket must be one of ${BUCKETS.join(', ')}.`);
    const timezone = timezoneOf(query);
    const res = await this.calls.call('getCallTimeseries', (s, md) => s.getCallTimeseries({ filter: period.filter, bucket, timezone, max_buckets: 0 }, md));
    return {
      object: 'analytics_timeseries',
      from: period.from,
      to: period.to,
      bucket,
      timezone,
      agent_id: period.filter.agent_id || null,
      direction: period.filter.direction || null,
      project_id: period.filter.project_id || null,
      data: (res.buckets ?? []).map(presentBucket),
    };
  }
}

function presentBucket(b: callsV1.CallTimeseriesBucket): AnalyticsBucketDto {
  return {
    start: b.start,
    calls: b.calls,
    answered: b.answered,
    answer_rate: ratio(b.answered, b.calls),
    minutes: round(b.answered_seconds / 60, 2),
    transferred: b.transferred,
    csat_count: b.csat_count,
    csat_average: b.csat_count ? round(b.csat_average, 2) : null,
    cost: amount(b.cost),
    agent_turns: b.agent_turns,
    barge_ins: b.barge_ins,
    successful: b.successful,
  };
}
