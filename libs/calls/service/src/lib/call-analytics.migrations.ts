import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pre-aggregated analytics (docs/analytics.md, Indexes and speed). Figures per 15-minute slot of the calls' creation
 * time (`call_analytics_slots`: the timeseries) and per UTC day (`call_analytics_days`, by end reason, and the
 * histograms of durations and response latencies: the overview), recomputed from the rows by the refresher
 * (CallAnalyticsRefresher) for the slots and days marked dirty.
 *
 * Marks: every change to a row that feeds a figure inserts a mark of its slot and day (triggers, so no write path can
 * forget one). A mark is a plain insert, never an upsert: a refresher deletes only the marks its snapshot sees, so the
 * mark of a transaction still running when it computed survives it, and the slot stays dirty until the next pass.
 * (An `ON CONFLICT DO NOTHING` mark would let a writer rely on a mark the refresher is deleting, and its change be
 * lost.) Existing calls' slots and days are all marked here: the refresher computes them after start-up.
 */
export class AddCallAnalyticsAggregates1765900000600 implements MigrationInterface {
  name = 'AddCallAnalyticsAggregates1765900000600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS call_analytics_dirty_slots (account_id text NOT NULL, slot timestamptz NOT NULL)`);
    await q.query(`CREATE INDEX IF NOT EXISTS call_analytics_dirty_slots_at ON call_analytics_dirty_slots (account_id, slot)`);
    await q.query(`CREATE TABLE IF NOT EXISTS call_analytics_dirty_days (account_id text NOT NULL, day timestamptz NOT NULL)`);
    await q.query(`CREATE INDEX IF NOT EXISTS call_analytics_dirty_days_at ON call_analytics_dirty_days (account_id, day)`);
    const counts = `
        calls int NOT NULL DEFAULT 0,
        answered int NOT NULL DEFAULT 0,
        transferred int NOT NULL DEFAULT 0,
        timed int NOT NULL DEFAULT 0,
        duration_ms bigint NOT NULL DEFAULT 0,
        cost numeric NOT NULL DEFAULT 0,
        agent_turns bigint NOT NULL DEFAULT 0,
        barge_ins bigint NOT NULL DEFAULT 0,
        csat_count int NOT NULL DEFAULT 0,
        csat_sum numeric NOT NULL DEFAULT 0`;
    await q.query(`
      CREATE TABLE IF NOT EXISTS call_analytics_slots (
        account_id text NOT NULL, slot timestamptz NOT NULL, project_id text, agent_id text NOT NULL, direction text NOT NULL,${counts})`);
    await q.query(`CREATE INDEX IF NOT EXISTS call_analytics_slots_at ON call_analytics_slots (account_id, slot)`);
    // Ratings are kept on the day's row with end_reason null (calls 0 unless unended calls are there too).
    await q.query(`
      CREATE TABLE IF NOT EXISTS call_analytics_days (
        account_id text NOT NULL, day timestamptz NOT NULL, project_id text, agent_id text NOT NULL, direction text NOT NULL, end_reason text,${counts})`);
    await q.query(`CREATE INDEX IF NOT EXISTS call_analytics_days_at ON call_analytics_days (account_id, day)`);
    // Histograms, with rollups: agent_id '*' is every agent, direction '*' every direction (GROUPING SETS), so an
    // overview without those filters reads one row per project, day and bin.
    for (const [table, bin] of [
      ['call_analytics_day_durations', 'seconds'],
      ['call_analytics_day_latencies', 'ms'],
    ]) {
      await q.query(`
        CREATE TABLE IF NOT EXISTS ${table} (
          account_id text NOT NULL, day timestamptz NOT NULL, project_id text, agent_id text NOT NULL, direction text NOT NULL,
          ${bin} int NOT NULL, n int NOT NULL)`);
      await q.query(`CREATE INDEX IF NOT EXISTS ${table}_at ON ${table} (account_id, day)`);
      await q.query(`CREATE INDEX IF NOT EXISTS ${table}_read ON ${table} (account_id, agent_id, direction, day) INCLUDE (project_id, ${bin}, n)`);
    }

