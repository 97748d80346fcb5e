import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { END_REASONS, EndReason } from '@parley/contracts';

/** The calls an analytics query covers: the account's calls created in [from, to), optionally of one agent or direction. */
export interface AnalyticsFilter {
  accountId: string;
  from: Date;
  to: Date;
  agentId?: string;
  direction?: string;
}

/** The count measures, over a period or one bucket of it. */
export interface CallCounts {
  calls: number;
  answered: number;
  /** Sum of the durations (ended_at - answered_at) of answered calls that ended. */
  answeredSeconds: number;
  transferred: number;
  csatCount: number;
  /** Average rating (each brought to 1..5); null without ratings. */
  csatAverage: number | null;
}

export interface CallOverview extends CallCounts {
  /** Ended calls per end reason (reasons no call ended with are left out). */
  endReasons: Partial<Record<EndReason, number>>;
  /** Answered calls that ended: the ones the duration figures are of. */
  timed: number;
  /** Seconds; null when no call is timed. */
  durationAvg: number | null;
  durationP50: number | null;
  durationP95: number | null;
}

export type BucketUnit = 'minute' | 'hour' | 'day' | 'week' | 'month';

/** A bucket's start: the instant, and its local wall time and UTC offset in the zone. */
export interface BucketStart {
  start: Date;
  /** `YYYY-MM-DDTHH:MM:SS`, local time in the zone. */
  local: string;
  offsetSeconds: number;
}

/** A timed call's duration in seconds: answered and ended, never negative. */
const DURATION = `CASE WHEN c.answered_at IS NOT NULL AND c.ended_at IS NOT NULL THEN greatest(date_part('epoch', c.ended_at - c.answered_at), 0) END`;
/** Answered and put through elsewhere: transferred_to stays on a transferred call, end_reason says so once it ended. */
const TRANSFERRED = `c.answered_at IS NOT NULL AND (c.transferred_to IS NOT NULL OR c.end_reason = 'transferred')`;
/** The rating on the 1..5 scale, to two decimals (csatRating, csat.received's `rating`). */
const RATING = `round(CASE WHEN scale = 5 THEN score ELSE 1 + (score - 1) * 4.0 / (scale - 1) END, 2)`;

/**
 * Analytics over the calls table and its ratings, computed in PostgreSQL (one scan of the account's calls in the
 * period, served by the index calls_analytics). Ratings are the call's: a rating counts in the period of its call.
 */
