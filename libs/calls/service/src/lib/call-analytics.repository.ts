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
  /** Calls with a post-call success verdict (successful not null), and of them the successful ones. */
  successEvaluated: number;
  successful: number;
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

/** A timed call's duration in whole ms: answered and ended, never negative (timestamps are to the ms). */
const DURATION_MS = `CASE WHEN c.answered_at IS NOT NULL AND c.ended_at IS NOT NULL THEN (greatest(extract(epoch FROM c.ended_at - c.answered_at), 0) * 1000)::bigint END`;
/** A duration's histogram bin, in seconds: whole seconds (rounded) up to an hour, whole minutes beyond. */
const DURATION_BIN = `(CASE WHEN ${DURATION_MS} < 3600000 THEN round(${DURATION_MS} / 1000.0) ELSE round(${DURATION_MS} / 60000.0) * 60 END)::int`;
/** A response latency's histogram bin, in ms: the whole ms it is up to 10 s, then 100 ms steps (rounded). */
const LATENCY_BIN = `(CASE WHEN c.latency_ms < 10000 THEN c.latency_ms ELSE round(c.latency_ms / 100.0) * 100 END)::int`;
/** Answered and put through elsewhere: transferred_to stays on a transferred call, end_reason says so once it ended. */
const TRANSFERRED = `c.answered_at IS NOT NULL AND (c.transferred_to IS NOT NULL OR c.end_reason = 'transferred')`;
/** The rating on the 1..5 scale, to two decimals (csatRating, csat.received's `rating`). */
const RATING = `round(CASE WHEN c.scale = 5 THEN c.score ELSE 1 + (c.score - 1) * 4.0 / (c.scale - 1) END, 2)`;

/** The sums the aggregates keep, in their columns' order and types: of calls `c` (grouped), and of ratings `c`. */
const SUMS = ['calls', 'answered', 'transferred', 'timed', 'duration_ms', 'cost', 'agent_turns', 'barge_ins', 'csat_count', 'csat_sum', 'evaluated', 'succeeded'] as const;
const CALL_SUMS = named([
  'count(*)::int',
  'count(c.answered_at)::int',
  `(count(*) FILTER (WHERE ${TRANSFERRED}))::int`,
  `count(${DURATION_MS})::int`,
  `coalesce(sum(${DURATION_MS}), 0)::bigint`,
  'coalesce(sum(c.cost), 0)::numeric',
  'coalesce(sum(c.agent_turns), 0)::bigint',
  'coalesce(sum(c.barge_ins), 0)::bigint',
  '0::int',
  '0::numeric',
  'count(c.successful)::int',
  '(count(*) FILTER (WHERE c.successful))::int',
]);
const RATING_SUMS = named([
  '0::int',
  '0::int',
  '0::int',
  '0::int',
  '0::bigint',
  '0::numeric',
  '0::bigint',
  '0::bigint',
  'count(*)::int',
  `coalesce(sum(${RATING}), 0)::numeric`,
  '0::int',
  '0::int',
]);
function named(values: string[]): string {
  return values.map((v, i) => `${v} AS ${SUMS[i]}`).join(', ');
}
/** The sums of SUMS over rows `x` (grouped), named as the columns. */
const BIG_SUMS: readonly string[] = ['duration_ms', 'agent_turns', 'barge_ins'];
const SUM_OF_SUMS = SUMS.map((col) => `sum(x.${col})::${col === 'cost' || col === 'csat_sum' ? 'numeric' : BIG_SUMS.includes(col) ? 'bigint' : 'int'} AS ${col}`).join(', ');

/** The grains the aggregates are kept at: 15-minute slots (the timeseries) and UTC days (the overview). */
interface Grain {
  ms: number;
  interval: string;
  /** The table of dirty marks and its time column. */
  marks: string;
  at: string;
}
const SLOT: Grain = { ms: 15 * 60_000, interval: '15 minutes', marks: 'call_analytics_dirty_slots', at: 'slot' };
const DAY: Grain = { ms: 86_400_000, interval: '1 day', marks: 'call_analytics_dirty_days', at: 'day' };
/** The slots and days refreshed per transaction (a day of a busy account is a few hundred thousand rows). */
const REFRESH_SLOTS = 500;
const REFRESH_DAYS = 2;
/** One refresher at a time across the service's replicas (pg_try_advisory_xact_lock's key). */
const REFRESH_LOCK = 7_265_110_022;

