import { DataSource } from 'typeorm';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { defaultProjectId, openServiceDatabase } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { AgentEntity } from './agent.entity';
import { AgentsRepository } from './agents.repository';
import { AGENTS_MIGRATIONS } from './migrations';
import { AgentSpec } from './spec/agent-spec';

const ACME = 'acct_acme';
const SALES = `prj_${'5'.repeat(22)}`;
const SUPPORT = `prj_${'6'.repeat(22)}`;
const spec = (name: string): AgentSpec => ({ name, languages: [{ code: 'en-US' }] });

describe('agents in projects: max_agents (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let relay: OutboxRelay;
  let agents: AgentsRepository;

  beforeAll(async () => {
    db = await createTestDatabase('parley_agents_projects');
    dataSource = await openServiceDatabase(db.url, { schema: 'agents', entities: [AgentEntity, OutboxRecord], migrations: AGENTS_MIGRATIONS });
    // A stopped relay: records stay in the outbox (nothing reads them here).
    relay = new OutboxRelay(dataSource, new InProcessBus());
    await relay.stop();
    agents = new AgentsRepository(dataSource, relay);
  });

  beforeEach(async () => {
    await dataSource.query(`TRUNCATE agents, outbox, project_limits_reported`);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  const refusal = (attempt: Promise<unknown>) =>
    attempt.then(
      () => undefined,
      (e: unknown) => e as AppError,
    );

  it('creates the Nth agent of a project with a ceiling of N and refuses the N+1th with 402 naming max_agents', async () => {
    for (let i = 1; i <= 3; i++) await agents.create(ACME, spec(`a${i}`), { id: SALES, maxAgents: 3 });
    const refused = await refusal(agents.create(ACME, spec('a4'), { id: SALES, maxAgents: 3 }));

    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'plan_limit_reached', extra: { limit: 'max_agents', project_id: SALES, ceiling: 3 } });
    expect((await agents.list(ACME, 10, undefined, SALES)).items.map((a) => a.name).sort()).toEqual(['a1', 'a2', 'a3']);
    // Another project of the account has its own count.
    expect((await agents.create(ACME, spec('s1'), { id: SUPPORT, maxAgents: 1 })).projectId).toBe(SUPPORT);
  });

  it('emits project.limit_reached once while the project stays at its ceiling, and again after an agent was created under it', async () => {
    const events = async () =>
      ((await dataSource.getRepository(OutboxRecord).find({ order: { seq: 'ASC' } })) as OutboxRecord[])
        .filter((r) => r.subject === 'parley.events.project.limit_reached')
        .map((r) => r.payload as { type: string; account_id: string; call_id: null; data: unknown });
    const first = await agents.create(ACME, spec('a1'), { id: SALES, maxAgents: 1 });
    for (let i = 0; i < 3; i++) await refusal(agents.create(ACME, spec('again'), { id: SALES, maxAgents: 1 }));

    expect(await events()).toEqual([
      expect.objectContaining({ type: 'project.limit_reached', account_id: ACME, call_id: null, data: { project_id: SALES, limit: 'max_agents', ceiling: 1 } }),
    ]);
    await agents.softDelete(ACME, first.id);
    await agents.create(ACME, spec('a2'), { id: SALES, maxAgents: 1 });
    await refusal(agents.create(ACME, spec('a3'), { id: SALES, maxAgents: 1 }));
    expect(await events()).toHaveLength(2);
  });

  it('counts only live agents: a deleted one frees its place', async () => {
    const first = await agents.create(ACME, spec('a1'), { id: SALES, maxAgents: 1 });
    expect(await refusal(agents.create(ACME, spec('a2'), { id: SALES, maxAgents: 1 }))).toMatchObject({ code: 'plan_limit_reached' });
    await agents.softDelete(ACME, first.id);
    await agents.create(ACME, spec('a2'), { id: SALES, maxAgents: 1 });
  });

  it('counts a restored agent against its project’s ceiling: refused at it, restored under it', async () => {
    const first = await agents.create(ACME, spec('a1'), { id: SALES, maxAgents: 1 });
    await agents.softDelete(ACME, first.id);
    await agents.create(ACME, spec('a2'), { id: SALES, maxAgents: 1 });

    expect(await agents.projectOf(ACME, first.id)).toBe(SALES);
    expect(await refusal(agents.restore(ACME, first.id, 1))).toMatchObject({ code: 'plan_limit_reached', extra: { limit: 'max_agents', project_id: SALES } });
    expect(await agents.find(ACME, first.id)).toBeNull();
    expect((await agents.restore(ACME, first.id, 2))?.deletedAt).toBeNull();
    expect(await agents.projectOf('acct_other', first.id)).toBeNull();
  });

  it('holds the ceiling under parallel creates', async () => {
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => agents.create(ACME, spec(`p${i}`), { id: SALES, maxAgents: 2 })));

    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    expect((await agents.list(ACME, 10, undefined, SALES)).items).toHaveLength(2);
  });

  it('puts agents created without a project, and those stored before projects, in the account’s default project', async () => {
    const plain = await agents.create(ACME, spec('plain'));
    const old = await agents.create(ACME, spec('old'), { id: SALES, maxAgents: 0 });
    await dataSource.query(`UPDATE agents SET project_id = NULL WHERE id = $1`, [old.id]);

    expect(plain.projectId).toBeNull();
    const inDefault = await agents.list(ACME, 10, undefined, defaultProjectId(ACME));
    expect(inDefault.items.map((a) => a.name).sort()).toEqual(['old', 'plain']);
    expect((await agents.list(ACME, 10, undefined, SALES)).items).toEqual([]);
  });
});
