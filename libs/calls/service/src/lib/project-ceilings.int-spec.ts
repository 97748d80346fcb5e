import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { defaultProjectId, openServiceDatabase } from '@parley/persistence';
import { AppError } from '@parley/rpc';
// eslint-disable-next-line @nx/enforce-module-boundaries -- test-only helper for a fresh database
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallsDomain } from './calls.domain';
import { CallsRepository } from './calls.repository';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';
import { FakeMediaWorkers } from './testing/fake-media-workers';
import { newCall } from './testing/new-call';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 1000, CALL_STUCK_SECONDS: 60, PUBLIC_URL: 'https://parley.example' });
const project = (n: number) => `prj_${String(n).padStart(22, '0')}`;

describe('project ceilings on new calls (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let calls: CallsDomain;
  let relay: OutboxRelay;

  beforeAll(async () => {
    db = await createTestDatabase('parley_calls_projects');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    const bus = new InProcessBus();
    bus.open();
    relay = new OutboxRelay(dataSource, bus);
    calls = new CallsDomain(new CallsRepository(dataSource), relay, bus, config, new FakeMediaWorkers().commands);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  const limitEvents = async (projectId: string) =>
    ((await dataSource.getRepository(OutboxRecord).find({ order: { createdAt: 'ASC' } })) as OutboxRecord[])
      .map((r) => r.payload as { type: string; account_id: string; call_id: string | null; data: { project_id: string; limit: string; ceiling: number } })
      .filter((e) => e.type === 'project.limit_reached' && e.data.project_id === projectId);

  const refusal = async (attempt: Promise<unknown>): Promise<AppError> => {
    const error = await attempt.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  };

  it('accepts the Nth live call of a project with a ceiling of N and refuses the N+1th with 402 naming max_live_calls', async () => {
    await calls.putProjectCeilings('acc_p1', project(1), 3);
    const placed = [];
    for (let i = 0; i < 3; i++) placed.push(await calls.insert(newCall({ accountId: 'acc_p1', projectId: project(1) })));

    expect(placed.map((c) => c.projectId)).toEqual([project(1), project(1), project(1)]);
    const refused = await refusal(calls.insert(newCall({ accountId: 'acc_p1', projectId: project(1) })));
    expect(refused.code).toBe('plan_limit_reached');
    expect(refused.message).toContain('max_live_calls');
    expect(refused.extra).toEqual({ limit: 'max_live_calls', project_id: project(1), ceiling: 3 });
    // Nothing was recorded for the refused call; another project of the account is not concerned.
    expect(await dataSource.getRepository(CallEntity).countBy({ accountId: 'acc_p1' })).toBe(3);
    expect((await calls.insert(newCall({ accountId: 'acc_p1', projectId: project(2) }))).projectId).toBe(project(2));
  });

  it('emits project.limit_reached once while the project stays at its ceiling, and again after it went back under it', async () => {
    await calls.putProjectCeilings('acc_p2', project(3), 1);
    const first = await calls.insert(newCall({ accountId: 'acc_p2', projectId: project(3) }));
    await refusal(calls.insert(newCall({ accountId: 'acc_p2', projectId: project(3) })));
    await refusal(calls.insert(newCall({ accountId: 'acc_p2', projectId: project(3) })));

    const once = await limitEvents(project(3));
    expect(once).toHaveLength(1);
    expect(once[0]).toMatchObject({ account_id: 'acc_p2', call_id: null, data: { project_id: project(3), limit: 'max_live_calls', ceiling: 1 } });

    // The live call is never cut by the refusals; once it ends, the project is under its ceiling again.
    expect((await calls.get('acc_p2', first.id)).status).toBe('queued');
    await calls.transition('acc_p2', first.id, () => ({ status: 'ended', endReason: 'hangup' }));
    await calls.insert(newCall({ accountId: 'acc_p2', projectId: project(3) }));
    await refusal(calls.insert(newCall({ accountId: 'acc_p2', projectId: project(3) })));
    expect(await limitEvents(project(3))).toHaveLength(2);
  });

  it('holds the ceiling under parallel creates: exactly N of many at once are accepted', async () => {
    await calls.putProjectCeilings('acc_p3', project(4), 4);
    const results = await Promise.allSettled(Array.from({ length: 12 }, () => calls.insert(newCall({ accountId: 'acc_p3', projectId: project(4) }))));

    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(4);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused.map((r) => (r.reason as AppError).code)).toEqual(Array(8).fill('plan_limit_reached'));
    expect(await limitEvents(project(4))).toHaveLength(1);
  });

  it('counts calls without a project (and those stored before projects) against the account’s default project', async () => {
    const fallback = defaultProjectId('acc_p4');
    await calls.putProjectCeilings('acc_p4', fallback, 2);
    await calls.insert(newCall({ accountId: 'acc_p4' }));
    await dataSource.query(`UPDATE calls SET project_id = NULL WHERE account_id = 'acc_p4'`);
    await calls.insert(newCall({ accountId: 'acc_p4', projectId: fallback }));

    expect((await refusal(calls.insert(newCall({ accountId: 'acc_p4' })))).extra).toMatchObject({ project_id: fallback });
    const listed = await calls.list('acc_p4', 10, '', { projectId: fallback });
    expect(listed.items).toHaveLength(2);
    expect(await calls.list('acc_p4', 10, '', { projectId: project(9) })).toMatchObject({ items: [] });
  });

  it('applies a changed ceiling to the next call, reports it afresh, and never lets one account change another’s', async () => {
    await calls.putProjectCeilings('acc_p5', project(5), 1);
    await calls.insert(newCall({ accountId: 'acc_p5', projectId: project(5) }));
    await refusal(calls.insert(newCall({ accountId: 'acc_p5', projectId: project(5) })));
    await calls.putProjectCeilings('acc_other', project(5), 100);
    await refusal(calls.insert(newCall({ accountId: 'acc_p5', projectId: project(5) })));

    await calls.putProjectCeilings('acc_p5', project(5), 2);
    await calls.insert(newCall({ accountId: 'acc_p5', projectId: project(5) }));
    await refusal(calls.insert(newCall({ accountId: 'acc_p5', projectId: project(5) })));
    expect((await limitEvents(project(5))).map((e) => e.data.ceiling)).toEqual([1, 2]);

    // 0: no ceiling.
    await calls.putProjectCeilings('acc_p5', project(5), 0);
    await calls.insert(newCall({ accountId: 'acc_p5', projectId: project(5) }));
  });
});
