import { DataSource } from 'typeorm';
import { SUBJECTS } from '@parley/contracts';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { AgentEntity } from './agent.entity';
import { AgentsRepository } from './agents.repository';
import { AgentSpec as AgentFields } from './spec/agent-spec';
import { AGENTS_MIGRATIONS } from './migrations';

const ACME = 'acct_acme';
const GLOBEX = 'acct_globex';

function fields(name: string): AgentFields {
  return { name, description: `${name} description`, languages: [{ code: 'en-US' }], metadata: { team: 'support' } };
}

/** The controller's cursor format, `<created_at ISO>|<id>`. */
function position(next: string): { createdAt: Date; id: string } {
  const [iso, id] = next.split('|');
  return { createdAt: new Date(iso), id };
}

describe('AgentsRepository (real PostgreSQL)', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let relay: OutboxRelay;
  let agents: AgentsRepository;

  /** Every outbox record written so far, oldest first. */
  async function outbox(): Promise<OutboxRecord[]> {
    return dataSource.getRepository(OutboxRecord).find({ order: { seq: 'ASC' } });
  }

  async function rawRow(id: string): Promise<AgentEntity | null> {
    return dataSource.getRepository(AgentEntity).findOneBy({ id });
  }

  beforeAll(async () => {
    db = await createTestDatabase('parley_agents');
    dataSource = await openServiceDatabase(db.url, { schema: 'agents', entities: [AgentEntity, OutboxRecord], migrations: AGENTS_MIGRATIONS });
    // A stopped relay: the repository's nudge() after each commit does nothing, so records stay in the outbox for the
    // tests to read (a live relay on a bus nobody opened would hold its claimed rows locked forever).
    relay = new OutboxRelay(dataSource, new InProcessBus());
    await relay.stop();
    agents = new AgentsRepository(dataSource, relay);
  });

  beforeEach(async () => {
    await dataSource.query(`TRUNCATE agents, outbox`);
  });

  afterAll(async () => {
    await relay?.stop();
    await dataSource?.destroy();
    await db?.drop();
  });

  describe('account scoping', () => {
    it("treats another account's agent as absent: find, update and delete return nothing and change nothing", async () => {
      const agent = await agents.create(ACME, fields('Front desk'));
      const before = await rawRow(agent.id);
      const eventsBefore = (await outbox()).length;

      expect(await agents.find(GLOBEX, agent.id)).toBeNull();
      expect(await agents.update(GLOBEX, agent.id, { name: 'Hijacked' })).toBeNull();
      expect(await agents.softDelete(GLOBEX, agent.id)).toBe(false);

      expect(await rawRow(agent.id)).toEqual(before);
      expect(await agents.find(ACME, agent.id)).toMatchObject({ name: 'Front desk', deletedAt: null });
      expect(await outbox()).toHaveLength(eventsBefore);
    });

    it('reads many agents of several accounts in one query, each only in its own account, in the order asked', async () => {
      const acme = await agents.create(ACME, fields('Acme desk'));
      const globex = await agents.create(GLOBEX, fields('Globex desk'));
      const deleted = await agents.create(ACME, fields('Gone'));
      await agents.softDelete(ACME, deleted.id);

      const found = await agents.findMany([
        { accountId: GLOBEX, id: globex.id },
        { accountId: GLOBEX, id: acme.id },
        { accountId: ACME, id: acme.id },
        { accountId: ACME, id: deleted.id },
        { accountId: ACME, id: 'agt_never' },
        { accountId: ACME, id: acme.id },
      ]);

      expect(found.map((a) => a?.name ?? null)).toEqual(['Globex desk', null, 'Acme desk', null, null, 'Acme desk']);
      expect(found[2]).toMatchObject({ id: acme.id, accountId: ACME, deletedAt: null });
      expect(await agents.findMany([])).toEqual([]);
    });

    it('never sends an id newId could not have given, and answers it as no agent', async () => {
      const acme = await agents.create(ACME, fields('Acme desk'));
      const query = jest.spyOn(dataSource, 'query');

      const found = await agents.findMany([
        { accountId: ACME, id: 'agt_\u0000' },
        { accountId: ACME, id: `${acme.id.slice(0, -1)}\ud800` },
        { accountId: ACME, id: `whep_${acme.id.slice(4)}` },
        { accountId: ACME, id: `${acme.id}0` },
      ]);

      expect(found).toEqual([null, null, null, null]);
      expect(query).not.toHaveBeenCalled();
      query.mockRestore();
    });

    it('reads key by key when the statement fails, so the key PostgreSQL refuses fails alone', async () => {
      const acme = await agents.create(ACME, fields('Acme desk'));
      const globex = await agents.create(GLOBEX, fields('Globex desk'));

      const found = await agents.findMany([
        { accountId: ACME, id: acme.id },
        { accountId: 'acct_\u0000', id: acme.id },
        { accountId: GLOBEX, id: globex.id },
      ]);

      expect((found[0] as AgentEntity).name).toBe('Acme desk');
      expect(found[1]).toBeInstanceOf(Error);
      expect((found[2] as AgentEntity).name).toBe('Globex desk');
    });

    it("lists only the caller's agents", async () => {
      const mine = await agents.create(ACME, fields('Mine'));
      await agents.create(GLOBEX, fields('Theirs'));

      const page = await agents.list(ACME, 10);
      expect(page.items.map((a) => a.id)).toEqual([mine.id]);
      expect(page).toMatchObject({ hasMore: false, next: '' });
    });
  });

  describe('soft delete', () => {
    it('hides the agent from find and list but keeps the row', async () => {
      const kept = await agents.create(ACME, fields('Kept'));
      const gone = await agents.create(ACME, fields('Gone'));

      expect(await agents.softDelete(ACME, gone.id)).toBe(true);

      expect(await agents.find(ACME, gone.id)).toBeNull();
      expect((await agents.list(ACME, 10)).items.map((a) => a.id)).toEqual([kept.id]);
      const row = await rawRow(gone.id);
      expect(row).toMatchObject({ id: gone.id, accountId: ACME, name: 'Gone' });
      expect(row?.deletedAt).toBeInstanceOf(Date);
    });

    it('cannot be repeated, and a deleted agent can no longer be updated', async () => {
      const agent = await agents.create(ACME, fields('Once'));
      expect(await agents.softDelete(ACME, agent.id)).toBe(true);
      const deletedRow = await rawRow(agent.id);

      expect(await agents.softDelete(ACME, agent.id)).toBe(false);
      expect(await agents.update(ACME, agent.id, { name: 'Back from the dead' })).toBeNull();
      expect(await rawRow(agent.id)).toEqual(deletedRow);
    });
  });

  describe('events through the outbox', () => {
    it('writes exactly one outbox record per change, with the subject of the change', async () => {
      const agent = await agents.create(ACME, fields('Evented'));
      let events = await outbox();
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        subject: SUBJECTS.agentCreated.name,
        payload: { account_id: ACME, agent_id: agent.id, at: agent.createdAt.toISOString() },
        publishedAt: null,
      });

      const updated = await agents.update(ACME, agent.id, { description: 'changed' });
      events = await outbox();
      expect(events).toHaveLength(2);
      expect(events[1]).toMatchObject({
        subject: SUBJECTS.agentUpdated.name,
        payload: { account_id: ACME, agent_id: agent.id, at: updated?.updatedAt.toISOString() },
      });

      await agents.softDelete(ACME, agent.id);
      events = await outbox();
      expect(events).toHaveLength(3);
      const deletedAt = (await rawRow(agent.id))?.deletedAt;
      expect(events[2]).toMatchObject({
        subject: SUBJECTS.agentDeleted.name,
        payload: { account_id: ACME, agent_id: agent.id, at: deletedAt?.toISOString() },
      });
      expect(new Set(events.map((e) => e.messageId)).size).toBe(3);
    });

    it('writes one record per change even for many updates of one agent in quick succession', async () => {
      const agent = await agents.create(ACME, fields('Busy'));
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => agents.update(ACME, agent.id, { description: `rev ${i}` })));

      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      const updates = (await outbox()).filter((e) => e.subject === SUBJECTS.agentUpdated.name);
      expect(updates).toHaveLength(20);
    });

    it('commits the change and its event together: when the event cannot be written, the change is not made', async () => {
      const agent = await agents.create(ACME, fields('Atomic'));
      const before = await rawRow(agent.id);
      await dataSource.query(`
        CREATE FUNCTION agents.refuse_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'outbox unavailable'; END $$`);
      await dataSource.query(`CREATE TRIGGER refuse_outbox BEFORE INSERT ON agents.outbox FOR EACH ROW EXECUTE FUNCTION agents.refuse_outbox()`);
      try {
        await expect(agents.create(ACME, fields('Never stored'))).rejects.toThrow('outbox unavailable');
        await expect(agents.update(ACME, agent.id, { name: 'Never renamed' })).rejects.toThrow('outbox unavailable');
        await expect(agents.softDelete(ACME, agent.id)).rejects.toThrow('outbox unavailable');
      } finally {
        await dataSource.query(`DROP TRIGGER refuse_outbox ON agents.outbox`);
        await dataSource.query(`DROP FUNCTION agents.refuse_outbox()`);
      }

      expect(await dataSource.getRepository(AgentEntity).count()).toBe(1);
      expect(await rawRow(agent.id)).toEqual(before);
      expect(await outbox()).toHaveLength(1);
    });
  });

  describe('keyset pagination', () => {
    async function walk(accountId: string, limit: number, between?: () => Promise<void>): Promise<AgentEntity[][]> {
      const pages: AgentEntity[][] = [];
      let after: { createdAt: Date; id: string } | undefined;
      for (;;) {
        const page = await agents.list(accountId, limit, after);
        pages.push(page.items);
        if (!page.hasMore) {
          expect(page.next).toBe('');
          return pages;
        }
        expect(page.items).toHaveLength(limit);
        after = position(page.next);
        await between?.();
      }
    }

    it('walks every agent exactly once, newest first, page by page', async () => {
      const created: AgentEntity[] = [];
      for (let i = 0; i < 23; i++) created.push(await agents.create(ACME, fields(`Agent ${i}`)));
      await agents.create(GLOBEX, fields('Other account'));

      const pages = await walk(ACME, 5);

      expect(pages.map((p) => p.length)).toEqual([5, 5, 5, 5, 3]);
      const walked = pages.flat();
      // Newest first, ties on the same millisecond broken by id, exactly as the database orders them.
      const expected: { id: string }[] = await dataSource.query(
        `SELECT id FROM agents WHERE account_id = $1 ORDER BY created_at DESC, id DESC`,
        [ACME],
      );
      expect(walked.map((a) => a.id)).toEqual(expected.map((r) => r.id));
      expect(new Set(walked.map((a) => a.id))).toEqual(new Set(created.map((a) => a.id)));
      for (let i = 1; i < walked.length; i++) {
        expect(walked[i].createdAt.getTime()).toBeLessThanOrEqual(walked[i - 1].createdAt.getTime());
      }
    });

    it('returns an exact last page with no cursor when the count divides evenly', async () => {
      for (let i = 0; i < 6; i++) await agents.create(ACME, fields(`Agent ${i}`));

      const first = await agents.list(ACME, 3);
      expect(first.hasMore).toBe(true);
      const second = await agents.list(ACME, 3, position(first.next));
      expect(second).toMatchObject({ hasMore: false, next: '' });
      expect(second.items).toHaveLength(3);
    });

    it('returns every agent that existed throughout exactly once while agents are concurrently created and deleted', async () => {
      const original: AgentEntity[] = [];
      for (let i = 0; i < 60; i++) original.push(await agents.create(ACME, fields(`Original ${i}`)));
      const originalIds = new Set(original.map((a) => a.id));

      let walking = true;
      const churned: string[] = [];
      const churn = (async () => {
        let n = 0;
        while (walking) {
          const fresh = await agents.create(ACME, fields(`Churn ${n++}`));
          churned.push(fresh.id);
          // Delete agents that were never part of the original set (every other new one).
          if (churned.length % 2 === 0) expect(await agents.softDelete(ACME, churned[churned.length - 2])).toBe(true);
          await new Promise((r) => setImmediate(r));
        }
      })();

      let pages: AgentEntity[][];
      try {
        // Yield between pages so the churn really interleaves with the walk.
        pages = await walk(ACME, 7, () => new Promise((r) => setTimeout(r, 5)));
      } finally {
        walking = false;
        await churn;
      }

      const seen = pages.flat().map((a) => a.id);
      expect(churned.length).toBeGreaterThan(2);
      expect(seen.length).toBe(new Set(seen).size);
      expect(original.filter((a) => !seen.includes(a.id))).toEqual([]);
      expect(seen.filter((id) => originalIds.has(id))).toHaveLength(60);
      // Anything else seen was created during the walk.
      expect(seen.filter((id) => !originalIds.has(id) && !churned.includes(id))).toEqual([]);
    });
  });
});