/** What one refresh transaction did; null when another replica's refresher held the lock. */
export interface RefreshBatch {
  slots: number;
  days: number;
  /** There may be more to do now (a batch came back full). */
  more: boolean;
}

interface CountsRow {
  calls: number;
  answered: number;
  transferred: number;
  timed: number;
  duration_ms: string;
  agent_turns: string;
  barge_ins: string;
  evaluated: number;
  succeeded: number;
}

/** A statement's parameters, added as its text is built. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    return `$${this.values.push(value)}`;
  }
}

/** The columns the statements read, per table read from rows (so an index-only scan can serve them where it can). */
const COLUMNS: Record<string, string> = {
  calls: 'c.account_id, c.created_at, c.agent_id, c.direction, c.project_id, c.answered_at, c.ended_at, c.end_reason, c.transferred_to, c.cost, c.agent_turns, c.barge_ins, c.successful',
  call_ratings: 'c.account_id, c.call_created_at, c.call_id, c.agent_id, c.direction, c.scale, c.score',
  call_turn_latencies: 'c.account_id, c.call_created_at, c.agent_id, c.direction, c.project_id, c.latency_ms',
};

/**
 * `table`'s rows (as c) of `account` whose `column` is in [lo, hi), expressions of the outer row: an index range scan
 * per outer row. LATERAL with OFFSET 0 keeps the planner from flattening it into a join it may hash over the whole
 * table. `withProject`: each rating's call's project as project_id (ratings carry none).
 */
function range(table: string, column: string, account: string, lo: string, hi: string, withProject = false): string {
  const project = withProject ? ', k.project_id' : '';
  const join = withProject ? ' JOIN calls k ON k.id = c.call_id' : '';
  return `LATERAL (SELECT ${COLUMNS[table]}${project} FROM ${table} c${join} WHERE c.account_id = ${account} AND c.${column} >= ${lo} AND c.${column} < ${hi} OFFSET 0) c`;
}

/**
 * Analytics over the calls, their ratings and turn latencies, computed in PostgreSQL from pre-aggregated figures where
 * they are exact and from the rows elsewhere (docs/analytics.md, Indexes and speed). The overview reads the figures of
 * the whole UTC days of the period that are not dirty, the timeseries those of the whole 15-minute slots; the period's
 * partial days or slots at its edges and the dirty ones are read from the rows (index range scans). Each statement
 * reads the dirty marks in its own snapshot, so its answer is that of the rows it sees. The refresher (refresh)
 * recomputes the dirty slots and days.
 */
