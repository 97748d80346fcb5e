import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A running total of what each project's calls cost per UTC day and month (docs/projects.md, "What a spending ceiling
 * costs"), so a new call of a project with a `spend` ceiling reads one row instead of summing the period's calls.
 *
 * `project_spend` holds, per (account, project, period, period start), the sum of `calls.cost` of the calls created in
 * that period; `project_id` is the call's as stored, '' for calls stored without one (the default project's). It is
 * kept by a trigger on `calls`, in the transaction of every change of a call's cost (usage reports, the carrier's cost
 * at the end) or of what places it in a period, so no writer of `calls.cost` can leave it behind. The day row is
 * always updated before the month row, so two writers of one project lock them in the same order. Filled in from the
 * calls stored so far (under the trigger's creation lock, which holds writers of `calls` off until this commits).
 */
export class CreateProjectSpend1765900000700 implements MigrationInterface {
  name = 'CreateProjectSpend1765900000700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS project_spend (
        account_id text NOT NULL,
        project_id text NOT NULL,
        period text NOT NULL CHECK (period IN ('day', 'month')),
        period_start timestamptz NOT NULL,
        amount numeric NOT NULL,
        PRIMARY KEY (account_id, project_id, period, period_start)
      )`);
    await q.query(`
      CREATE OR REPLACE FUNCTION project_spend_add(account text, project text, created timestamptz, delta numeric) RETURNS void
      LANGUAGE sql SET search_path FROM CURRENT AS $$
        INSERT INTO project_spend (account_id, project_id, period, period_start, amount)
        VALUES (account, coalesce(project, ''), 'day', date_trunc('day', created AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', delta),
               (account, coalesce(project, ''), 'month', date_trunc('month', created AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', delta)
        ON CONFLICT (account_id, project_id, period, period_start) DO UPDATE SET amount = project_spend.amount + EXCLUDED.amount
      $$`);
    await q.query(`
      CREATE OR REPLACE FUNCTION calls_track_project_spend() RETURNS trigger
      LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND NEW.account_id = OLD.account_id AND NEW.project_id IS NOT DISTINCT FROM OLD.project_id AND NEW.created_at = OLD.created_at THEN
          IF NEW.cost <> OLD.cost THEN PERFORM project_spend_add(NEW.account_id, NEW.project_id, NEW.created_at, NEW.cost - OLD.cost); END IF;
          RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' AND OLD.cost <> 0 THEN PERFORM project_spend_add(OLD.account_id, OLD.project_id, OLD.created_at, -OLD.cost); END IF;
        IF TG_OP <> 'DELETE' AND NEW.cost <> 0 THEN PERFORM project_spend_add(NEW.account_id, NEW.project_id, NEW.created_at, NEW.cost); END IF;
        RETURN NULL;
      END $$`);
    await q.query(`DROP TRIGGER IF EXISTS calls_project_spend ON calls`);
    await q.query(`
      CREATE TRIGGER calls_project_spend AFTER INSERT OR DELETE OR UPDATE OF cost, created_at, project_id, account_id ON calls
      FOR EACH ROW EXECUTE FUNCTION calls_track_project_spend()`);
    await q.query(`DELETE FROM project_spend`);
    await q.query(`
      INSERT INTO project_spend (account_id, project_id, period, period_start, amount)
      SELECT account_id, coalesce(project_id, ''), p.period, date_trunc(p.period, created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', sum(cost)
        FROM calls CROSS JOIN (VALUES ('day'), ('month')) AS p(period)
       WHERE cost <> 0
       GROUP BY 1, 2, 3, 4`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS calls_project_spend ON calls`);
    await q.query(`DROP FUNCTION IF EXISTS calls_track_project_spend()`);
    await q.query(`DROP FUNCTION IF EXISTS project_spend_add(text, text, timestamptz, numeric)`);
    await q.query(`DROP TABLE IF EXISTS project_spend`);
  }
}

/**
 * The running total's triggers, per statement for inserts and deletes: a row trigger updating the same few
 * `project_spend` rows once per call of a statement that writes many calls (a bulk load, bench/analytics.mjs) made
 * each row thousands of versions in one transaction, every upsert walking them (a 200,000-call insert ran for over
 * ten minutes). A statement now adds each (account, project, period) once, in key order (a project's day row before
 * its month row, as the row trigger takes them). A change of a call's cost (one call per transaction: a usage report,
 * the carrier's cost at the end) stays a row trigger, and runs only when the cost or what places the call in a
 * period changed.
 */
export class ProjectSpendStatementTriggers1765900000710 implements MigrationInterface {
  name = 'ProjectSpendStatementTriggers1765900000710';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS calls_project_spend ON calls`);
    await q.query(`
      CREATE OR REPLACE FUNCTION calls_track_project_spend() RETURNS trigger
      LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        IF NEW.account_id = OLD.account_id AND NEW.project_id IS NOT DISTINCT FROM OLD.project_id AND NEW.created_at = OLD.created_at THEN
          PERFORM project_spend_add(NEW.account_id, NEW.project_id, NEW.created_at, NEW.cost - OLD.cost);
        ELSE
          IF OLD.cost <> 0 THEN PERFORM project_spend_add(OLD.account_id, OLD.project_id, OLD.created_at, -OLD.cost); END IF;
          IF NEW.cost <> 0 THEN PERFORM project_spend_add(NEW.account_id, NEW.project_id, NEW.created_at, NEW.cost); END IF;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`DROP TRIGGER IF EXISTS calls_project_spend_update ON calls`);
    await q.query(`
      CREATE TRIGGER calls_project_spend_update AFTER UPDATE OF cost, created_at, project_id, account_id ON calls FOR EACH ROW
      WHEN (OLD.cost IS DISTINCT FROM NEW.cost OR OLD.created_at IS DISTINCT FROM NEW.created_at
            OR OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.account_id IS DISTINCT FROM NEW.account_id)
      EXECUTE FUNCTION calls_track_project_spend()`);
    await q.query(`
      CREATE OR REPLACE FUNCTION calls_project_spend_rows() RETURNS trigger
      LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      BEGIN
        INSERT INTO project_spend (account_id, project_id, period, period_start, amount)
        SELECT account_id, coalesce(project_id, ''), p.period, date_trunc(p.period, created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
               CASE WHEN TG_OP = 'DELETE' THEN -sum(cost) ELSE sum(cost) END
          FROM changed CROSS JOIN (VALUES ('day'), ('month')) AS p(period)
         WHERE cost <> 0
         GROUP BY 1, 2, 3, 4
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (account_id, project_id, period, period_start) DO UPDATE SET amount = project_spend.amount + EXCLUDED.amount;
        RETURN NULL;
      END $$`);
    for (const [event, transition] of [
      ['INSERT', 'NEW'],
      ['DELETE', 'OLD'],
    ]) {
      await q.query(`DROP TRIGGER IF EXISTS calls_project_spend_${event.toLowerCase()} ON calls`);
      await q.query(
        `CREATE TRIGGER calls_project_spend_${event.toLowerCase()} AFTER ${event} ON calls REFERENCING ${transition} TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION calls_project_spend_rows()`,
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const event of ['insert', 'delete', 'update']) await q.query(`DROP TRIGGER IF EXISTS calls_project_spend_${event} ON calls`);
    await q.query(`DROP FUNCTION IF EXISTS calls_project_spend_rows()`);
    await new CreateProjectSpend1765900000700().up(q);
  }
}
