import { DataSource } from 'typeorm';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CreateIdempotencyAndRateLimits1763700000102 } from './migrations';
import { PostgresRateLimitStore } from './rate-limit';

const WINDOW = 60_000;

describe('PostgresRateLimitStore (real PostgreSQL)', () => {
  let db: TestDatabase;
  let replicaA: DataSource;
  let replicaB: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('parley_rate_limits');
    const options = { schema: 'gateway', entities: [], migrations: [CreateIdempotencyAndRateLimits1763700000102] };
    replicaA = await openServiceDatabase(db.url, options);
    replicaB = await openServiceDatabase(db.url, options);
  });

  beforeEach(async () => {
    await replicaA.query(`TRUNCATE rate_limit_windows`);
  });

  afterAll(async () => {
    await replicaA?.destroy();
    await replicaB?.destroy();
    await db?.drop();
  });

  it('counts the hits of two gateway replicas together, exactly: every place in the count is given once', async () => {
    const a = new PostgresRateLimitStore(replicaA);
    const b = new PostgresRateLimitStore(replicaB);

    const counts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).hit('key:one', WINDOW)));
    const other = await Promise.all([a.hit('key:two', WINDOW), b.hit('key:two', WINDOW)]);

    expect([...counts].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect([...other].sort()).toEqual([1, 2]);
    expect(await a.hit('key:one', WINDOW)).toBe(41);
  });

  it('starts every window from one and forgets the windows before it', async () => {
    const store = new PostgresRateLimitStore(replicaA);
    await Promise.all([store.hit('key:one', WINDOW), store.hit('key:one', WINDOW)]);

    expect(await store.hit('key:one', 2 * WINDOW)).toBe(1);
    expect(await replicaA.query(`SELECT window_start::int AS w, count FROM rate_limit_windows`)).toEqual([{ w: 2 * WINDOW, count: 1 }]);
  });
});