@Injectable()
export class CallAnalyticsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async overview(f: AnalyticsFilter): Promise<CallOverview> {
    const { where, params } = conditions(f);
    const reasons = END_REASONS.map((r, i) => `count(*) FILTER (WHERE c.end_reason = '${r}')::int AS r${i}`).join(',\n        ');
    const [row] = (await this.dataSource.query(
      `${ratings()}
      SELECT count(*)::int AS calls,
        count(c.answered_at)::int AS answered,
        count(*) FILTER (WHERE ${TRANSFERRED})::int AS transferred,
        count(d.s)::int AS timed,
        coalesce(sum(d.s), 0)::float8 AS answered_seconds,
        avg(d.s)::float8 AS duration_avg,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY d.s) AS duration_p50,
        percentile_cont(0.95) WITHIN GROUP (ORDER BY d.s) AS duration_p95,
        coalesce(sum(r.n), 0)::int AS csat_count,
        (sum(r.total) / nullif(sum(r.n), 0))::float8 AS csat_average,
        ${reasons}
      FROM calls c
      CROSS JOIN LATERAL (SELECT ${DURATION} AS s) d
      LEFT JOIN r ON r.call_id = c.id
      WHERE ${where}`,
      params,
    )) as Record<string, number | null>[];
    const endReasons: Partial<Record<EndReason, number>> = {};
    END_REASONS.forEach((reason, i) => {
      const n = Number(row[`r${i}`]);
      if (n) endReasons[reason] = n;
    });
    return {
      calls: Number(row['calls']),
      answered: Number(row['answered']),
      answeredSeconds: Number(row['answered_seconds']),
      transferred: Number(row['transferred']),
      csatCount: Number(row['csat_count']),
      csatAverage: nullable(row['csat_average']),
      endReasons,
      timed: Number(row['timed']),
      durationAvg: nullable(row['duration_avg']),
      durationP50: nullable(row['duration_p50']),
      durationP95: nullable(row['duration_p95']),
    };
  }

  /**
   * The starts of the buckets from the one holding `from` to the one holding the instant before `to`, at most
   * `limit`. Day, week (ISO, from Monday) and month buckets are local calendar units: generated over the zone's
   * local timestamps and brought back to instants with AT TIME ZONE, so a day is 23 or 25 hours on a change day.
   * Minute and hour buckets are generated over instants from the local start of the first one, so the hour a
   * change skips has no bucket and the hour it repeats has two (with their two offsets).
   */
  async bucketStarts(from: Date, to: Date, unit: BucketUnit, timezone: string, limit: number): Promise<BucketStart[]> {
    const step = `1 ${unit}`;
    const series =
      unit === 'minute' || unit === 'hour'
        ? `generate_series($1::timestamptz - (($1::timestamptz AT TIME ZONE $3) - date_trunc($4, $1::timestamptz AT TIME ZONE $3)), $2::timestamptz, $5::interval) s`
        : `generate_series(date_trunc($4, $1::timestamptz AT TIME ZONE $3), $2::timestamptz AT TIME ZONE $3, $5::interval) g CROSS JOIN LATERAL (SELECT g AT TIME ZONE $3 AS s) x`;
    const rows = (await this.dataSource.query(
      `SELECT s AS start, to_char(s AT TIME ZONE $3, 'YYYY-MM-DD"T"HH24:MI:SS') AS local,
              date_part('epoch', (s AT TIME ZONE $3) - (s AT TIME ZONE 'UTC'))::int AS offset_seconds
         FROM ${series}
        WHERE s < $2::timestamptz
        ORDER BY s
        LIMIT $6`,
      [from.toISOString(), to.toISOString(), timezone, unit, step, limit],
    )) as { start: Date; local: string; offset_seconds: number }[];
    return rows.map((r) => ({ start: new Date(r.start), local: r.local, offsetSeconds: Number(r.offset_seconds) }));
  }

  /** The count measures per bucket (`starts` ascending, the first at or before `from`), every bucket present. */
  async countsPerBucket(f: AnalyticsFilter, starts: Date[]): Promise<CallCounts[]> {
    const { where, params } = conditions(f);
    params.push(starts.map((s) => s.toISOString()));
    const rows = (await this.dataSource.query(
      `${ratings()}
      SELECT width_bucket(c.created_at, $${params.length}::timestamptz[]) AS i,
        count(*)::int AS calls,
        count(c.answered_at)::int AS answered,
        count(*) FILTER (WHERE ${TRANSFERRED})::int AS transferred,
        coalesce(sum(d.s), 0)::float8 AS answered_seconds,
        coalesce(sum(r.n), 0)::int AS csat_count,
        (sum(r.total) / nullif(sum(r.n), 0))::float8 AS csat_average
      FROM calls c
      CROSS JOIN LATERAL (SELECT ${DURATION} AS s) d
      LEFT JOIN r ON r.call_id = c.id
      WHERE ${where}
      GROUP BY 1`,
      params,
    )) as Record<string, number | null>[];
    const counts: CallCounts[] = starts.map(() => ({ calls: 0, answered: 0, answeredSeconds: 0, transferred: 0, csatCount: 0, csatAverage: null }));
    for (const row of rows) {
      const i = Number(row['i']) - 1;
      if (i < 0 || i >= counts.length) continue;
      counts[i] = {
        calls: Number(row['calls']),
        answered: Number(row['answered']),
        answeredSeconds: Number(row['answered_seconds']),
        transferred: Number(row['transferred']),
        csatCount: Number(row['csat_count']),
        csatAverage: nullable(row['csat_average']),
      };
    }
    return counts;
  }
}

const nullable = (v: number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

/** The WHERE clause over `calls c` and its parameters ($1 account, $2 from, $3 to, then the filters given). */
function conditions(f: AnalyticsFilter): { where: string; params: unknown[] } {
  const params: unknown[] = [f.accountId, f.from.toISOString(), f.to.toISOString()];
  const where = ['c.account_id = $1', 'c.created_at >= $2::timestamptz', 'c.created_at < $3::timestamptz'];
  if (f.agentId) where.push(`c.agent_id = $${params.push(f.agentId)}`);
  if (f.direction) where.push(`c.direction = $${params.push(f.direction)}`);
  return { where: where.join(' AND '), params };
}

/**
 * The ratings of the account's calls, per call (count, sum on the 1..5 scale). A rating is recorded during or after
 * its call, so ratings from a day before `from` on are enough to cover the period's calls (clocks may differ a little).
 */
function ratings(): string {
  return `WITH r AS (
        SELECT call_id, count(*)::int AS n, sum(${RATING}) AS total
          FROM call_ratings
         WHERE account_id = $1 AND created_at >= $2::timestamptz - interval '1 day'
         GROUP BY call_id)`;
}
