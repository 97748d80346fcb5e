import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In, IsNull } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { WebhookEvent, webhookEventSubject } from '@parley/contracts';
import { enqueueOutbox } from '@parley/messaging';
import { keysetPage, Page, Position, projectCondition } from '@parley/persistence';
import { CLOCK, DbClock, sqlNow } from './db-clock';
import { EndpointEntity } from './entities';

/**
 * Webhook endpoints and their sealed signing secrets (tables endpoints, endpoint_secrets). Reads by account see
 * only that account's endpoints. Methods that take a manager run inside the caller's transaction
 * (EndpointsRepository.transaction); times come from the database's clock (DbClock).
 */
@Injectable()
export class EndpointsRepository {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(CLOCK) private readonly clock: DbClock,
  ) {}

  transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /** Serialises the transaction with every other one that locks this account's URL (until it ends). */
  async lockUrl(m: EntityManager, accountId: string, url: string): Promise<void> {
    await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`${accountId}\n${url}`]);
  }

  /** The account's live endpoints with this URL, oldest first (at most `take`). */
  withUrl(m: EntityManager, accountId: string, url: string, take: number): Promise<EndpointEntity[]> {
    return m.find(EndpointEntity, { where: { accountId, url, deletedAt: IsNull() }, order: { createdAt: 'ASC', id: 'ASC' }, take });
  }

  /** The account's endpoint; a deleted one only when asked for. Null when none. */
  find(accountId: string, id: string, m: EntityManager = this.dataSource.manager, includeDeleted = false): Promise<EndpointEntity | null> {
    return m.findOneBy(EndpointEntity, { id, accountId, ...(includeDeleted ? {} : { deletedAt: IsNull() }) });
  }

  /** Endpoints by id, whatever their account or state. */
  findByIds(ids: string[]): Promise<EndpointEntity[]> {
    return ids.length ? this.dataSource.getRepository(EndpointEntity).findBy({ id: In(ids) }) : Promise.resolve([]);
  }

  /** The live endpoints of these accounts that are not an agent's own (those receive only their agent's events). */
  forAccounts(accountIds: string[]): Promise<EndpointEntity[]> {
    return this.dataSource.getRepository(EndpointEntity).findBy({ accountId: In(accountIds), ownerAgentId: IsNull(), deletedAt: IsNull() });
  }

  /** Live endpoints, newest first; `projectId`: only that project's (endpoints without one are the default project's). */
  list(accountId: string, limit: number, after: Position | undefined, projectId?: string): Promise<Page<EndpointEntity>> {
    const qb = this.dataSource
      .getRepository(EndpointEntity)
      .createQueryBuilder('e')
      .where('e.account_id = :accountId AND e.deleted_at IS NULL', { accountId });
    if (projectId) qb.andWhere(projectCondition('e.project_id', accountId, projectId, ':projectId'), { projectId });
    return keysetPage(qb, 'e', limit, after);
  }

  /** The project's live endpoints (an agent's own not counted), under the account's lock until the transaction ends. */
  async countInProject(m: EntityManager, accountId: string, projectId: string): Promise<number> {
    await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`webhook-endpoints:${accountId}`]);
    const [{ live }]: { live: number }[] = await m.query(
      `SELECT count(*)::int AS live FROM endpoints
        WHERE account_id = $1 AND deleted_at IS NULL AND owner_agent_id IS NULL AND ${projectCondition('project_id', accountId, projectId, '$2')}`,
      [accountId, projectId],
    );
    return live;
  }

  /**
   * Enqueues `event` (the project's project.limit_reached) unless the project's ceiling was already reported since
   * an endpoint was last created under it; in the caller's transaction, under the lock countInProject took, so
   * parallel refusals send it once.
   */
  async reportLimitOnce(m: EntityManager, event: WebhookEvent<'project.limit_reached'>): Promise<void> {
    const first: unknown[] = await m.query(
      `INSERT INTO project_limits_reported (project_id, account_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING project_id`,
      [event.data.project_id, event.account_id],
    );
    if (first.length) await enqueueOutbox(m, webhookEventSubject(event.type), event, event.id);
  }

  /** The project is under its ceiling again: the next time it is reached is reported. */
  async clearLimitReport(m: EntityManager, projectId: string): Promise<void> {
    await m.query(`DELETE FROM project_limits_reported WHERE project_id = $1`, [projectId]);
  }

  /** A new endpoint with its first (sealed) secret. */
  async insert(m: EntityManager, endpoint: EndpointEntity, sealedSecret: string): Promise<void> {
    await m.insert(EndpointEntity, endpoint as QueryDeepPartialEntity<EndpointEntity>);
    await this.addSecret(m, endpoint.id, sealedSecret);
  }

  async save(m: EntityManager, endpoint: EndpointEntity): Promise<void> {
    await m.save(EndpointEntity, endpoint);
  }

  /**
   * Marks the account's live endpoint deleted (and disabled) and drops its secrets; the row stays for its history.
   * False when there is no such live endpoint.
   */
  async softDelete(m: EntityManager, accountId: string, id: string): Promise<boolean> {
    const [deleted] = await m.query(
      `WITH d AS (UPDATE endpoints SET deleted_at = ${sqlNow(3)}, enabled = false, updated_at = now()
                   WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL RETURNING id)
       SELECT id FROM d`,
      [id, accountId, this.clock.fixedNow()],
    );
    if (!deleted) return false;
    await m.query(`DELETE FROM endpoint_secrets WHERE endpoint_id = $1`, [id]);
    return true;
  }

  /** Makes the endpoint's current secrets expire `overlapSeconds` from now (sooner ones keep their time); returns that time. */
  async expireSecrets(m: EntityManager, endpointId: string, overlapSeconds: number): Promise<Date> {
    const [{ until }] = await m.query(
      `WITH t AS (SELECT ${sqlNow(3)} + $2::int * interval '1 second' AS until),
            u AS (UPDATE endpoint_secrets SET expires_at = LEAST(COALESCE(expires_at, t.until), t.until) FROM t WHERE endpoint_id = $1)
       SELECT until FROM t`,
      [endpointId, overlapSeconds, this.clock.fixedNow()],
    );
    return until;
  }

  async addSecret(m: EntityManager, endpointId: string, sealed: string): Promise<void> {
    await m.query(`INSERT INTO endpoint_secrets (endpoint_id, sealed) VALUES ($1, $2)`, [endpointId, sealed]);
  }

  /** The sealed secrets that sign a delivery now, newest first. */
  async activeSecrets(endpointIds: string[]): Promise<{ endpointId: string; sealed: string }[]> {
    const rows: { endpoint_id: string; sealed: string }[] = await this.dataSource.query(
      `SELECT endpoint_id, sealed FROM endpoint_secrets
        WHERE endpoint_id = ANY($1) AND (expires_at IS NULL OR expires_at > ${sqlNow(2)}) ORDER BY created_at DESC`,
      [endpointIds, this.clock.fixedNow()],
    );
    return rows.map((r) => ({ endpointId: r.endpoint_id, sealed: r.sealed }));
  }
}
