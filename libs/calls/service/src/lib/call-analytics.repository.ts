import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { END_REASONS, EndReason } from '@parley/contracts';
import { defaultProjectId } from '@parley/persistence';
import { decimal } from './price-table';

/** The calls an analytics query covers: the account's calls created in [from, to), optionally of one agent, direction or project. */
export interface AnalyticsFilter {
  accountId: string;
  from: Date;
  to: Date;
  agentId?: string;
  direction?: string;
  /** Calls stored before projects (project_id null) are the account's default project's. */
  projectId?: string;
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
  /** Sum of the calls' costs: an exact decimal string (numeric's text, trailing zeros removed). */
  cost: string;
  /** Agent turns stored, and of them the ones the caller cut off. */
  agentTurns: number;
  bargeIns: number;
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
  /** Agent turns with a measured response latency, and the latencies' percentiles in ms (null without). */
  latencyTurns: number;
  latencyP50: number | null;
  latencyP95: number | null;
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
const RATING = `round(CASE WHEN c.scale = 5 THEN c.score ELSE 1 + (c.score - 1) * 4.0 / (c.scale - 1) END, 2)`;
/** Memory for the percentiles' sort (the answered calls' durations of the period), so it does not spill to disk. */
const PERCENTILE_WORK_MEM = '64MB';

interface CountsRow {
  calls: number;
  answered: number;
  transferred: number;
  timed: number;
  answered_seconds: number;
  agent_turns: number;
  barge_ins: number;
}

/**
 * Analytics over the calls table and its ratings, computed in PostgreSQL. Each figure comes from one scan of the
 * period's rows: the counts (a parallel aggregate over calls_analytics, grouped by end reason or bucket), the
 * durations' percentiles (an ordered-set aggregate, single process: its own statement), the ratings (a range of
 * call_ratings_analytics: a rating carries its call's creation time, agent and direction, so it counts in its
 * call's period without a join). The statements run at once on separate connections.
 */
@Injectable()
export class CallAnalyticsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async overview(f: AnalyticsFilter): Promise<CallOverview> {
    const calls = conditions(f);
    const [byReason, durations, ratings, latency] = await Promise.all([
      this.statement(
        `SELECT c.end_reason,
                count(*)::int AS calls,
                count(c.answered_at)::int AS answered,
                count(*) FILTER (WHERE ${TRANSFERRED})::int AS transferred,
                count(${DURATION})::int AS timed,
                coalesce(sum(${DURATION}), 0)::float8 AS answered_seconds,
                coalesce(sum(c.agent_turns), 0)::int AS agent_turns,
                coalesce(sum(c.barge_ins), 0)::int AS barge_ins,
                (sum(sum(c.cost)) OVER ())::text AS cost
           FROM calls c
          WHERE ${calls.where}
          GROUP BY 1`,
        calls.params,
      ) as Promise<(CountsRow & { end_reason: string | null; cost: string })[]>,
      this.statement(
        `SELECT avg(s)::float8 AS avg, percentile_cont(0.5) WITHIN GROUP (ORDER BY s) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY s) AS p95
           FROM (SELECT ${DURATION} AS s FROM calls c WHERE ${calls.where} AND c.answered_at IS NOT NULL AND c.ended_at IS NOT NULL) d`,
        calls.params,
        PERCENTILE_WORK_MEM,
      ) as Promise<{ avg: number | null; p50: number | null; p95: number | null }[]>,
      this.ratings(f, null),
      this.latencyPercentiles(f),
    ]);
    const endReasons: Partial<Record<EndReason, number>> = {};
    const total = { calls: 0, answered: 0, transferred: 0, timed: 0, answeredSeconds: 0, agentTurns: 0, bargeIns: 0, cost: decimal(byReason[0]?.cost ?? '0') };
    for (const row of byReason) {
      total.calls += Number(row.calls);
      total.answered += Number(row.answered);
      total.transferred += Number(row.transferred);
      total.timed += Number(row.timed);
      total.answeredSeconds += Number(row.answered_seconds);
      total.agentTurns += Number(row.agent_turns);
      total.bargeIns += Number(row.barge_ins);
      if (row.end_reason && (END_REASONS as readonly string[]).includes(row.end_reason)) endReasons[row.end_reason as EndReason] = Number(row.calls);
    }
    const [d] = durations;
    const csat = ratings.get(0) ?? { count: 0, average: null };
    return {
      ...total,
      csatCount: csat.count,
      csatAverage: csat.average,
      endReasons,
      durationAvg: nullable(d?.avg),
      durationP50: nullable(d?.p50),
      durationP95: nullable(d?.p95),
      ...latency,
    };
  }

