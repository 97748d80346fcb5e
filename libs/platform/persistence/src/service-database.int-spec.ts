import { Client } from 'pg';
import { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { CreateOutbox1763700000000 } from '@parley/messaging';
// Test-only use of the shared test helpers; the boundary rule is about what the library itself depends on.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { migrateServiceSchema, openServiceDatabase, ServiceDatabaseOptions } from './service-database';

/** How many times each migration's `up` ran in this process, by migration name. */
const upCalls = new Map<string, number>();
function countUp(name: string): void {
  upCalls.set(name, (upCalls.get(name) ?? 0) + 1);
}

// No IF NOT EXISTS: a second application of these migrations would fail, so "applied once" is enforced by PostgreSQL too.
class CreateWidgets1763800000001 implements MigrationInterface {
  name = 'CreateWidgets1763800000001';
  async up(q: QueryRunner): Promise<void> {
    countUp(this.name);
    // Slow enough that concurrent start-ups really overlap.
    await q.query(`SELECT pg_sleep(0.2)`);
    await q.query(`CREATE TABLE widgets (id text PRIMARY KEY, label text NOT NULL)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE widgets`);
  }
}

class AddWidgetColour1763800000002 implements MigrationInterface {
  name = 'AddWidgetColour1763800000002';
  async up(q: QueryRunner): Promise<void> {
    countUp(this.name);
    await q.query(`ALTER TABLE widgets ADD COLUMN colour text NOT NULL DEFAULT 'blue'`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE widgets DROP COLUMN colour`);
  }
}

class CreateGadgets1763800000003 implements MigrationInterface {
  name = 'CreateGadgets1763800000003';
  async up(q: QueryRunner): Promise<void> {
    countUp(this.name);
    await q.query(`CREATE TABLE gadgets (id text PRIMARY KEY)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE gadgets`);
  }
}

const WIDGET_MIGRATIONS = [CreateOutbox1763700000000, CreateWidgets1763800000001, AddWidgetColour1763800000002];
const WIDGET_MIGRATION_NAMES = ['CreateOutbox1763700000000', 'CreateWidgets1763800000001', 'AddWidgetColour1763800000002'];

function widgetsService(schema: string): ServiceDatabaseOptions {
  return { schema, entities: [], migrations: WIDGET_MIGRATIONS, poolSize: 3 };
}

describe('service database start-up (schema and migrations)', () => {
  const databases: TestDatabase[] = [];
  const openSources: DataSource[] = [];

  /** A fresh database per test, so each starts from nothing. */
  async function freshDatabase(): Promise<string> {
    const db = await createTestDatabase('parley_persist');
    databases.push(db);
    return db.url;
  }

  async function open(url: string, options: ServiceDatabaseOptions): Promise<DataSource> {
    const ds = await openServiceDatabase(url, options);
    openSources.push(ds);
    return ds;
  }

  async function tablesIn(url: string, schema: string): Promise<string[]> {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
        [schema],
      );
      return rows.map((r) => r.table_name);
    } finally {
      await c.end();
    }
  }

  async function appliedMigrations(url: string, schema: string): Promise<string[]> {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query<{ name: string }>(`SELECT name FROM "${schema}".migrations ORDER BY id`);
      return rows.map((r) => r.name);
    } finally {
      await c.end();
    }
  }

  beforeEach(() => upCalls.clear());

  afterEach(async () => {
    await Promise.all(openSources.splice(0).map((ds) => (ds.isInitialized ? ds.destroy() : undefined)));
  });

  afterAll(async () => {
    await Promise.all(databases.map((db) => db.drop()));
  });

  it('creates the service schema and puts its tables and migrations table there, not in public', async () => {
    const url = await freshDatabase();
    const ds = await open(url, widgetsService('widgets_svc'));

    expect(await tablesIn(url, 'widgets_svc')).toEqual(['migrations', 'outbox', 'widgets']);
    expect(await tablesIn(url, 'public')).toEqual([]);
    expect(await appliedMigrations(url, 'widgets_svc')).toEqual(WIDGET_MIGRATION_NAMES);

    // Unqualified names used by the service resolve to its own schema.
    await ds.query(`INSERT INTO widgets (id, label) VALUES ('w1', 'first')`);
    expect(await ds.query(`SELECT id, label, colour FROM widgets_svc.widgets`)).toEqual([{ id: 'w1', label: 'first', colour: 'blue' }]);
    expect(await ds.query(`SELECT current_schema() AS s`)).toEqual([{ s: 'widgets_svc' }]);
  });

  it('is idempotent: starting up again applies nothing and records each migration once', async () => {
    const url = await freshDatabase();
    const first = await open(url, widgetsService('widgets_svc'));
    await first.query(`INSERT INTO widgets (id, label) VALUES ('kept', 'survives restarts')`);
    await first.destroy();

    const second = await open(url, widgetsService('widgets_svc'));
    // And once more on the same, already migrated, data source.
    await migrateServiceSchema(second, 'widgets_svc');

    expect(await appliedMigrations(url, 'widgets_svc')).toEqual(WIDGET_MIGRATION_NAMES);
    expect(upCalls.get('CreateWidgets1763800000001')).toBe(1);
    expect(upCalls.get('AddWidgetColour1763800000002')).toBe(1);
    expect(await second.query(`SELECT id FROM widgets`)).toEqual([{ id: 'kept' }]);
  });

  it('lets two replicas start together on a fresh database: both succeed and each migration runs once', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([open(url, widgetsService('widgets_svc')), open(url, widgetsService('widgets_svc'))]);

    expect(a.isInitialized && b.isInitialized).toBe(true);
    expect(await appliedMigrations(url, 'widgets_svc')).toEqual(WIDGET_MIGRATION_NAMES);
    expect(upCalls.get('CreateWidgets1763800000001')).toBe(1);
    expect(upCalls.get('AddWidgetColour1763800000002')).toBe(1);
    // Both replicas use the same tables.
    await a.query(`INSERT INTO widgets (id, label) VALUES ('from-a', 'a')`);
    expect(await b.query(`SELECT id FROM widgets`)).toEqual([{ id: 'from-a' }]);
  });

  it('keeps two services on one database apart: separate tables and separate migrations tables', async () => {
    const url = await freshDatabase();
    const gadgets: ServiceDatabaseOptions = {
      schema: 'gadgets_svc',
      entities: [],
      migrations: [CreateOutbox1763700000000, CreateGadgets1763800000003],
      poolSize: 3,
    };
    // Started together, as in standalone mode; each schema has its own lock.
    const [w, g] = await Promise.all([open(url, widgetsService('widgets_svc')), open(url, gadgets)]);

    expect(await tablesIn(url, 'widgets_svc')).toEqual(['migrations', 'outbox', 'widgets']);
    expect(await tablesIn(url, 'gadgets_svc')).toEqual(['gadgets', 'migrations', 'outbox']);
    expect(await tablesIn(url, 'public')).toEqual([]);
    expect(await appliedMigrations(url, 'widgets_svc')).toEqual(WIDGET_MIGRATION_NAMES);
    expect(await appliedMigrations(url, 'gadgets_svc')).toEqual(['CreateOutbox1763700000000', 'CreateGadgets1763800000003']);
    // The shared migration ran once per service, into each service's own schema.
    expect(upCalls.get('CreateGadgets1763800000003')).toBe(1);

    // Same table name, different tables: a row in one service's outbox is not in the other's.
    await w.query(`INSERT INTO outbox (message_id, subject, payload) VALUES ('m-w', 'parley.domain.test', '{}')`);
    expect(await w.query(`SELECT message_id FROM outbox`)).toEqual([{ message_id: 'm-w' }]);
    expect(await g.query(`SELECT message_id FROM outbox`)).toEqual([]);
    await expect(g.query(`SELECT 1 FROM widgets`)).rejects.toThrow(/does not exist/);
  });
});
