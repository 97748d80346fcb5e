import { DataSource } from 'typeorm';
import { OutboxRecord } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallAnalytics } from './call-analytics';
import { CallAnalyticsRepository } from './call-analytics.repository';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';

interface Seed {
  account?: string;
  agent?: string;
  direction?: 'outbound' | 'inbound' | 'web';
  /** RFC 3339 creation time. */
  created: string;
  /** Answered this many seconds after creation; absent: never answered. */
  answeredAfter?: number;
  /** Seconds from the answer (or creation) to the end. */
  seconds?: number;
  /** Ended with this reason; absent: still live. */
  endReason?: string;
  transferredTo?: string;
}

/** For the tests that refresh and compare many answers: the machine may be busy. */
const SLOW = 30_000;
/** The usage and turn measures of calls that have none. */
const NO_USAGE = { cost: '0', agentTurns: 0, bargeIns: 0, latencyTurns: 0, latencyP50: null, latencyP95: null, successEvaluated: 0, successful: 0 };

describe('call analytics (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let analytics: CallAnalytics;
  let repository: CallAnalyticsRepository;
  let n = 0;

  beforeAll(async () => {
    db = await createTestDatabase('parley_calls');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    repository = new CallAnalyticsRepository(dataSource);
    analytics = new CallAnalytics(repository);
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  const insert = async (s: Seed): Promise<string> => {
    const id = `call_an${String(++n).padStart(4, '0')}`;
    const created = new Date(s.created);
    const answered = s.answeredAfter !== undefined ? new Date(created.getTime() + s.answeredAfter * 1000) : null;
    const ended = s.endReason ? new Date((answered ?? created).getTime() + (s.seconds ?? 0) * 1000) : null;
    const status = s.endReason ? 'ended' : answered ? 'in_progress' : 'ringing';
    await dataSource.query(
      `INSERT INTO calls.calls (id, account_id, agent_id, direction, to_number, from_number, status, end_reason, transferred_to, created_at, updated_at, answered_at, ended_at)
       VALUES ($1, $2, $3, $4, '+15550001111', '+15550002222', $5, $6, $7, $8, $8, $9, $10)`,
      [id, s.account ?? 'acc_1', s.agent ?? 'agt_a', s.direction ?? 'outbound', status, s.endReason ?? null, s.transferredTo ?? null, created, answered, ended],
    );
    return id;
  };

  const rate = (callId: string, score: number, opts: { scale?: number; source?: string; account?: string } = {}) =>
    dataSource.query(
      `INSERT INTO calls.call_ratings (id, account_id, call_id, source, scale, score, call_created_at, agent_id, direction)
       SELECT $1, $2, $3, $4, $5, $6, created_at, agent_id, direction FROM calls.calls WHERE id = $3`,
      [
      `csat_an${++n}`,
      opts.account ?? 'acc_1',
      callId,
      opts.source ?? 'api',
        opts.scale ?? 5,
        score,
      ],
    );

  /** Recomputes every dirty slot and day (as the refresher's passes do). */
  const refreshAll = async () => {
    for (let batch = await repository.refresh(); batch?.more; batch = await repository.refresh());
  };
  const marks = async (): Promise<number> =>
    Number((await dataSource.query(`SELECT (SELECT count(*) FROM calls.call_analytics_dirty_slots) + (SELECT count(*) FROM calls.call_analytics_dirty_days) AS n`))[0].n);
  /** Marks every slot and day dirty: the answers then come from the rows alone. */
  const markAllDirty = async () => {
    await dataSource.query(`INSERT INTO calls.call_analytics_dirty_slots SELECT DISTINCT account_id, date_bin('15 minutes', created_at, '2000-01-01Z') FROM calls.calls`);
    await dataSource.query(`INSERT INTO calls.call_analytics_dirty_days SELECT DISTINCT account_id, date_bin('1 day', created_at, '2000-01-01Z') FROM calls.calls`);
  };

  describe('overview', () => {
    const period = { accountId: 'acc_1', from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z' };

    beforeAll(async () => {
      // Exactly at `from`: counted.
      const c1 = await insert({ created: '2026-01-01T00:00:00Z', answeredAfter: 5, seconds: 60, endReason: 'completed' });
      await insert({ created: '2026-01-02T10:00:00Z', answeredAfter: 3, seconds: 120, endReason: 'hangup' });
      await insert({ created: '2026-01-03T10:00:00Z', direction: 'inbound', answeredAfter: 0, seconds: 30, endReason: 'transferred', transferredTo: '+15559990000' });
      const c4 = await insert({ created: '2026-01-04T10:00:00Z', agent: 'agt_b', direction: 'inbound', answeredAfter: 1, seconds: 300, endReason: 'completed' });
      await insert({ created: '2026-01-05T10:00:00Z', agent: 'agt_b', seconds: 30, endReason: 'no_answer' });
      await insert({ created: '2026-01-06T10:00:00Z', agent: 'agt_b', seconds: 2, endReason: 'busy' });
      // Answered and still live: answered, no duration yet.
      await insert({ created: '2026-01-31T23:59:59.999Z', answeredAfter: 2 });
      // Outside the period (just before `from`, exactly at `to`), another account: not counted.
      const before = await insert({ created: '2025-12-31T23:59:59.999Z', answeredAfter: 1, seconds: 1000, endReason: 'completed' });
      await insert({ created: '2026-02-01T00:00:00Z', answeredAfter: 1, seconds: 1000, endReason: 'completed' });
      const other = await insert({ account: 'acc_2', created: '2026-01-10T10:00:00Z', answeredAfter: 1, seconds: 500, endReason: 'completed' });
      await rate(c1, 5);
      await rate(c1, 4, { source: 'keypad' });
      await rate(c4, 7, { scale: 10 });
      await rate(before, 1);
      await rate(other, 1, { account: 'acc_2' });
    });

    it('counts the period’s calls exactly: answered, minutes, end reasons, durations (percentile_cont), transfers, CSAT', async () => {
      const o = await analytics.overview(period);
      expect(o).toEqual({
        calls: 7,
        answered: 5,
        answeredSeconds: 510,
        transferred: 1,
        endReasons: { completed: 2, hangup: 1, transferred: 1, no_answer: 1, busy: 1 },
        timed: 4,
        durationAvg: 127.5,
        // 30, 60, 120, 300: the median between 60 and 120; p95 at 2.85 of 3 steps: 120 + 0.85 × 180.
        durationP50: 90,
        durationP95: expect.closeTo(273, 9),
        csatCount: 3,
        // 5, 4 and 7 of 10 (3.67).
        csatAverage: expect.closeTo((5 + 4 + 3.67) / 3, 9),
        // No usage or turns recorded on these calls (call-usage.int-spec.ts has them).
        ...NO_USAGE,
      });
    });

    it('answers the same from the refreshed figures as from the rows', async () => {
      const fromRows = await analytics.overview(period);
      await refreshAll();
      expect(await marks()).toBe(0);
      expect(await analytics.overview(period)).toEqual(fromRows);
      expect(await analytics.overview({ ...period, agentId: 'agt_b' })).toMatchObject({ calls: 3, durationP50: 300, csatCount: 1, csatAverage: 3.67 });
      expect(await analytics.overview({ ...period, direction: 'inbound' })).toMatchObject({ calls: 2, answered: 2, transferred: 1, answeredSeconds: 330 });
    });

    it('counts post-call success: the calls with a verdict and the successful ones, overall and per bucket', async () => {
      const q = { accountId: 'acc_success', from: '2026-02-01T00:00:00Z', to: '2026-02-03T00:00:00Z' };
      const verdicts = [true, true, false, null];
      for (const [i, successful] of verdicts.entries()) {
        const id = await insert({ account: 'acc_success', created: `2026-02-0${1 + (i % 2)}T10:00:00Z`, answeredAfter: 1, seconds: 30, endReason: 'completed' });
        await dataSource.query(`UPDATE calls.calls SET successful = $2 WHERE id = $1`, [id, successful]);
      }
      expect(await analytics.overview(q)).toMatchObject({ calls: 4, successEvaluated: 3, successful: 2 });
      const days = await analytics.timeseries(q, 'day', 'UTC');
      expect(days.map((d) => [d.successEvaluated, d.successful])).toEqual([
        [2, 1],
        [1, 1],
      ]);
      await refreshAll();
      expect(await analytics.overview(q)).toMatchObject({ calls: 4, successEvaluated: 3, successful: 2 });
      expect(await analytics.timeseries(q, 'day', 'UTC')).toEqual(days);
    });

    it('filters by agent and by direction', async () => {
      expect(await analytics.overview({ ...period, agentId: 'agt_b' })).toMatchObject({
        calls: 3,
        answered: 1,
        answeredSeconds: 300,
        endReasons: { completed: 1, no_answer: 1, busy: 1 },
        durationP50: 300,
        csatCount: 1,
        csatAverage: 3.67,
      });
      expect(await analytics.overview({ ...period, direction: 'inbound' })).toMatchObject({ calls: 2, answered: 2, transferred: 1, answeredSeconds: 330 });
      expect(await analytics.overview({ ...period, agentId: 'agt_b', direction: 'web' })).toMatchObject({ calls: 0, answered: 0 });
    });

    it('answers nulls, not zeros, for figures of no calls', async () => {
      expect(await analytics.overview({ ...period, accountId: 'acc_none' })).toEqual({
        calls: 0,
        answered: 0,
        answeredSeconds: 0,
        transferred: 0,
        endReasons: {},
        timed: 0,
        durationAvg: null,
        durationP50: null,
        durationP95: null,
        ...NO_USAGE,
        csatCount: 0,
        csatAverage: null,
      });
    });

    it('keeps accounts apart', async () => {
      expect(await analytics.overview({ ...period, accountId: 'acc_2' })).toMatchObject({ calls: 1, answered: 1, answeredSeconds: 500, csatCount: 1, csatAverage: 1 });
    });

    it.each([
      [{ from: 'yesterday' }, 'from'],
      [{ to: '2026-02-30T00:00:00Z' }, 'to'],
      [{ to: '2026-01-01T00:00:00Z' }, 'to'],
      [{ direction: 'sideways' }, 'direction'],
    ])('refuses %j with a validation error on %s', async (over, field) => {
      await expect(analytics.overview({ ...period, ...over })).rejects.toMatchObject({ code: 'validation_error', errors: [expect.objectContaining({ field })] });
    });
  });

  describe('timeseries', () => {
    const ny = { accountId: 'acc_dst' };

    beforeAll(async () => {
      for (const created of [
        '2026-03-07T12:00:00-05:00',
        '2026-03-08T00:30:00-05:00',
        '2026-03-08T01:59:00-05:00',
        // The first instant after the gap (02:00 EST is 03:00 EDT).
        '2026-03-08T03:00:00-04:00',
        '2026-03-08T23:30:00-04:00',
        '2026-03-09T00:00:00-04:00',
        // Fall back: 01:30 EDT and 01:30 EST are an hour apart.
        '2026-11-01T01:30:00-04:00',
        '2026-11-01T01:30:00-05:00',
        '2026-11-01T23:30:00-05:00',
      ]) {
        const id = await insert({ account: 'acc_dst', created, answeredAfter: 1, seconds: 90, endReason: 'completed' });
        if (created.startsWith('2026-03-08T01')) await rate(id, 2, { account: 'acc_dst' });
      }
      await insert({ account: 'acc_dst', created: '2026-03-08T12:00:00-04:00', endReason: 'no_answer' });
      await insert({ account: 'acc_month', created: '2026-01-20T12:00:00Z', answeredAfter: 1, seconds: 60, endReason: 'completed' });
      // 00:30 on 1 April in Paris (+02:00), still March in UTC.
      await insert({ account: 'acc_month', created: '2026-03-31T22:30:00Z' });
    });

    it('buckets local days across the spring change (the 8th of March is 23 hours), zeros included, starts with the zone’s offset', async () => {
      const days = await analytics.timeseries({ ...ny, from: '2026-03-07T00:00:00-05:00', to: '2026-03-10T00:00:00-04:00' }, 'day', 'America/New_York');
      expect(days.map((d) => [d.start, d.calls, d.answered, d.answeredSeconds])).toEqual([
        ['2026-03-07T00:00:00-05:00', 1, 1, 90],
        ['2026-03-08T00:00:00-05:00', 5, 4, 360],
        ['2026-03-09T00:00:00-04:00', 1, 1, 90],
      ]);
      expect(Date.parse(days[2].start) - Date.parse(days[1].start)).toBe(23 * 3600_000);
      expect(days[1]).toMatchObject({ csatCount: 1, csatAverage: 2 });
      expect(days[0]).toMatchObject({ csatCount: 0, csatAverage: null });
    });

    it('has no bucket for the skipped hour and two for the repeated one', async () => {
      const spring = await analytics.timeseries({ ...ny, from: '2026-03-08T00:00:00-05:00', to: '2026-03-08T05:00:00-04:00' }, 'hour', 'America/New_York');
      expect(spring.map((h) => [h.start, h.calls])).toEqual([
        ['2026-03-08T00:00:00-05:00', 1],
        ['2026-03-08T01:00:00-05:00', 1],
        ['2026-03-08T03:00:00-04:00', 1],
        ['2026-03-08T04:00:00-04:00', 0],
      ]);
      const autumn = await analytics.timeseries({ ...ny, from: '2026-11-01T00:00:00-04:00', to: '2026-11-01T03:00:00-05:00' }, 'hour', 'America/New_York');
      expect(autumn.map((h) => [h.start, h.calls])).toEqual([
        ['2026-11-01T00:00:00-04:00', 0],
        ['2026-11-01T01:00:00-04:00', 1],
        ['2026-11-01T01:00:00-05:00', 1],
        ['2026-11-01T02:00:00-05:00', 0],
      ]);
      const days = await analytics.timeseries({ ...ny, from: '2026-11-01T00:00:00-04:00', to: '2026-11-03T00:00:00-05:00' }, 'day', 'America/New_York');
      expect(days.map((d) => [d.start, d.calls])).toEqual([
        ['2026-11-01T00:00:00-04:00', 3],
        ['2026-11-02T00:00:00-05:00', 0],
      ]);
      expect(Date.parse(days[1].start) - Date.parse(days[0].start)).toBe(25 * 3600_000);
    });

    it('aligns the first bucket on the unit’s local start and counts only the period’s calls in it; the buckets add up to the overview', async () => {
      const q = { ...ny, from: '2026-03-08T01:00:00-05:00', to: '2026-03-08T23:45:00-04:00' };
      const days = await analytics.timeseries(q, 'day', 'America/New_York');
      expect(days.map((d) => [d.start, d.calls])).toEqual([['2026-03-08T00:00:00-05:00', 4]]);
      const hours = await analytics.timeseries(q, 'hour', 'America/New_York');
      expect(hours).toHaveLength(22);
      expect(hours.at(-1)?.start).toBe('2026-03-08T23:00:00-04:00');
      const o = await analytics.overview(q);
      expect(hours.reduce((sum, h) => sum + h.calls, 0)).toBe(o.calls);
      expect(hours.reduce((sum, h) => sum + h.answeredSeconds, 0)).toBe(o.answeredSeconds);
    });

    it('buckets months and weeks in the zone, every one present', async () => {
      const months = await analytics.timeseries({ accountId: 'acc_month', from: '2026-01-15T00:00:00Z', to: '2026-04-10T00:00:00Z' }, 'month', 'Europe/Paris');
      expect(months.map((m) => [m.start, m.calls, m.answered, m.answeredSeconds])).toEqual([
        ['2026-01-01T00:00:00+01:00', 1, 1, 60],
        ['2026-02-01T00:00:00+01:00', 0, 0, 0],
        ['2026-03-01T00:00:00+01:00', 0, 0, 0],
        ['2026-04-01T00:00:00+02:00', 1, 0, 0],
      ]);
      const utc = await analytics.timeseries({ accountId: 'acc_month', from: '2026-03-01T00:00:00Z', to: '2026-04-02T00:00:00Z' }, 'month', 'UTC');
      expect(utc.map((m) => [m.start, m.calls])).toEqual([
        ['2026-03-01T00:00:00Z', 1],
        ['2026-04-01T00:00:00Z', 0],
      ]);
      // ISO weeks start on Monday: 2026-01-15 is a Thursday.
      const weeks = await analytics.timeseries({ accountId: 'acc_month', from: '2026-01-15T00:00:00Z', to: '2026-01-27T00:00:00Z' }, 'week', 'UTC');
      expect(weeks.map((w) => [w.start, w.calls])).toEqual([
        ['2026-01-12T00:00:00Z', 0],
        ['2026-01-19T00:00:00Z', 1],
        ['2026-01-26T00:00:00Z', 0],
      ]);
    });

    it('buckets the same local days across the changes from the refreshed figures', async () => {
      const q = { ...ny, from: '2026-03-07T00:00:00-05:00', to: '2026-03-10T00:00:00-04:00' };
      const fromRows = await analytics.timeseries(q, 'day', 'America/New_York');
      const hoursFromRows = await analytics.timeseries({ ...ny, from: '2026-11-01T00:00:00-04:00', to: '2026-11-01T03:00:00-05:00' }, 'hour', 'America/New_York');
      await refreshAll();
      expect(await analytics.timeseries(q, 'day', 'America/New_York')).toEqual(fromRows);
      expect(fromRows.map((d) => d.calls)).toEqual([1, 5, 1]);
      expect(await analytics.timeseries({ ...ny, from: '2026-11-01T00:00:00-04:00', to: '2026-11-01T03:00:00-05:00' }, 'hour', 'America/New_York')).toEqual(hoursFromRows);
    });

    it('reads from the rows a slot a bucket boundary cuts (local mean time, off the 15-minute grid)', async () => {
      // Paris kept its local mean time (+00:09:21) until 1891: its days began at 23:50:39 UTC, inside a slot.
      await insert({ account: 'acc_lmt', created: '1890-06-01T23:48:00Z' });
      await insert({ account: 'acc_lmt', created: '1890-06-01T23:55:00Z' });
      await refreshAll();
      const days = await analytics.timeseries({ accountId: 'acc_lmt', from: '1890-06-01T12:00:00Z', to: '1890-06-03T00:00:00Z' }, 'day', 'Europe/Paris');
      expect(days.map((d) => d.calls)).toEqual([1, 1, 0]);
    });

    it('caps the number of buckets (validation_error on bucket beyond it)', async () => {
      const from = '2026-01-01T00:00:00Z';
      await expect(analytics.timeseries({ ...ny, from, to: '2026-01-01T16:40:00Z' }, 'minute', 'UTC')).resolves.toHaveLength(1000);
      await expect(analytics.timeseries({ ...ny, from, to: '2026-01-01T16:40:01Z' }, 'minute', 'UTC')).rejects.toMatchObject({
        code: 'validation_error',
        errors: [expect.objectContaining({ field: 'bucket' })],
      });
      await expect(analytics.timeseries({ ...ny, from, to: '2036-01-01T00:00:00Z' }, 'minute', 'UTC')).rejects.toMatchObject({ code: 'validation_error' });
      await expect(analytics.timeseries({ ...ny, from, to: '2026-01-02T00:00:00Z' }, 'hour', 'UTC', 10)).rejects.toMatchObject({ code: 'validation_error' });
    });

    it.each([
      ['an unknown zone', 'day', 'Mars/Olympus', 'timezone'],
      ['a POSIX rule', 'day', 'EST5EDT,M3.2.0,M11.1.0', 'timezone'],
      ['an unknown bucket', 'fortnight', 'UTC', 'bucket'],
    ])('refuses %s with a validation error', async (_label, bucket, zone, field) => {
      await expect(analytics.timeseries({ ...ny, from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, bucket, zone)).rejects.toMatchObject({
        code: 'validation_error',
        errors: [expect.objectContaining({ field })],
      });
    });
  });
  describe('pre-aggregated figures', () => {
    const account = 'acc_agg';
    // Not on a slot or a day: the edges are read from the rows.
    const period = { accountId: account, from: '2026-05-26T10:07:13.500Z', to: '2026-06-25T10:07:13.500Z' };
    const ids: string[] = [];
    const liveIds: string[] = [];

    /** The answers compared: overviews with each filter, timeseries by day in a zone, by hour, by week. */
    const answers = () =>
      Promise.all([
        analytics.overview(period),
        analytics.overview({ ...period, agentId: 'agt_b' }),
        analytics.overview({ ...period, direction: 'inbound' }),
        analytics.overview({ ...period, agentId: 'agt_c', direction: 'outbound' }),
        analytics.overview({ ...period, projectId: 'prj_x' }),
        analytics.timeseries(period, 'day', 'America/New_York'),
        analytics.timeseries({ ...period, projectId: 'prj_x' }, 'hour', 'UTC', 1000),
        analytics.timeseries({ ...period, agentId: 'agt_a' }, 'week', 'Europe/Paris'),
      ]);

    beforeAll(async () => {
      // 500 calls over 35 days, deterministic: three agents, every direction, two projects, durations to the ms, costs
      // to 10 decimals, turns, barge-ins, ratings on both scales and response latencies (some beyond 10 s); written in
      // three statements.
      let seed = 7;
      const next = (k: number) => Math.floor((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 8) % k;
      const start = Date.parse('2026-05-23T00:00:00Z');
      const calls: Record<string, unknown>[] = [];
      const latencies: Record<string, unknown>[] = [];
      const ratings: Record<string, unknown>[] = [];
      for (let i = 0; i < 500; i++) {
        const id = `call_agg${String(i).padStart(4, '0')}`;
        const created = start + next(35 * 86_400) * 1000 + next(1000);
        const answered = next(4) > 0 ? created + next(10) * 1000 : null;
        const live = next(20) === 0;
        const ended = live ? null : (answered ?? created) + next(900_000) + next(1000);
        const turns = answered ? 1 + next(12) : 0;
        calls.push({
          id,
          agent_id: ['agt_a', 'agt_b', 'agt_c'][next(3)],
          direction: ['outbound', 'inbound', 'web'][next(3)],
          status: live ? (answered ? 'in_progress' : 'ringing') : 'ended',
          end_reason: live ? null : answered ? ['completed', 'hangup', 'transferred', 'silence'][next(4)] : ['no_answer', 'busy'][next(2)],
          transferred_to: answered && next(10) === 0 ? '+15559990000' : null,
          created_at: new Date(created).toISOString(),
          answered_at: answered && new Date(answered).toISOString(),
          ended_at: ended && new Date(ended).toISOString(),
          project_id: next(3) === 0 ? 'prj_x' : null,
          cost: answered ? `0.${String(next(10 ** 9)).padStart(9, '0')}7` : '0',
          agent_turns: turns,
          barge_ins: turns ? next(turns) : 0,
          successful: live ? null : [null, true, false][next(3)],
        });
        ids.push(id);
        if (live) liveIds.push(id);
        for (let t = 1; t < turns; t++) latencies.push({ call_id: id, seq: t, latency_ms: next(10) === 0 ? 10_000 + next(5000) : 300 + next(1700) });
        const scale = next(2) ? 5 : 10;
        if (answered && next(4) === 0) ratings.push({ id: `csat_agg${i}`, call_id: id, scale, score: 1 + next(scale) });
      }
      await dataSource.query(
        `INSERT INTO calls.calls (id, account_id, agent_id, direction, to_number, from_number, status, end_reason, transferred_to, created_at, updated_at,
                                  answered_at, ended_at, project_id, cost, agent_turns, barge_ins, successful)
         SELECT r.id, $2, r.agent_id, r.direction, '+15550001111', '+15550002222', r.status, r.end_reason, r.transferred_to, r.created_at, r.created_at,
                r.answered_at, r.ended_at, r.project_id, r.cost, r.agent_turns, r.barge_ins, r.successful
           FROM jsonb_to_recordset($1::jsonb) AS r(id text, agent_id text, direction text, status text, end_reason text, transferred_to text,
                created_at timestamptz, answered_at timestamptz, ended_at timestamptz, project_id text, cost numeric, agent_turns int, barge_ins int,
                successful boolean)`,
        [JSON.stringify(calls), account],
      );
      await dataSource.query(
        `INSERT INTO calls.call_turn_latencies (call_id, seq, account_id, call_created_at, agent_id, direction, project_id, latency_ms)
         SELECT c.id, r.seq, c.account_id, c.created_at, c.agent_id, c.direction, c.project_id, r.latency_ms
           FROM jsonb_to_recordset($1::jsonb) AS r(call_id text, seq int, latency_ms int) JOIN calls.calls c ON c.id = r.call_id`,
        [JSON.stringify(latencies)],
      );
      await dataSource.query(
        `INSERT INTO calls.call_ratings (id, account_id, call_id, source, scale, score, call_created_at, agent_id, direction)
         SELECT r.id, c.account_id, c.id, 'api', r.scale, r.score, c.created_at, c.agent_id, c.direction
           FROM jsonb_to_recordset($1::jsonb) AS r(id text, call_id text, scale int, score int) JOIN calls.calls c ON c.id = r.call_id`,
        [JSON.stringify(ratings)],
      );
    }, SLOW);

    it('a 30-day overview and timeseries from the figures equal those from the rows, edge slots and days included', async () => {
      await refreshAll();
      expect(await marks()).toBe(0);
      const fromFigures = await answers();
      const [overview, byAgent] = fromFigures;
      expect(overview.calls).toBeGreaterThan(300);
      expect(overview.csatCount).toBeGreaterThan(20);
      expect(overview.latencyTurns).toBeGreaterThan(500);
      expect(byAgent.calls).toBeLessThan(overview.calls);
      expect(overview.successful).toBeGreaterThan(50);
      expect(overview.successEvaluated).toBeGreaterThan(overview.successful);
      // The figures are what was read: one changed by hand shows (until its slot or day is recomputed).
      const oneRow = (table: string) => `UPDATE calls.${table} SET calls = calls + 1000 WHERE ctid = (SELECT ctid FROM calls.${table} WHERE account_id = $1 AND ${table === 'call_analytics_days' ? 'day' : 'slot'} BETWEEN '2026-06-01Z' AND '2026-06-20Z' LIMIT 1)`;
      await dataSource.query(oneRow('call_analytics_days'), [account]);
      await dataSource.query(oneRow('call_analytics_slots'), [account]);
      expect((await analytics.overview(period)).calls).toBe(overview.calls + 1000);
      expect((await analytics.timeseries(period, 'day', 'America/New_York')).reduce((sum, d) => sum + d.calls, 0)).toBe(overview.calls + 1000);
      await markAllDirty();
      expect(await answers()).toEqual(fromFigures);
      // The hour buckets add up to the overview of the same period.
      const [, , , , byProject, , hours] = fromFigures;
      expect(hours.reduce((sum, h) => sum + h.calls, 0)).toBe(byProject.calls);
      expect(hours.reduce((sum, h) => sum + h.csatCount, 0)).toBe(byProject.csatCount);
    }, SLOW);

    it('reads the slots and days changed since the last refresh from the rows: late cost, a rating, an end, a latency', async () => {
      await refreshAll();
      const before = await answers();
      const [late, rated, live] = [ids[10], ids[20], liveIds[0]];
      await dataSource.query(`UPDATE calls.calls SET cost = cost + 0.0000000001, agent_turns = agent_turns + 1 WHERE id = $1`, [late]);
      await dataSource.query(`DELETE FROM calls.call_ratings WHERE call_id = $1`, [rated]);
      await rate(rated, 9, { account, scale: 10, source: 'keypad' });
      await dataSource.query(
        `UPDATE calls.calls SET status = 'ended', end_reason = 'completed', answered_at = created_at, ended_at = created_at + interval '61.5 seconds' WHERE id = $1`,
        [live],
      );
      await refreshAll();
      // A verdict written after the end (the post-call analysis decided it): its own change.
      await dataSource.query(`UPDATE calls.calls SET successful = true WHERE id = $1`, [live]);
      expect(await marks()).toBeGreaterThan(0);
      await dataSource.query(
        `INSERT INTO calls.call_turn_latencies (call_id, seq, account_id, call_created_at, agent_id, direction, project_id, latency_ms)
         SELECT id, 99, account_id, created_at, agent_id, direction, project_id, 5 FROM calls.calls WHERE id = $1`,
        [late],
      );
      expect(await marks()).toBeGreaterThan(0);
      const changed = await answers();
      expect(changed).not.toEqual(before);
      await markAllDirty();
      expect(await answers()).toEqual(changed);
      await refreshAll();
      expect(await answers()).toEqual(changed);
    }, SLOW);

    it('keeps the slot of a call changed while the refresher runs dirty, so the change is counted', async () => {
      await refreshAll();
      const id = ids[30];
      const before = await analytics.overview(period);
      // Its slot is dirty already (a committed change): the writer below relies on no existing mark.
      await dataSource.query(`UPDATE calls.calls SET barge_ins = barge_ins + 1 WHERE id = $1`, [id]);
      const writer = dataSource.createQueryRunner();
      await writer.connect();
      await writer.startTransaction();
      try {
        await writer.query(`UPDATE calls.calls SET cost = cost + 1 WHERE id = $1`, [id]);
        // The refresher deletes the marks it sees and computes without the uncommitted change.
        await refreshAll();
        await writer.commitTransaction();
      } finally {
        await writer.release();
      }
      expect(await marks()).toBeGreaterThan(0);
      const after = await analytics.overview(period);
      expect(Number(after.cost)).toBeCloseTo(Number(before.cost) + 1, 9);
      expect(after.bargeIns).toBe(before.bargeIns + 1);
      await refreshAll();
      expect(await marks()).toBe(0);
      expect(await analytics.overview(period)).toEqual(after);
      await markAllDirty();
      expect(await analytics.overview(period)).toEqual(after);
    }, SLOW);

    it('marks the slots and days of the calls stored before the migration (backfill)', async () => {
      await refreshAll();
      // Back to before AddCallAnalyticsAggregates (and every migration after it): no trigger marks this call.
      const applied = async (): Promise<string[]> => (await dataSource.query(`SELECT name FROM calls.migrations`)).map((r: { name: string }) => r.name);
      while ((await applied()).includes('AddCallAnalyticsAggregates1765900000600')) await dataSource.undoLastMigration();
      const id = await insert({ account: 'acc_before', created: '2026-04-01T12:20:00Z', answeredAfter: 1, seconds: 42, endReason: 'completed' });
      await dataSource.query(`UPDATE calls.calls SET successful = true WHERE id = $1`, [id]);
      expect(await dataSource.query(`SELECT to_regclass('calls.call_analytics_dirty_slots') AS t`)).toEqual([{ t: null }]);
      await dataSource.runMigrations();
      const dirty = await dataSource.query(`SELECT slot FROM calls.call_analytics_dirty_slots WHERE account_id = 'acc_before'`);
      expect(new Set(dirty.map((r: { slot: Date }) => new Date(r.slot).toISOString()))).toEqual(new Set(['2026-04-01T12:15:00.000Z']));
      const q = { accountId: 'acc_before', from: '2026-04-01T00:00:00Z', to: '2026-04-02T00:00:00Z' };
      expect(await analytics.overview(q)).toMatchObject({ calls: 1, answeredSeconds: 42, durationP50: 42 });
      await refreshAll();
      expect(await marks()).toBe(0);
      expect(await analytics.overview(q)).toMatchObject({ calls: 1, answeredSeconds: 42, durationP50: 42, successEvaluated: 1, successful: 1 });
    }, SLOW);
  });
});