    const slot = (row: string, at: string) => `date_bin('15 minutes', ${row}.${at}, timestamptz '2000-01-01 00:00:00+00')`;
    const day = (row: string, at: string) => `date_bin('1 day', ${row}.${at}, timestamptz '2000-01-01 00:00:00+00')`;
    // Statement-level marks (inserts, deletes, ratings' and latencies' updates): one mark per slot and day touched.
    for (const [fn, at, slots] of [
      ['call_analytics_mark_calls', 'created_at', true],
      ['call_analytics_mark_ratings', 'call_created_at', true],
      // Latencies feed only the overview's (daily) histograms.
      ['call_analytics_mark_latencies', 'call_created_at', false],
    ] as const) {
      await q.query(`
        CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
          ${slots ? `INSERT INTO call_analytics_dirty_slots (account_id, slot) SELECT DISTINCT r.account_id, ${slot('r', at)} FROM changed r;` : ''}
          INSERT INTO call_analytics_dirty_days (account_id, day) SELECT DISTINCT r.account_id, ${day('r', at)} FROM changed r;
          RETURN NULL;
        END $$`);
    }
    // A call's update marks its slot and day (and the old ones if it moved) only when a column the figures read changed:
    // a row trigger with a WHEN, so heartbeats and transcript writes cost no function call.
    await q.query(`
      CREATE OR REPLACE FUNCTION call_analytics_mark_call() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        INSERT INTO call_analytics_dirty_slots (account_id, slot) VALUES (NEW.account_id, ${slot('NEW', 'created_at')});
        INSERT INTO call_analytics_dirty_days (account_id, day) VALUES (NEW.account_id, ${day('NEW', 'created_at')});
        IF OLD.account_id <> NEW.account_id OR OLD.created_at <> NEW.created_at THEN
          INSERT INTO call_analytics_dirty_slots (account_id, slot) VALUES (OLD.account_id, ${slot('OLD', 'created_at')});
          INSERT INTO call_analytics_dirty_days (account_id, day) VALUES (OLD.account_id, ${day('OLD', 'created_at')});
        END IF;
        RETURN NULL;
      END $$`);
    await createCallUpdateTrigger(q, CALL_COLUMNS_READ);
    for (const [table, fn, events] of [
      ['calls', 'call_analytics_mark_calls', ['INSERT', 'DELETE']],
      ['call_ratings', 'call_analytics_mark_ratings', ['INSERT', 'UPDATE', 'DELETE']],
      ['call_turn_latencies', 'call_analytics_mark_latencies', ['INSERT', 'UPDATE', 'DELETE']],
    ] as const) {
      for (const event of events) {
        // UPDATE: the rows as they were (the new ones are in the same slot: ratings and latencies never move).
        const transition = event === 'INSERT' ? 'NEW' : 'OLD';
        await q.query(`DROP TRIGGER IF EXISTS ${table}_analytics_${event.toLowerCase()} ON ${table}`);
        await q.query(
          `CREATE TRIGGER ${table}_analytics_${event.toLowerCase()} AFTER ${event} ON ${table} REFERENCING ${transition} TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
        );
      }
    }
    // Backfill: every slot and day holding calls is dirty until the refresher has computed it.
    await q.query(`INSERT INTO call_analytics_dirty_slots (account_id, slot) SELECT DISTINCT c.account_id, ${slot('c', 'created_at')} FROM calls c`);
    await q.query(`INSERT INTO call_analytics_dirty_days (account_id, day) SELECT DISTINCT c.account_id, ${day('c', 'created_at')} FROM calls c`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS calls_analytics_update ON calls`);
    for (const table of ['calls', 'call_ratings', 'call_turn_latencies']) {
      for (const event of ['insert', 'update', 'delete']) await q.query(`DROP TRIGGER IF EXISTS ${table}_analytics_${event} ON ${table}`);
    }
    for (const fn of ['call_analytics_mark_calls', 'call_analytics_mark_ratings', 'call_analytics_mark_latencies', 'call_analytics_mark_call']) {
      await q.query(`DROP FUNCTION IF EXISTS ${fn}()`);
    }
    for (const table of [
      'call_analytics_day_latencies',
      'call_analytics_day_durations',
      'call_analytics_days',
      'call_analytics_slots',
      'call_analytics_dirty_days',
      'call_analytics_dirty_slots',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}

/** The calls' columns the figures read (a change to any other column marks nothing), as of the first migration. */
const CALL_COLUMNS_READ = [
  'account_id',
  'created_at',
  'agent_id',
  'direction',
  'project_id',
  'answered_at',
  'ended_at',
  'end_reason',
  'transferred_to',
  'cost',
  'agent_turns',
  'barge_ins',
];

/** (Re)creates the calls' row-level update trigger over `columns` (a later migration adds a column it reads). */
export async function createCallUpdateTrigger(q: QueryRunner, columns: readonly string[]): Promise<void> {
  const row = (r: string) => `(${columns.map((c) => `${r}.${c}`).join(', ')})`;
  await q.query(`DROP TRIGGER IF EXISTS calls_analytics_update ON calls`);
  await q.query(`
    CREATE TRIGGER calls_analytics_update AFTER UPDATE OF ${columns.join(', ')} ON calls
      FOR EACH ROW WHEN (${row('OLD')} IS DISTINCT FROM ${row('NEW')}) EXECUTE FUNCTION call_analytics_mark_call()`);
}

/**
 * Post-call success in the figures (calls.successful, AddCallSuccess1765800000630): per slot and day, the calls with a
 * verdict (`evaluated`) and the successful ones. The update trigger also watches `successful` (set when the call ends
 * or its analysis decides, often after the other columns), and the slots and days of calls with a verdict are marked.
 */
export class AddCallAnalyticsSuccess1765900000610 implements MigrationInterface {
  name = 'AddCallAnalyticsSuccess1765900000610';

  async up(q: QueryRunner): Promise<void> {
    for (const table of ['call_analytics_slots', 'call_analytics_days']) {
      await q.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS evaluated int NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS succeeded int NOT NULL DEFAULT 0`);
    }
    await createCallUpdateTrigger(q, [...CALL_COLUMNS_READ, 'successful']);
    const at = (grain: string) => `date_bin('${grain}', c.created_at, timestamptz '2000-01-01 00:00:00+00')`;
    await q.query(`INSERT INTO call_analytics_dirty_slots (account_id, slot) SELECT DISTINCT c.account_id, ${at('15 minutes')} FROM calls c WHERE c.successful IS NOT NULL`);
    await q.query(`INSERT INTO call_analytics_dirty_days (account_id, day) SELECT DISTINCT c.account_id, ${at('1 day')} FROM calls c WHERE c.successful IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await createCallUpdateTrigger(q, CALL_COLUMNS_READ);
    for (const table of ['call_analytics_slots', 'call_analytics_days']) {
      await q.query(`ALTER TABLE ${table} DROP COLUMN IF EXISTS evaluated, DROP COLUMN IF EXISTS succeeded`);
    }
  }
}