@Injectable()
export class CallAnalyticsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async overview(f: AnalyticsFilter): Promise<CallOverview> {
    const counts = new Params();
    const source = covered(counts, f, DAY);
    const [byReason, durations, latencies] = await Promise.all([
      this.statement(
        `WITH ${source.ctes},
              x AS (SELECT a.end_reason, ${SUMS.map((c) => `a.${c}`).join(', ')} FROM call_analytics_days a WHERE ${source.aggregated('a')} AND ${dims(counts, f, 'a')}
                    UNION ALL
                    SELECT c.end_reason, ${CALL_SUMS} FROM ${source.rows('calls', 'created_at')} WHERE ${dims(counts, f, 'c')} GROUP BY c.end_reason
                    UNION ALL
                    SELECT NULL, ${RATING_SUMS} FROM ${source.rows('call_ratings', 'call_created_at')} WHERE ${dims(counts, f, 'c', 'rating')})
         SELECT x.end_reason, ${SUM_OF_SUMS},
                (sum(sum(x.cost)) OVER ())::text AS total_cost, (sum(sum(x.csat_count)) OVER ())::int AS total_csat,
                (sum(sum(x.csat_sum)) OVER () / nullif(sum(sum(x.csat_count)) OVER (), 0))::float8 AS csat_average
           FROM x GROUP BY x.end_reason`,
        counts.values,
      ) as Promise<(CountsRow & { end_reason: string | null; total_cost: string; total_csat: number; csat_average: number | null })[]>,
      this.percentiles(f, 'call_analytics_day_durations', 'seconds', (p, source) =>
        `SELECT ${DURATION_BIN} AS v, count(*) AS n FROM ${source.rows('calls', 'created_at')} WHERE ${dims(p, f, 'c')} AND c.answered_at IS NOT NULL AND c.ended_at IS NOT NULL GROUP BY 1`,
      ),
      this.percentiles(f, 'call_analytics_day_latencies', 'ms', (p, source) =>
        `SELECT ${LATENCY_BIN} AS v, count(*) AS n FROM ${source.rows('call_turn_latencies', 'call_created_at')} WHERE ${dims(p, f, 'c')} GROUP BY 1`,
      ),
    ]);
    const endReasons: Partial<Record<EndReason, number>> = {};
    const total = {
      calls: 0,
      answered: 0,
      transferred: 0,
      timed: 0,
      answeredSeconds: 0,
      agentTurns: 0,
      bargeIns: 0,
      successEvaluated: 0,
      successful: 0,
      cost: decimal(byReason[0]?.total_cost ?? '0'),
    };
    let durationMs = 0;
    for (const row of byReason) {
      total.calls += Number(row.calls);
      total.answered += Number(row.answered);
      total.transferred += Number(row.transferred);
      total.timed += Number(row.timed);
      durationMs += Number(row.duration_ms);
      total.agentTurns += Number(row.agent_turns);
      total.bargeIns += Number(row.barge_ins);
      total.successEvaluated += Number(row.evaluated);
      total.successful += Number(row.succeeded);
      if (row.end_reason && Number(row.calls) && (END_REASONS as readonly string[]).includes(row.end_reason)) endReasons[row.end_reason as EndReason] = Number(row.calls);
    }
    total.answeredSeconds = durationMs / 1000;
    return {
      ...total,
      csatCount: Number(byReason[0]?.total_csat ?? 0),
      csatAverage: nullable(byReason[0]?.csat_average),
      endReasons,
      durationAvg: total.timed ? durationMs / total.timed / 1000 : null,
      durationP50: durations.p50,
      durationP95: durations.p95,
      latencyTurns: latencies.n,
      latencyP50: latencies.p50,
      latencyP95: latencies.p95,
    };
  }

  /**
   * Percentiles (continuous, as percentile_cont) over a histogram: the day histogram `table` (column `bin`) of the
   * period's whole clean days, plus `raw`'s bins counted from the rows elsewhere. Each percentile is read off the
   * cumulative counts: rank h = p × (n - 1), the bins at ranks floor(h) and ceil(h), interpolated. So it is exact to
   * the bins (percentile_cont over the binned values), whichever way each day was read.
   */
  private async percentiles(
    f: AnalyticsFilter,
    table: string,
    bin: string,
    raw: (p: Params, source: Covered) => string,
  ): Promise<{ n: number; p50: number | null; p95: number | null }> {
    const p = new Params();
    const source = covered(p, f, DAY);
    const rows = (await this.statement(
      `WITH ${source.ctes},
            h AS (SELECT a.${bin} AS v, a.n FROM ${table} a WHERE ${source.aggregated('a')} AND ${dims(p, f, 'a', 'rollup')}
                  UNION ALL ${raw(p, source)}),
            l AS (SELECT v, sum(n) AS n FROM h GROUP BY v),
            cum AS (SELECT v, sum(n) OVER (ORDER BY v) AS upto, sum(n) OVER () AS total FROM l),
            q AS (SELECT p, t.total, p * (t.total - 1) AS h FROM (VALUES (0.5), (0.95)) ps(p), (SELECT max(total) AS total FROM cum) t WHERE t.total > 0)
       SELECT q.p::float8 AS p, q.total::int AS total, q.h::float8 AS h,
              (SELECT v FROM cum WHERE cum.upto > floor(q.h) ORDER BY v LIMIT 1) AS lo,
              (SELECT v FROM cum WHERE cum.upto > ceil(q.h) ORDER BY v LIMIT 1) AS hi
         FROM q`,
      p.values,
    )) as { p: number; total: number; h: number; lo: number; hi: number }[];
    const at = (q: number): number | null => {
      const r = rows.find((x) => Number(x.p) === q);
      if (!r) return null;
      const h = Number(r.h);
      return Number(r.lo) + (h - Math.floor(h)) * (Number(r.hi) - Number(r.lo));
    };
    return { n: Number(rows[0]?.total ?? 0), p50: at(0.5), p95: at(0.95) };
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

  /**
   * The count measures per bucket (`starts` ascending, the first at or before `from`), every bucket present: the
   * clean slots wholly inside the period and inside one bucket from their figures, the rest from the rows. A bucket
   * boundary off the 15-minute grid (a zone's offset before standard time, such as LMT) makes its slot read from rows.
   */
  async countsPerBucket(f: AnalyticsFilter, starts: Date[]): Promise<CallCounts[]> {
    const p = new Params();
    const offGrid = starts.map((s) => s.getTime()).filter((t) => t > f.from.getTime() && t < f.to.getTime() && Math.floor(t / SLOT.ms) * SLOT.ms !== t);
    const source = covered(p, f, SLOT, offGrid.map((t) => Math.floor(t / SLOT.ms) * SLOT.ms));
    const bounds = p.add(starts.map((s) => s.toISOString()));
    const rows = (await this.statement(
      `WITH ${source.ctes},
            x AS (SELECT width_bucket(a.slot, ${bounds}::timestamptz[]) AS i, ${SUMS.map((c) => `a.${c}`).join(', ')}
                    FROM call_analytics_slots a WHERE ${source.aggregated('a')} AND ${dims(p, f, 'a')}
                  UNION ALL
                  SELECT width_bucket(c.created_at, ${bounds}::timestamptz[]), ${CALL_SUMS}
                    FROM ${source.rows('calls', 'created_at')} WHERE ${dims(p, f, 'c')} GROUP BY 1
                  UNION ALL
                  SELECT width_bucket(c.call_created_at, ${bounds}::timestamptz[]), ${RATING_SUMS}
                    FROM ${source.rows('call_ratings', 'call_created_at')} WHERE ${dims(p, f, 'c', 'rating')} GROUP BY 1)
       SELECT x.i, ${SUM_OF_SUMS}, sum(x.cost)::text AS total_cost, (sum(x.csat_sum) / nullif(sum(x.csat_count), 0))::float8 AS csat_average
         FROM x GROUP BY x.i`,
      p.values,
    )) as (CountsRow & { i: number; total_cost: string; csat_count: number; csat_average: number | null })[];
    const counts: CallCounts[] = starts.map(() => ({
      calls: 0,
      answered: 0,
      answeredSeconds: 0,
      transferred: 0,
      csatCount: 0,
      csatAverage: null,
      cost: '0',
      agentTurns: 0,
      bargeIns: 0,
      successEvaluated: 0,
      successful: 0,
    }));
    for (const row of rows) {
      const bucket = counts[Number(row.i) - 1];
      if (!bucket) continue;
      Object.assign(bucket, {
        calls: Number(row.calls),
        answered: Number(row.answered),
        answeredSeconds: Number(row.duration_ms) / 1000,
        transferred: Number(row.transferred),
        csatCount: Number(row.csat_count),
        csatAverage: nullable(row.csat_average),
        cost: decimal(row.total_cost ?? '0'),
        agentTurns: Number(row.agent_turns),
        bargeIns: Number(row.barge_ins),
        successEvaluated: Number(row.evaluated),
        successful: Number(row.succeeded),
      });
    }
    return counts;
  }

  /**
   * One refresh transaction, if no other replica's is running: recomputes up to REFRESH_SLOTS dirty slots and
   * REFRESH_DAYS dirty days (days that have ended; an unended day's marks are folded into one, it is read from the
   * rows until it ends). Each statement deletes the marks it sees and rewrites their figures from the rows in the
   * same snapshot: a change committed after it left its own mark, which survives, so its slot or day stays dirty.
   */
  async refresh(): Promise<RefreshBatch | null> {
    return this.dataSource.transaction(async (m) => {
      const [{ locked }] = (await m.query(`SELECT pg_try_advisory_xact_lock($1) AS locked`, [REFRESH_LOCK])) as { locked: boolean }[];
      if (!locked) return null;
      await m.query(`SET LOCAL jit = off`);
      const [slots] = (await m.query(refreshSql(SLOT, 'call_analytics_slots', REFRESH_SLOTS, ''), [])) as { n: number }[];
      await m.query(`
        WITH many AS (SELECT account_id, day FROM call_analytics_dirty_days WHERE day + interval '1 day' > now() GROUP BY 1, 2 HAVING count(*) > 1),
             gone AS (DELETE FROM call_analytics_dirty_days d USING many WHERE d.account_id = many.account_id AND d.day = many.day)
        INSERT INTO call_analytics_dirty_days (account_id, day) SELECT account_id, day FROM many`);
      const [days] = (await m.query(refreshSql(DAY, 'call_analytics_days', REFRESH_DAYS, `AND day + interval '1 day' <= now()`), [])) as { n: number }[];
      return { slots: Number(slots.n), days: Number(days.n), more: Number(slots.n) >= REFRESH_SLOTS || Number(days.n) >= REFRESH_DAYS };
    });
  }

  /**
   * Runs one analytics statement in a transaction of its own, without JIT compilation (it costs tens of
   * milliseconds on each of these statements and gains nothing on a scan this simple).
   */
  private statement<T>(sql: string, params: unknown[]): Promise<T> {
    return this.dataSource.transaction(async (m) => {
      await m.query(`SET LOCAL jit = off`);
      return (await m.query(sql, params)) as T;
    });
  }
}

