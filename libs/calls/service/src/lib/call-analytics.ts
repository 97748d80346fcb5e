import { Injectable } from '@nestjs/common';
import { FieldProblem } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { AnalyticsFilter, BucketUnit, CallAnalyticsRepository, CallCounts, CallOverview } from './call-analytics.repository';

export const BUCKET_UNITS: readonly BucketUnit[] = ['minute', 'hour', 'day', 'week', 'month'];
export const ANALYTICS_DIRECTIONS = ['outbound', 'inbound', 'web'] as const;
/** The most buckets a timeseries answers, unless the caller asks for fewer. */
export const MAX_BUCKETS = 1000;

/** The longest a bucket can be, in ms (a month of 31 days, a day of 25 hours on a change day): buckets ≥ span / this. */
const LONGEST_MS: Record<BucketUnit, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 25 * 3_600_000,
  week: (7 * 24 + 1) * 3_600_000,
  month: (31 * 24 + 1) * 3_600_000,
};

/** An IANA zone name (Area/Location, UTC, Etc/GMT+5): not a POSIX rule or an abbreviation PostgreSQL also reads. */
const IANA_ZONE = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

export interface AnalyticsQuery {
  accountId: string;
  from: string;
  to: string;
  agentId?: string;
  direction?: string;
  projectId?: string;
}

export interface TimeseriesBucket extends CallCounts {
  /** RFC 3339, local time with the zone's offset at the bucket's start. */
  start: string;
}

/** `+HH:MM` / `-HH:MM` (`Z` for UTC) of an offset in seconds. */
export function rfc3339Offset(seconds: number): string {
  if (seconds === 0) return 'Z';
  const abs = Math.abs(seconds);
  const hh = String(Math.floor(abs / 3600)).padStart(2, '0');
  const mm = String(Math.floor((abs % 3600) / 60)).padStart(2, '0');
  return `${seconds < 0 ? '-' : '+'}${hh}:${mm}`;
}

/**
 * Usage and quality of an account's calls (GET /v1/analytics/overview, /timeseries): validates the query, the
 * repository computes it in PostgreSQL.
 */
@Injectable()
export class CallAnalytics {
  constructor(private readonly repository: CallAnalyticsRepository) {}

  async overview(query: AnalyticsQuery): Promise<CallOverview> {
    return this.repository.overview(filterOf(query));
  }

  async timeseries(query: AnalyticsQuery, bucket: string, timezone: string, maxBuckets = MAX_BUCKETS): Promise<TimeseriesBucket[]> {
    const filter = filterOf(query, [
      ...(BUCKET_UNITS.includes(bucket as BucketUnit) ? [] : [{ field: 'bucket', message: `must be one of ${BUCKET_UNITS.join(', ')}` }]),
      ...(IANA_ZONE.test(timezone) ? [] : [{ field: 'timezone', message: 'must be an IANA time zone name (e.g. Europe/Paris, UTC)' }]),
    ]);
    const unit = bucket as BucketUnit;
    const limit = maxBuckets > 0 ? Math.min(maxBuckets, MAX_BUCKETS) : MAX_BUCKETS;
    const tooMany = () => AppError.validation([{ field: 'bucket', message: `gives more than ${limit} buckets over the period; choose a larger bucket or a shorter period` }]);
    // At least this many buckets, whatever the zone: refused before PostgreSQL generates them.
    if ((filter.to.getTime() - filter.from.getTime()) / LONGEST_MS[unit] > limit) throw tooMany();
    let starts;
    try {
      starts = await this.repository.bucketStarts(filter.from, filter.to, unit, timezone, limit + 1);
    } catch (error) {
      if (/time zone .* not recognized/i.test((error as Error).message ?? '')) {
        throw AppError.validation([{ field: 'timezone', message: `is not a time zone this platform knows: ${timezone}` }]);
      }
      throw error;
    }
    if (starts.length > limit) throw tooMany();
    const counts = await this.repository.countsPerBucket(
      filter,
      starts.map((s) => s.start),
    );
    return starts.map((s, i) => ({ start: `${s.local}${rfc3339Offset(s.offsetSeconds)}`, ...counts[i] }));
  }
}

/** RFC 3339 date-time with a four-digit year (a time PostgreSQL's timestamps hold). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** The date part names a day that exists (Date reads 30 February as 2 March). */
function isCalendarDate(value: string): boolean {
  const [y, m, d] = value.slice(0, 10).split('-').map(Number);
  const day = new Date(Date.UTC(y, m - 1, d));
  return day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
}

function filterOf(q: AnalyticsQuery, more: FieldProblem[] = []): AnalyticsFilter {
  const problems: FieldProblem[] = [];
  const time = (field: 'from' | 'to', value: string): Date => {
    const at = new Date(value);
    if (!RFC3339.test(value) || Number.isNaN(at.getTime()) || !isCalendarDate(value)) problems.push({ field, message: 'must be an RFC 3339 date-time' });
    return at;
  };
  const from = time('from', q.from);
  const to = time('to', q.to);
  if (!problems.length && from.getTime() >= to.getTime()) problems.push({ field: 'to', message: 'must be after from' });
  if (q.direction && !(ANALYTICS_DIRECTIONS as readonly string[]).includes(q.direction)) {
    problems.push({ field: 'direction', message: `must be one of ${ANALYTICS_DIRECTIONS.join(', ')}` });
  }
  problems.push(...more);
  if (problems.length) throw AppError.validation(problems);
  return { accountId: q.accountId, from, to, agentId: q.agentId || undefined, direction: q.direction || undefined, projectId: q.projectId || undefined };
}
