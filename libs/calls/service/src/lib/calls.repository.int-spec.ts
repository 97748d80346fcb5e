import { DataSource, EntityManager } from 'typeorm';
import { OutboxRecord } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallsRepository } from './calls.repository';
import { CallEntity, CallTurnEntity } from './entities';
import { CALLS_MIGRATIONS } from './migrations';

/** The calls repository's writes of a locked call, on a real PostgreSQL. */
describe('CallsRepository: saving a locked call (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let repository: CallsRepository;
  let n = 0;

  beforeAll(async () => {
    db = await createTestDatabase('parley_calls_repository');
    dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
    repository = new CallsRepository(dataSource);
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  async function placed(): Promise<string> {
    const id = `call_repo_${++n}`;
    await repository.transaction((m) =>
      repository.insert(m, id, {
        accountId: 'acc_repo',
        agentId: 'agt_repo',
        direction: 'outbound',
        to: '+15550100001',
        from: '+15550100002',
        status: 'ringing',
        carrier: 'twilio',
        carrierCallId: `CA${n}`,
        recordingEnabled: false,
        variables: { name: 'Sam' },
        metadata: { order: '1' },
      }),
    );
    return id;
  }

  async function lockedCall(m: EntityManager, id: string): Promise<{ call: CallEntity; now: Date }> {
    const locked = await repository.lockAt(m, 'acc_repo', id);
    if (!locked) throw new Error(`no call ${id}`);
    return locked;
  }

  const read = (id: string) => dataSource.getRepository(CallEntity).findOneByOrFail({ id });

  it('writes only the columns changed since the lock, in one statement, without reading the row again', async () => {
    const id = await placed();
    const statements: string[] = [];
    await repository.transaction(async (m) => {
      const { call, now } = await lockedCall(m, id);
      call.status = 'in_progress';
      call.answeredAt = now;
      call.turns += 2;
      call.usageTtsCharacters = 120;
      call.variables['name'] = 'Alex'; // a JSON column changed in place
      // A column the domain did not touch, written meanwhile in the same transaction: save must leave it alone.
      await m.query(`UPDATE calls SET metadata = '{"order":"2"}' WHERE id = $1`, [id]);
      const runner = m.queryRunner;
      if (!runner) throw new Error('a transaction has a query runner');
      const query = runner.query.bind(runner);
      runner.query = ((sql: string, ...rest: unknown[]) => {
        statements.push(sql);
        return (query as (...a: unknown[]) => Promise<unknown>)(sql, ...rest);
      }) as typeof query;
      await repository.save(m, call);
      // Saved again with nothing changed since: no statement.
      await repository.save(m, call);
      runner.query = query;
    });

    expect(statements).toHaveLength(1);
    const [, set] = /^UPDATE "calls"\."calls" SET (.*) WHERE "id" = \$\d+$/.exec(statements[0]) ?? [];
    expect(set.split(', ').map((c) => c.split(' = ')[0]).sort()).toEqual(['"answered_at"', '"status"', '"turns"', '"usage_tts_characters"', '"variables"']);
    const stored = await read(id);
    expect(stored).toMatchObject({ status: 'in_progress', turns: 2, usageTtsCharacters: 120, variables: { name: 'Alex' }, metadata: { order: '2' } });
    expect(stored.answeredAt).toBeInstanceOf(Date);
  });

  it('sets a column back to null', async () => {
    const id = await placed();
    await repository.transaction(async (m) => {
      const { call } = await lockedCall(m, id);
      call.carrierCallId = null;
      await repository.save(m, call);
    });
    expect((await read(id)).carrierCallId).toBeNull();
  });

  it('saves a call it did not lock whole, as before', async () => {
    const id = await placed();
    const call = await read(id);
    call.status = 'ended';
    await repository.transaction((m) => repository.save(m, call));
    expect((await read(id)).status).toBe('ended');
  });
});