/**
 * The statement recomputing up to `limit` dirty grains (slots or days; `when`: which marks) of `table` from the rows;
 * for days also the histograms, with their rollups over agents and directions ('*').
 */
function refreshSql(grain: Grain, table: string, limit: number, when: string): string {
  const at = grain.at;
  const rows = (table: string, column: string, withProject = false) =>
    `pick p CROSS JOIN ${range(table, column, 'p.account_id', `p.${at}`, `p.${at} + interval '${grain.interval}'`, withProject)}`;
  const byEndReason = grain === DAY;
  const histograms =
    grain === DAY
      ? [
          ['call_analytics_day_durations', 'seconds', `SELECT p.account_id, p.${at}, c.project_id, c.agent_id, c.direction, ${DURATION_BIN} AS v FROM ${rows('calls', 'created_at')} WHERE c.answered_at IS NOT NULL AND c.ended_at IS NOT NULL`],
          ['call_analytics_day_latencies', 'ms', `SELECT p.account_id, p.${at}, c.project_id, c.agent_id, c.direction, ${LATENCY_BIN} AS v FROM ${rows('call_turn_latencies', 'call_created_at')}`],
        ]
      : [];
  return `
    WITH pick AS (SELECT DISTINCT account_id, ${at} FROM ${grain.marks} WHERE true ${when} ORDER BY ${at} DESC LIMIT ${limit}),
         marks AS (DELETE FROM ${grain.marks} d USING pick p WHERE d.account_id = p.account_id AND d.${at} = p.${at}),
         gone AS (DELETE FROM ${table} a USING pick p WHERE a.account_id = p.account_id AND a.${at} = p.${at}),
         fresh AS (
           INSERT INTO ${table} (account_id, ${at}, project_id, agent_id, direction${byEndReason ? ', end_reason' : ''}, ${SUMS.join(', ')})
           SELECT x.account_id, x.${at}, x.project_id, x.agent_id, x.direction${byEndReason ? ', x.end_reason' : ''}, ${SUM_OF_SUMS}
             FROM (SELECT p.account_id, p.${at}, c.project_id, c.agent_id, c.direction${byEndReason ? ', c.end_reason' : ''}, ${CALL_SUMS}
                     FROM ${rows('calls', 'created_at')} GROUP BY 1, 2, 3, 4, 5${byEndReason ? ', 6' : ''}
                   UNION ALL
                   SELECT p.account_id, p.${at}, c.project_id, c.agent_id, c.direction${byEndReason ? ', NULL' : ''}, ${RATING_SUMS}
                     FROM ${rows('call_ratings', 'call_created_at', true)} GROUP BY 1, 2, 3, 4, 5) x
            GROUP BY 1, 2, 3, 4, 5${byEndReason ? ', 6' : ''})
         ${histograms
           .map(
             ([hist, bin, rows], i) => `,
         gone${i} AS (DELETE FROM ${hist} a USING pick p WHERE a.account_id = p.account_id AND a.${at} = p.${at}),
         fresh${i} AS (
           INSERT INTO ${hist} (account_id, ${at}, project_id, agent_id, direction, ${bin}, n)
           SELECT x.account_id, x.${at}, x.project_id, CASE WHEN grouping(x.agent_id) = 1 THEN '*' ELSE x.agent_id END,
                  CASE WHEN grouping(x.direction) = 1 THEN '*' ELSE x.direction END, x.v, count(*)::int
             FROM (${rows}) x
            GROUP BY x.account_id, x.${at}, x.project_id, x.v, GROUPING SETS ((x.agent_id, x.direction), (x.direction), ()))`,
           )
           .join('')}
    SELECT count(*)::int AS n FROM pick`;
}

