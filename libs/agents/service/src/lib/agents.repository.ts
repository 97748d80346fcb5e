import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull } from 'typeorm';
import { AgentChanged, SUBJECTS, Subject } from '@parley/contracts';
import { enqueueOutbox, OutboxRelay } from '@parley/messaging';
import { newId } from '@parley/persistence';
import { AgentEntity } from './agent.entity';

export interface AgentFields {
  name: string;
  description: string;
  languages: { code: string }[];
  metadata: Record<string, string>;
}

export interface AgentPage {
  items: AgentEntity[];
  hasMore: boolean;
  /** Position after the last item: `<created_at ISO>|<id>`; empty on the last page. */
  next: string;
}

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

  async create(accountId: string, fields: AgentFields): Promise<AgentEntity> {
    const now = new Date();
    const agent = Object.assign(new AgentEntity(), {
      id: newId('agt'),
      accountId,
      ...fields,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
    });
    await this.inTransaction(SUBJECTS.agentCreated, agent, (m) => m.insert(AgentEntity, agent));
    return agent;
  }

  find(accountId: string, id: string): Promise<AgentEntity | null> {
    return this.dataSource.getRepository(AgentEntity).findOneBy({ id, accountId, deletedAt: IsNull() });
  }

  async update(accountId: string, id: string, patch: Partial<AgentFields>): Promise<AgentEntity | null> {
    let updated: AgentEntity | null = null;
    await this.dataSource.transaction(async (m) => {
      const current = await m
        .getRepository(AgentEntity)
        .createQueryBuilder('a')
        .setLock('pessimistic_write')
        .where('a.id = :id AND a.account_id = :accountId AND a.deleted_at IS NULL', { id, accountId })
        .getOne();
      if (!current) return;
      updated = Object.assign(current, patch, { updatedAt: new Date() });
      await m.save(AgentEntity, updated);
      await this.event(m, SUBJECTS.agentUpdated, updated);
    });
    if (updated) this.relay.nudge();
    return updated;
  }

  /** Soft delete: the row stays so call records keep referencing it. */
  async softDelete(accountId: string, id: string): Promise<boolean> {
    let deleted = false;
    await this.dataSource.transaction(async (m) => {
      const agent = await m.findOneBy(AgentEntity, { id, accountId, deletedAt: IsNull() });
      if (!agent) return;
      agent.deletedAt = new Date();
      await m.update(AgentEntity, { id, accountId }, { deletedAt: agent.deletedAt });
      await this.event(m, SUBJECTS.agentDeleted, agent);
      deleted = true;
    });
    if (deleted) this.relay.nudge();
    return deleted;
  }

  /** Newest first, keyset-paginated on (created_at, id) so inserts and deletes never shift a page. */
  async list(accountId: string, limit: number, after?: { createdAt: Date; id: string }): Promise<AgentPage> {
    const qb = this.dataSource
      .getRepository(AgentEntity)
      .createQueryBuilder('a')
      .where('a.account_id = :accountId AND a.deleted_at IS NULL', { accountId })
      .orderBy('a.created_at', 'DESC')
      .addOrderBy('a.id', 'DESC')
      .limit(limit + 1);
    if (after) qb.andWhere('(a.created_at, a.id) < (:createdAt, :afterId)', { createdAt: after.createdAt, afterId: after.id });
    const rows = await qb.getMany();
    const items = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    const last = items.at(-1);
    return { items, hasMore, next: hasMore && last ? `${last.createdAt.toISOString()}|${last.id}` : '' };
  }

  private async inTransaction(subject: Subject<AgentChanged>, agent: AgentEntity, write: (m: EntityManager) => Promise<unknown>) {
    await this.dataSource.transaction(async (m) => {
      await write(m);
      await this.event(m, subject, agent);
    });
    this.relay.nudge();
  }

  private event(m: EntityManager, subject: Subject<AgentChanged>, agent: AgentEntity): Promise<void> {
    const at = agent.deletedAt ?? agent.updatedAt;
    return enqueueOutbox(
      m,
      subject,
      { account_id: agent.accountId, agent_id: agent.id, at: at.toISOString() },
      newId('msg'),
    );
  }
}
