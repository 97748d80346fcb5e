import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { AgentChanged, projectLimitReached, SUBJECTS, Subject, webhookEventSubject } from '@parley/contracts';
import { enqueueOutbox, OutboxRelay } from '@parley/messaging';
import { defaultProjectId, isWellFormedId, keysetPage, newId, Page, Position, projectCondition } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { AgentEntity } from './agent.entity';
import { readIsolated } from './isolated-batch';
import { AgentSpec } from './spec/agent-spec';
import { applyPatch } from './spec/agent-document';

export type AgentPage = Page<AgentEntity>;

interface AgentRow {
  id: string;
  account_id: string;
  name: string;
  spec: AgentSpec;
  group_id: string | null;
  project_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A change to a stored document: a patch, or a function of the current document (run under the row lock). */
export type AgentChange = Partial<AgentSpec> | ((current: AgentSpec, manager: EntityManager) => AgentSpec | Promise<AgentSpec>);

/**
 * Every query takes the account: scoping happens where data is read, so another account's agent is simply
 * absent (the same "not found" as an id that never existed). Changes and their events commit together.
 */
@Injectable()
export class AgentsRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly relay: OutboxRelay,
  ) {}

  /**
   * Creates the agent in `project.id`; with `project.maxAgents` (0: none) refuses it (402 plan_limit_reached, limit
   * max_agents) when the project already holds that many live agents, counted under the account's lock so parallel
   * creates cannot pass the ceiling together. The first refusal enqueues `project.limit_reached`; the next ones do
   * not, until an agent is created under the ceiling again. Absent: the account's default project, no ceiling.
   */
  async create(accountId: string, spec: AgentSpec, project?: { id: string; maxAgents: number }): Promise<AgentEntity> {
    const now = new Date();
    const agent = Object.assign(new AgentEntity(), {
      id: newId('agt'),
      accountId,
      name: spec.name,
      spec,
      groupId: spec.group_id ?? null,
      projectId: project?.id ?? null,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
    });
    let refused: AppError | undefined;
    await this.transaction(async (m) => {
      if (project && project.maxAgents > 0) {
        refused = await this.refusalAtCeiling(m, accountId, project);
        // Committed, not thrown: the refusal's project.limit_reached event (and its mark) must be kept.
        if (refused) return;
      }
      // The document's open-ended `value` fields defeat TypeORM's deep-partial typing; the entity is complete.
      await m.insert(AgentEntity, agent as QueryDeepPartialEntity<AgentEntity>);
      await this.event(m, SUBJECTS.agentCreated, agent);
    });
    if (refused) throw refused;
    return agent;
  }

  private async refusalAtCeiling(m: EntityManager, accountId: string, project: { id: string; maxAgents: number }): Promise<AppError | undefined> {
    await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`agents:${accountId}`]);
    const [{ live }]: { live: number }[] = await m.query(
      `SELECT count(*)::int AS live FROM agents WHERE account_id = $1 AND deleted_at IS NULL AND ${projectCondition('project_id', accountId, project.id, '$2')}`,
      [accountId, project.id],
    );
    if (live < project.maxAgents) {
      await m.query(`DELETE FROM project_limits_reported WHERE project_id = $1`, [project.id]);
      return undefined;
    }
    const first: unknown[] = await m.query(
      `INSERT INTO project_limits_reported (project_id, account_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING project_id`,
      [project.id, accountId],
    );
    if (first.length) {
      const event = projectLimitReached(newId('evt'), accountId, { project_id: project.id, limit: 'max_agents', ceiling: project.maxAgents });
      await enqueueOutbox(m, webhookEventSubject(event.type), event, event.id);
    }
    return new AppError(
      'plan_limit_reached',
      `Project ${project.id} already has ${live} agents, its ceiling (max_agents: ${project.maxAgents}).`,
      undefined,
      { limit: 'max_agents', project_id: project.id, ceiling: project.maxAgents },
    );
  }

  async find(accountId: string, id: string): Promise<AgentEntity | null> {
    const [agent] = await this.findMany([{ accountId, id }]);
    if (agent instanceof Error) throw agent;
    return agent;
  }

  /**
   * Live agents by (account, id), one result per key in order: null where the account has no such agent, an Error
   * where that key's read alone failed. Reads of many accounts share this, so no key may fail another: an id newId
   * could not have given is null without being sent, and a statement that fails is read again key by key.
   */
  async findMany(keys: { accountId: string; id: string }[]): Promise<(AgentEntity | null | Error)[]> {
    const possible = keys.filter((k) => isWellFormedId('agt', k.id));
    if (!possible.length) return keys.map(() => null);
    const read = await readIsolated(
      possible,
      (ks) => this.select(ks),
      async (k) => (await this.select([k]))[0],
    );
    const byKey = new Map(possible.map((k, i) => [k, read[i]]));
    return keys.map((k) => byKey.get(k) ?? null);
  }

  /** The API's hottest read, batched: one plain SQL statement for all keys, without the query builder's cost. */
  private async select(keys: readonly { accountId: string; id: string }[]): Promise<(AgentEntity | null)[]> {
    const rows: AgentRow[] = await this.dataSource.query(
      `SELECT a.id, a.account_id, a.name, a.spec, a.group_id, a.project_id, a.created_at, a.updated_at
         FROM unnest($1::text[], $2::text[]) AS k(account_id, id)
         JOIN agents a ON a.id = k.id AND a.account_id = k.account_id AND a.deleted_at IS NULL`,
      [keys.map((k) => k.accountId), keys.map((k) => k.id)],
    );
    const found = new Map(rows.map((row) => [`${row.account_id}/${row.id}`, row]));
    return keys.map((k) => {
      const row = found.get(`${k.accountId}/${k.id}`);
      return row
        ? Object.assign(new AgentEntity(), {
            id: row.id,
            accountId: row.account_id,
            name: row.name,
            spec: row.spec,
            groupId: row.group_id,
            projectId: row.project_id,
            createdAt: row.created_at,
            updatedAt: row.updated_at,
            deletedAt: null,
          })
        : null;
    });
  }

  /** The account of a live agent, looked up by id alone (carrier webhooks); null when none. */
  async accountOf(id: string): Promise<string | null> {
    const agent = await this.dataSource.getRepository(AgentEntity).findOne({ select: { accountId: true }, where: { id, deletedAt: IsNull() } });
    return agent?.accountId ?? null;
  }

  async update(accountId: string, id: string, change: AgentChange): Promise<AgentEntity | null> {
    return this.mutate(accountId, id, false, async (agent, m) => {
      agent.spec = typeof change === 'function' ? await change(agent.spec, m) : applyPatch(agent.spec, change);
      agent.name = agent.spec.name;
      agent.groupId = agent.spec.group_id ?? null;
      return SUBJECTS.agentUpdated;
    });
  }

  /** Soft delete: the row stays so call records keep referencing it, and restore can bring it back. */
  async softDelete(accountId: string, id: string): Promise<boolean> {
    const deleted = await this.mutate(accountId, id, false, async (agent) => {
      agent.deletedAt = new Date();
      return SUBJECTS.agentDeleted;
    });
    return deleted !== null;
  }

  /**
   * Brings a deleted agent back; an agent that is not deleted is returned unchanged. With `maxAgents` (its project's
   * ceiling; 0: none) it is refused as a create would be when the project already holds that many.
   */
  async restore(accountId: string, id: string, maxAgents = 0): Promise<AgentEntity | null> {
    let refused: AppError | undefined;
    const restored = await this.mutate(accountId, id, true, async (agent, m) => {
      if (!agent.deletedAt) return undefined;
      if (maxAgents > 0) refused = await this.refusalAtCeiling(m, accountId, { id: agent.projectId ?? defaultProjectId(accountId), maxAgents });
      if (refused) return undefined;
      agent.deletedAt = null;
      return SUBJECTS.agentCreated;
    });
    if (refused) {
      this.relay.nudge();
      throw refused;
    }
    return restored;
  }

  /** The project of the account's agent, deleted or not (the default project for one stored before projects); null: none. */
  async projectOf(accountId: string, id: string): Promise<string | null> {
    const agent = await this.dataSource.getRepository(AgentEntity).findOne({ select: { projectId: true }, where: { id, accountId } });
    return agent ? (agent.projectId ?? defaultProjectId(accountId)) : null;
  }

  /** Live agents, newest first; `projectId`: only that project's (agents stored before projects are the default's). */
  list(accountId: string, limit: number, after?: Position, projectId?: string): Promise<AgentPage> {
    const qb = this.dataSource
      .getRepository(AgentEntity)
      .createQueryBuilder('a')
      .where('a.account_id = :accountId AND a.deleted_at IS NULL', { accountId });
    if (projectId) qb.andWhere(projectCondition('a.project_id', accountId, projectId, ':projectId'), { projectId });
    return keysetPage(qb, 'a', limit, after);
  }

  /** Live members of a group. */
  members(accountId: string, groupId: string, manager: EntityManager = this.dataSource.manager): Promise<AgentEntity[]> {
    return manager.getRepository(AgentEntity).find({
      where: { accountId, groupId, deletedAt: IsNull() },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
  }

  /**
   * Runs a change under the row lock and records its event in the same transaction. The change returns the
   * event to publish, or undefined to leave the row as it was.
   */
  private async mutate(
    accountId: string,
    id: string,
    includeDeleted: boolean,
    change: (agent: AgentEntity, m: EntityManager) => Promise<Subject<AgentChanged> | undefined>,
  ): Promise<AgentEntity | null> {
    let result: AgentEntity | null = null;
    let changed = false;
    await this.dataSource.transaction(async (m) => {
      const qb = m
        .getRepository(AgentEntity)
        .createQueryBuilder('a')
        .setLock('pessimistic_write')
        .where('a.id = :id AND a.account_id = :accountId', { id, accountId });
      if (!includeDeleted) qb.andWhere('a.deleted_at IS NULL');
      const agent = await qb.getOne();
      if (!agent) return;
      const subject = await change(agent, m);
      result = agent;
      if (!subject) return;
      agent.updatedAt = new Date();
      await m.save(AgentEntity, agent);
      await this.event(m, subject, agent);
      changed = true;
    });
    if (changed) this.relay.nudge();
    return result;
  }

  private async transaction(work: (m: EntityManager) => Promise<void>): Promise<void> {
    await this.dataSource.transaction(work);
    this.relay.nudge();
  }

  private event(m: EntityManager, subject: Subject<AgentChanged>, agent: AgentEntity): Promise<void> {
    const at = agent.deletedAt ?? agent.updatedAt;
    return enqueueOutbox(m, subject, { account_id: agent.accountId, agent_id: agent.id, at: at.toISOString() }, newId('msg'));
  }
}