/** Where a statement reads its figures from: the CTEs it starts with, the aggregates' condition and the rows' ranges. */
interface Covered {
  ctes: string;
  /** The condition on an aggregate row `a`: its grain is whole in the period, clean and not excluded. */
  aggregated(a: string): string;
  /** `table`'s rows (as c) in the ranges read from rows, by its time column `column`. */
  rows(table: string, column: string): string;
}

/**
 * Splits the filter's period [from, to) at `grain`: its whole grains [lo, hi) are read from the aggregates but for
 * the dirty ones (the marks this statement sees) and `excluded`; the partial grains at the edges, the excluded and
 * the dirty ones from the rows.
 */
function covered(p: Params, f: AnalyticsFilter, grain: Grain, excluded: number[] = []): Covered {
  const from = f.from.getTime();
  const to = f.to.getTime();
  let lo = Math.ceil(from / grain.ms) * grain.ms;
  let hi = Math.floor(to / grain.ms) * grain.ms;
  const edges: [number, number][] = [];
  if (lo >= hi) {
    lo = hi = from;
    edges.push([from, to]);
  } else {
    if (from < lo) edges.push([from, lo]);
    if (hi < to) edges.push([hi, to]);
    for (const t of new Set(excluded)) if (t >= lo && t < hi) edges.push([t, t + grain.ms]);
  }
  const iso = (t: number) => new Date(t).toISOString();
  const account = p.add(f.accountId);
  const [loP, hiP] = [p.add(iso(lo)), p.add(iso(hi))];
  const starts = p.add(edges.map(([s]) => iso(s)));
  const ends = p.add(edges.map(([, e]) => iso(e)));
  const skip = p.add(excluded.map(iso));
  return {
    ctes: `dirty AS (SELECT DISTINCT d.${grain.at} AS at FROM ${grain.marks} d WHERE d.account_id = ${account} AND d.${grain.at} >= ${loP}::timestamptz AND d.${grain.at} < ${hiP}::timestamptz),
           ranges AS (SELECT r.s, r.e FROM unnest(${starts}::timestamptz[], ${ends}::timestamptz[]) r(s, e)
                      UNION ALL SELECT at, at + interval '${grain.interval}' FROM dirty WHERE at <> ALL(${skip}::timestamptz[]))`,
    aggregated: (a) =>
      `${a}.account_id = ${account} AND ${a}.${grain.at} >= ${loP}::timestamptz AND ${a}.${grain.at} < ${hiP}::timestamptz AND ${a}.${grain.at} <> ALL(${skip}::timestamptz[]) AND ${a}.${grain.at} NOT IN (SELECT at FROM dirty)`,
    rows: (table, column) => `ranges r CROSS JOIN ${range(table, column, account, 'r.s', 'r.e')}`,
  };
}

