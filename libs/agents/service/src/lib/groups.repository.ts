import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { keysetPage, newId, Page, Position } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { AgentEntity, AgentGroupEntity } from './agent.entity';
import { applyPatch } from './spec/agent-document';
import { GroupSpec } from './spec/agent-spec';

/** Agent groups, scoped to the account like agents. */
@Injectable()
export class GroupsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async create(accountId: string, spec: GroupSpec): Promise<AgentGroupEntity> {
    const now = new Date();
    const group = Object.assign(new AgentGroupEntity(), { id: newId('grp'), accountId, spec, createdAt: now, updatedAt: now });
    await this.dataSource.getRepository(AgentGroupEntity).insert(group as QueryDeepPartialEntity<AgentGroupEntity>);
    return group;
  }

  find(accountId: string, id: string, manager: EntityManager = this.dataSource.manager): Promise<AgentGroupEntity | null> {
    return manager.getRepository(AgentGroupEntity).findOneBy({ id, accountId });
  }

  /** Groups by (account, id) in one query, keyed `account/id`; keys with no such group are simply absent. */
  async findMany(keys: { accountId: string; id: string }[]): Promise<Map<string, AgentGroupEntity>> {
    if (!keys.length) return new Map();
    const rows: { id: string; account_id: string; spec: GroupSpec; created_at: Date; updated_at: Date }[] = await this.dataSource.query(
      `SELECT g.id, g.account_id, g.spec, g.created_at, g.updated_at
         FROM unnest($1::text[], $2::text[]) AS k(account_id, id)
         JOIN agent_groups g ON g.id = k.id AND g.account_id = k.account_id`,
      [keys.map((k) => k.accountId), keys.map((k) => k.id)],
    );
    const groups = rows.map((r) =>
      Object.assign(new AgentGroupEntity(), { id: r.id, accountId: r.account_id, spec: r.spec, createdAt: r.created_at, updatedAt: r.updated_at }),
    );
    return new Map(groups.map((g) => [`${g.accountId}/${g.id}`, g]));
  }

  async update(accountId: string, id: string, patch: Partial<GroupSpec>, check: (spec: GroupSpec) => Promise<void>): Promise<AgentGroupEntity | null> {
    return this.dataSource.transaction(async (m) => {
      const group = await this.lock(m, accountId, id);
      if (!group) return null;
      group.spec = applyPatch(group.spec, patch);
      await check(group.spec);
      group.updatedAt = new Date();
      await m.save(AgentGroupEntity, group);
      return group;
    });
  }

  /**
   * Deleting a group that still has members is refused (409): it would silently change what those agents do on
   * their next call. Move or delete the members first.
   */
  async delete(accountId: string, id: string): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const group = await this.lock(m, accountId, id);
      if (!group) return false;
      const members = await m.getRepository(AgentEntity).countBy({ accountId, groupId: id, deletedAt: IsNull() });
      if (members > 0) {
        throw new AppError('conflict', `The group still has ${members} member agent(s); move or delete them first.`, undefined, { members });
      }
      await m.delete(AgentGroupEntity, { id, accountId });
      return true;
    });
  }

  private lock(m: EntityManager, accountId: string, id: string): Promise<AgentGroupEntity | null> {
    return m
      .getRepository(AgentGroupEntity)
      .createQueryBuilder('g')
      .setLock('pessimistic_write')
      .where('g.id = :id AND g.account_id = :accountId', { id, accountId })
      .getOne();
  }

  list(accountId: string, limit: number, after?: Position): Promise<Page<AgentGroupEntity>> {
    const qb = this.dataSource.getRepository(AgentGroupEntity).createQueryBuilder('g').where('g.account_id = :accountId', { accountId });
    return keysetPage(qb, 'g', limit, after);
  }
}
