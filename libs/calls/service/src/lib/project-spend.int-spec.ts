import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { AppError } from '@parley/rpc';
// eslint-disable-next-line @nx/enforce-module-boundaries -- test-only helper for a fresh database
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallUsage } from './call-usage';
import { CallUsageRepository } from './call-usage.repository';
import { CallsDomain } from './calls.domain';
import { CallsRepository } from './calls.repository';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { ZERO_PRICES } from './price-table';
import { periodStart } from './spend-periods';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { newCall } from './testing/new-call';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 1000, CALL_STUCK_SECONDS: 60, PUBLIC_URL: 'https://parley.example' });
const project = (n: number) => `prj_${String(n).padStart(22, '0')}`;

describe('a project’s spending ceiling on new calls (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let calls: CallsDomain;
  let relay: OutboxRelay;

  beforeAll(async () => {
    db = await createTestDatabase('parley_calls_spend');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    const bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    const repository = new CallsRepository(dataSource);
    calls = new CallsDomain(repository, relay, bus, config, new FakeMediaWorkers().commands, new CallUsage(new CallUsageRepository(dataSource), ZERO_PRICES));
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  /** An ended call of the project that cost `cost`, created at `at`. */
  const spent = async (accountId: string, projectId: string, cost: string, at = new Date()) => {
    const call = await calls.insert(newCall({ accountId, projectId }));
    await calls.transition(accountId, call.id, () => ({ status: 'ended', endReason: 'hangup' }));
    await dataSource.query(`UPDATE calls SET cost = $2, created_at = $3 WHERE id = $1`, [call.id, cost, at]);
  };

  const refusal = (attempt: Promise<unknown>) =>
    attempt.then(
      () => undefined,
      (e: unknown) => e as AppError,
    );

  const limitEvents = async (projectId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find()) as OutboxRecord[])
      .map((r) => r.payload as { type: string; data: { project_id: string; limit: string } })
      .filter((e) => e.type === 'project.limit_reached' && e.data.project_id === projectId);

  it('accepts calls while the month’s spend is under the ceiling and refuses them once it is at it, with 402 naming spend', async () => {
    await calls.putProjectCeilings('acc_s1', project(1), 0, { amount: '10', currency: 'USD', period: 'month' });
    await spent('acc_s1', project(1), '9.9999999999');
    await calls.insert(newCall({ accountId: 'acc_s1', projectId: project(1) }));
    await spent('acc_s1', project(1), '0.0000000001');

    const refused = await refusal(calls.insert(newCall({ accountId: 'acc_s1', projectId: project(1) })));
    expect(refused).toBeInstanceOf(AppError);
    expect(refused?.code).toBe('plan_limit_reached');
    expect(refused?.extra).toEqual({ limit: 'spend', project_id: project(1), ceiling: '10', currency: 'USD', period: 'month', spent: '10' });
    // The live call placed under the ceiling is not cut.
    expect((await calls.list('acc_s1', 10, '', { projectId: project(1), status: 'queued' })).items).toHaveLength(1);
  });

  it('counts only the current period: last month’s calls and other projects’ do not count', async () => {
    await calls.putProjectCeilings('acc_s2', project(2), 0, { amount: '5', currency: 'USD', period: 'month' });
    const lastMonth = new Date(periodStart('month', new Date()).getTime() - 1);
    await spent('acc_s2', project(2), '100', lastMonth);
    await spent('acc_s2', project(3), '100');

    await calls.insert(newCall({ accountId: 'acc_s2', projectId: project(2) }));
  });

  it('emits project.limit_reached once a period however many calls are refused, and again after the ceiling is changed', async () => {
    await calls.putProjectCeilings('acc_s3', project(4), 0, { amount: '1', currency: 'USD', period: 'day' });
    await spent('acc_s3', project(4), '1.5');
    for (let i = 0; i < 3; i++) await refusal(calls.insert(newCall({ accountId: 'acc_s3', projectId: project(4) })));

    expect((await limitEvents(project(4))).map((e) => e.data)).toEqual([{ project_id: project(4), limit: 'spend', ceiling: '1', currency: 'USD', period: 'day' }]);
    await calls.putProjectCeilings('acc_s3', project(4), 0, { amount: '1.2', currency: 'USD', period: 'day' });
    await refusal(calls.insert(newCall({ accountId: 'acc_s3', projectId: project(4) })));
    expect(await limitEvents(project(4))).toHaveLength(2);
    await calls.putProjectCeilings('acc_s3', project(4), 0, { amount: '2', currency: 'USD', period: 'day' });
    await calls.insert(newCall({ accountId: 'acc_s3', projectId: project(4) }));
  });

  it('emits project.limit_reached once when many calls are refused at once', async () => {
    await calls.putProjectCeilings('acc_s5', project(6), 0, { amount: '1', currency: 'USD', period: 'month' });
    await spent('acc_s5', project(6), '1');
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => calls.insert(newCall({ accountId: 'acc_s5', projectId: project(6) }))));

    expect(results.map((r) => r.status)).toEqual(Array(8).fill('rejected'));
    expect(await limitEvents(project(6))).toHaveLength(1);
  });

  it('refuses a ceiling in another currency than calls are priced in, or not an amount above 0, naming the fields', async () => {
    const problems = await refusal(calls.putProjectCeilings('acc_s4', project(5), 0, { amount: '0.00', currency: 'EUR', period: 'week' as never }));

    expect(problems?.code).toBe('validation_error');
    expect(problems?.errors?.map((e) => e.field)).toEqual(['budget.spend.amount', 'budget.spend.period', 'budget.spend.currency']);
  });
});