/**
 * The filter's agent, direction and project conditions on `x`: rows carrying them (calls, latencies, slot and day
 * figures), ratings (their project is their call's, looked up), or histogram rows whose agent and direction may be
 * the rollup '*' (every agent, every direction).
 */
function dims(p: Params, f: AnalyticsFilter, x: string, kind: 'row' | 'rating' | 'rollup' = 'row'): string {
  const where = ['true'];
  if (kind === 'rollup') {
    where.push(f.agentId ? `${x}.agent_id = ${p.add(f.agentId)}` : `${x}.agent_id = '*'`);
    where.push(f.direction ? `${x}.direction = ${p.add(f.direction)}` : f.agentId ? `${x}.direction <> '*'` : `${x}.direction = '*'`);
  } else {
    if (f.agentId) where.push(`${x}.agent_id = ${p.add(f.agentId)}`);
    if (f.direction) where.push(`${x}.direction = ${p.add(f.direction)}`);
  }
  if (f.projectId) {
    const project = (r: string) => `coalesce(${r}.project_id, ${p.add(defaultProjectId(f.accountId))}) = ${p.add(f.projectId)}`;
    where.push(kind === 'rating' ? `EXISTS (SELECT 1 FROM calls k WHERE k.id = ${x}.call_id AND ${project('k')})` : project(x));
  }
  return where.join(' AND ');
}

const nullable = (v: number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));