  /**
   * Percentiles (continuous, as percentile_cont) of the agent turns' response latencies of the filter's calls (a
   * range of call_turn_latencies: each carries its call's creation time, agent, direction and project). The
   * latencies are whole milliseconds, so they are counted per value (a parallel hash aggregate) rather than sorted; each percentile is then read off the cumulative counts: rank h = p × (n - 1), the
   * values at ranks floor(h) and ceil(h), interpolated. Same result as percentile_cont over every latency.
   */
  private async latencyPercentiles(f: AnalyticsFilter): Promise<{ latencyTurns: number; latencyP50: number | null; latencyP95: number | null }> {
    const calls = conditions(f, 'call_created_at', true);
    const rows = (await this.statement(
      `WITH l AS (SELECT c.latency_ms AS v, count(*) AS n FROM call_turn_latencies c WHERE ${calls.where} GROUP BY 1),
            cum AS (SELECT v, sum(n) OVER (ORDER BY v) AS upto, sum(n) OVER () AS total FROM l),
            q AS (SELECT p, t.total, p * (t.total - 1) AS h FROM (VALUES (0.5), (0.95)) ps(p), (SELECT max(total) AS total FROM cum) t WHERE t.total > 0)
       SELECT q.p::float8 AS p, q.total::int AS total, q.h::float8 AS h,
              (SELECT v FROM cum WHERE cum.upto > floor(q.h) ORDER BY v LIMIT 1) AS lo,
              (SELECT v FROM cum WHERE cum.upto > ceil(q.h) ORDER BY v LIMIT 1) AS hi
         FROM q`,
      calls.params,
    )) as { p: number; total: number; h: number; lo: number; hi: number }[];
    const at = (p: number): number | null => {
      const r = rows.find((x) => Number(x.p) === p);
      if (!r) return null;
      const h = Number(r.h);
      return Number(r.lo) + (h - Math.floor(h)) * (Number(r.hi) - Number(r.lo));
    };
    return { latencyTurns: Number(rows[0]?.total ?? 0), latencyP50: at(0.5), latencyP95: at(0.95) };
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
    const calls = conditions(f);
    const bounds = starts.map((s) => s.toISOString());
    const [rows, ratings] = await Promise.all([
      this.statement(
        `SELECT width_bucket(c.created_at, $${calls.params.length + 1}::timestamptz[]) AS i,
                count(*)::int AS calls,
                count(c.answered_at)::int AS answered,
                count(*) FILTER (WHERE ${TRANSFERRED})::int AS transferred,
                coalesce(sum(${DURATION}), 0)::float8 AS answered_seconds,
                coalesce(sum(c.agent_turns), 0)::int AS agent_turns,
                coalesce(sum(c.barge_ins), 0)::int AS barge_ins,
                sum(c.cost)::text AS cost
           FROM calls c
          WHERE ${calls.where}
          GROUP BY 1`,
        [...calls.params, bounds],
      ) as Promise<(CountsRow & { i: number; cost: string })[]>,
      this.ratings(f, bounds),
    ]);
    const counts: CallCounts[] = starts.map((_, i) => {
      const csat = ratings.get(i + 1);
      return {
        calls: 0,
        answered: 0,
        answeredSeconds: 0,
        transferred: 0,
        csatCount: csat?.count ?? 0,
        csatAverage: csat?.average ?? null,
        cost: '0',
        agentTurns: 0,
        bargeIns: 0,
      };
    });
    for (const row of rows) {
      const bucket = counts[Number(row.i) - 1];
      if (!bucket) continue;
      Object.assign(bucket, {
        calls: Number(row.calls),
        answered: Number(row.answered),
        answeredSeconds: Number(row.answered_seconds),
        transferred: Number(row.transferred),
        cost: decimal(row.cost ?? '0'),
        agentTurns: Number(row.agent_turns),
        bargeIns: Number(row.barge_ins),
      });
    }
    return counts;
  }

  /**
   * Runs one analytics statement in a transaction of its own, without JIT compilation (it costs tens of
   * milliseconds on each of these statements and gains nothing on a scan this simple), with `workMem` if given.
   */
  private statement<T>(sql: string, params: unknown[], workMem?: string): Promise<T> {
    return this.dataSource.transaction(async (m) => {
      await m.query(`SET LOCAL jit = off`);
      if (workMem) await m.query(`SET LOCAL work_mem = '${workMem}'`);
      return (await m.query(sql, params)) as T;
    });
  }

  /** The ratings of the filter's calls: count and average on 1..5, per bucket (1-based; `bounds` null: all in 0). */
  private async ratings(f: AnalyticsFilter, bounds: string[] | null): Promise<Map<number, { count: number; average: number | null }>> {
    const { where, params } = conditions(f, 'call_created_at');
    const bucket = bounds ? `width_bucket(c.call_created_at, $${params.push(bounds)}::timestamptz[])` : '0';
    const rows = (await this.dataSource.query(
      `SELECT ${bucket} AS i, count(*)::int AS n, avg(${RATING})::float8 AS average FROM call_ratings c WHERE ${where} GROUP BY 1`,
      params,
    )) as { i: number; n: number; average: number | null }[];
    return new Map(rows.map((r) => [Number(r.i), { count: Number(r.n), average: nullable(r.average) }]));
  }
}

const nullable = (v: number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * The WHERE clause over `c` and its parameters ($1 account, $2 from, $3 to, then the filters given). Over a table
 * without `project_id` (the ratings), a project filter looks up each row's call.
 */
function conditions(f: AnalyticsFilter, created = 'created_at', ownProject = created === 'created_at'): { where: string; params: unknown[] } {
  const params: unknown[] = [f.accountId, f.from.toISOString(), f.to.toISOString()];
  const where = ['c.account_id = $1', `c.${created} >= $2::timestamptz`, `c.${created} < $3::timestamptz`];
  if (f.agentId) where.push(`c.agent_id = $${params.push(f.agentId)}`);
  if (f.direction) where.push(`c.direction = $${params.push(f.direction)}`);
  if (f.projectId) {
    const project = `coalesce(%.project_id, $${params.push(defaultProjectId(f.accountId))}) = $${params.push(f.projectId)}`;
    where.push(ownProject ? project.replace('%', 'c') : `EXISTS (SELECT 1 FROM calls k WHERE k.id = c.call_id AND ${project.replace('%', 'k')})`);
  }
  return { where: where.join(' AND '), params };
}
