import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager, IsNull } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { webhooksV1 } from '@parley/contracts';
import { keysetPage, newId, Page, Sealer } from '@parley/persistence';
import { webhookUrlProblem, WebhookUrlRules } from '@parley/egress';
import { AppError, pagePosition } from '@parley/rpc';
import { CLOCK, DbClock, sqlNow } from './db-clock';
import { EndpointEntity } from './entities';

/** The deployment's WebhookUrlRules (EGRESS_ALLOWLIST, WEBHOOK_ALLOW_HTTP_HOSTS), injected. */
export const WEBHOOK_URL_RULES = Symbol('WEBHOOK_URL_RULES');

export interface EndpointFields {
  url?: string;
  events?: string[];
  description?: string;
  enabled?: boolean;
  metadata?: Record<string, string>;
}

export function fieldsOf(input: webhooksV1.EndpointInput | undefined): EndpointFields {
  const f: EndpointFields = {};
  if (input?.url !== undefined) f.url = input.url;
  if (input?.events) f.events = input.events.items;
  if (input?.description !== undefined) f.description = input.description;
  if (input?.enabled !== undefined) f.enabled = input.enabled;
  if (input?.metadata) f.metadata = { ...input.metadata.entries };
  return f;
}

const newSecret = () => `whsec_${randomBytes(24).toString('base64url')}`;

/** Webhook endpoints and their signing secrets, scoped to the account where they are read. */
@Injectable()
export class EndpointsDomain {
  constructor(
    private readonly dataSource: DataSource,
    private readonly sealer: Sealer,
    @Inject(WEBHOOK_URL_RULES) private readonly rules: WebhookUrlRules,
    @Inject(CLOCK) private readonly clock: DbClock,
  ) {}

  /** Always a new endpoint: several endpoints may share a URL (each with its own events, secret and history). */
  async create(accountId: string, fields: EndpointFields): Promise<{ endpoint: EndpointEntity; secret: string }> {
    await this.checkUrl(fields.url);
    return this.dataSource.transaction((m) => this.insert(m, accountId, fields));
  }

  /**
   * PUT: the endpoint with this URL is made to be exactly the given state (created when absent). When several
   * endpoints share the URL, which one is meant is ambiguous: 409 `conflict` naming them, so the caller PATCHes one.
   * Re-declaring never moves the failure count and never lifts an automatic disable (only PATCH `enabled: true`
   * does): a deploy script that declares its endpoints on every run must not defeat automatic disabling.
   */
  async declare(accountId: string, fields: EndpointFields): Promise<{ endpoint: EndpointEntity; created: boolean; secret?: string }> {
    await this.checkUrl(fields.url);
    return this.dataSource.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`${accountId}\n${fields.url}`]);
      const sharing = await m.find(EndpointEntity, {
        where: { accountId, url: fields.url, deletedAt: IsNull() },
        order: { createdAt: 'ASC', id: 'ASC' },
        take: 100,
      });
      if (sharing.length > 1) {
        const ids = sharing.map((e) => e.id);
        throw new AppError(
          'conflict',
          `${ids.length} endpoints of this account have this URL (${ids.join(', ')}); update the one you mean with PATCH /v1/webhook_endpoints/{id}.`,
          undefined,
          { endpoint_ids: ids },
        );
      }
      const [existing] = sharing;
      if (!existing) return { ...(await this.insert(m, accountId, fields)), created: true };
      const wasEnabled = existing.enabled;
      const autoDisabled = !existing.enabled && existing.disabledReason !== null;
      Object.assign(existing, {
        events: fields.events ?? ['*'],
        description: fields.description ?? '',
        enabled: autoDisabled ? false : (fields.enabled ?? true),
        metadata: fields.metadata ?? {},
        updatedAt: new Date(),
      });
      await m.save(EndpointEntity, existing);
      if (wasEnabled && !existing.enabled) await this.cancelPending(m, existing.id, 'the endpoint was disabled');
      return { endpoint: existing, created: false };
    });
  }

  /** The account's endpoint; a deleted one only when asked for (its history stays readable). */
  async get(accountId: string, id: string, m: EntityManager = this.dataSource.manager, includeDeleted = false): Promise<EndpointEntity> {
    const endpoint = await m.findOneBy(EndpointEntity, { id, accountId, ...(includeDeleted ? {} : { deletedAt: IsNull() }) });
    if (!endpoint) throw AppError.notFound('webhook endpoint');
    return endpoint;
  }

  async update(accountId: string, id: string, patch: EndpointFields): Promise<EndpointEntity> {
    if (patch.url !== undefined) await this.checkUrl(patch.url);
    return this.dataSource.transaction(async (m) => {
      const endpoint = await this.get(accountId, id, m);
      const wasEnabled = endpoint.enabled;
      Object.assign(endpoint, patch, { updatedAt: new Date() });
      // Re-enabling starts afresh: the failure count resets; what was pending was cancelled when it was disabled.
      if (patch.enabled === true && !wasEnabled) Object.assign(endpoint, { disabledReason: null, consecutiveFailures: 0 });
      if (patch.enabled === false) endpoint.disabledReason = null;
      await m.save(EndpointEntity, endpoint);
      if (wasEnabled && !endpoint.enabled) await this.cancelPending(m, endpoint.id, 'the endpoint was disabled');
      return endpoint;
    });
  }

  /**
   * Soft delete: the row stays (disabled, without secrets) so its history stays readable and attempts in flight
   * still find it; its pending deliveries are cancelled in the same transaction.
   */
  async delete(accountId: string, id: string): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const [deleted] = await m.query(
        `WITH d AS (UPDATE endpoints SET deleted_at = ${sqlNow(3)}, enabled = false, updated_at = now()
                     WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL RETURNING id)
         SELECT id FROM d`,
        [id, accountId, this.clock.fixedNow()],
      );
      if (!deleted) throw AppError.notFound('webhook endpoint');
      await m.query(`DELETE FROM endpoint_secrets WHERE endpoint_id = $1`, [id]);
      await this.cancelPending(m, id, 'the endpoint was deleted');
    });
  }

  /**
   * Disabling or deleting an endpoint ends its pending deliveries as cancelled, recorded with the reason in its
   * history; attempts of them still in flight are abandoned by the engine that runs them (DeliveryEngine).
   */
  private async cancelPending(m: EntityManager, endpointId: string, reason: string): Promise<void> {
    await m.query(
      `UPDATE deliveries SET state = 'cancelled', locked_until = NULL, settled_at = ${sqlNow(3)}, settle_reason = $2
        WHERE endpoint_id = $1 AND state = 'pending'`,
      [endpointId, reason, this.clock.fixedNow()],
    );
  }

  list(accountId: string, limit: number, after: string): Promise<Page<EndpointEntity>> {
    const qb = this.dataSource
      .getRepository(EndpointEntity)
      .createQueryBuilder('e')
      .where('e.account_id = :accountId AND e.deleted_at IS NULL', { accountId });
    return keysetPage(qb, 'e', limit, pagePosition(after));
  }

  /** A new secret; the current ones keep signing beside it for `overlapSeconds`. */
  async rotateSecret(accountId: string, id: string, overlapSeconds: number): Promise<{ endpoint: EndpointEntity; secret: string; previousExpiresAt: Date }> {
    return this.dataSource.transaction(async (m) => {
      const endpoint = await this.get(accountId, id, m);
      const [{ until: previousExpiresAt }] = await m.query(
        `WITH t AS (SELECT ${sqlNow(3)} + $2::int * interval '1 second' AS until),
              u AS (UPDATE endpoint_secrets SET expires_at = LEAST(COALESCE(expires_at, t.until), t.until) FROM t WHERE endpoint_id = $1)
         SELECT until FROM t`,
        [id, overlapSeconds, this.clock.fixedNow()],
      );
      const secret = newSecret();
      await m.query(`INSERT INTO endpoint_secrets (endpoint_id, sealed) VALUES ($1, $2)`, [id, this.sealer.seal(secret).sealed]);
      return { endpoint, secret, previousExpiresAt };
    });
  }

  /** Secrets that sign a delivery now, newest first, per endpoint. */
  async activeSecrets(endpointIds: string[]): Promise<Map<string, string[]>> {
    const rows: { endpoint_id: string; sealed: string }[] = await this.dataSource.query(
      `SELECT endpoint_id, sealed FROM endpoint_secrets
        WHERE endpoint_id = ANY($1) AND (expires_at IS NULL OR expires_at > ${sqlNow(2)}) ORDER BY created_at DESC`,
      [endpointIds, this.clock.fixedNow()],
    );
    const byEndpoint = new Map<string, string[]>();
    for (const r of rows) byEndpoint.set(r.endpoint_id, [...(byEndpoint.get(r.endpoint_id) ?? []), this.sealer.unseal({ sealed: r.sealed, hint: '' })]);
    return byEndpoint;
  }

  /**
   * The endpoint that carries an agent's events to its `webhook_url`: the account's endpoint with that URL if
   * there is one, otherwise one made for the agent (listed like any endpoint; rotate its secret to read one).
   */
  async forAgentWebhook(accountId: string, agentId: string, url: string): Promise<EndpointEntity> {
    return this.dataSource.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`${accountId}\n${url}`]);
      const [existing] = await m.find(EndpointEntity, { where: { accountId, url, deletedAt: IsNull() }, order: { createdAt: 'ASC', id: 'ASC' }, take: 1 });
      if (existing) return existing;
      await this.checkUrl(url);
      const { endpoint } = await this.insert(m, accountId, { url, description: `webhook_url of agent ${agentId}` }, agentId);
      return endpoint;
    });
  }

  private async insert(
    m: EntityManager,
    accountId: string,
    fields: EndpointFields,
    ownerAgentId: string | null = null,
  ): Promise<{ endpoint: EndpointEntity; secret: string }> {
    const now = new Date();
    const endpoint = Object.assign(new EndpointEntity(), {
      id: newId('whep'),
      accountId,
      url: fields.url,
      events: fields.events ?? ['*'],
      description: fields.description ?? '',
      enabled: fields.enabled ?? true,
      metadata: fields.metadata ?? {},
      disabledReason: null,
      consecutiveFailures: 0,
      ownerAgentId,
      deletedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    await m.insert(EndpointEntity, endpoint as QueryDeepPartialEntity<EndpointEntity>);
    const secret = newSecret();
    await m.query(`INSERT INTO endpoint_secrets (endpoint_id, sealed) VALUES ($1, $2)`, [endpoint.id, this.sealer.seal(secret).sealed]);
    return { endpoint, secret };
  }

  /** Registration-time check of an endpoint URL (see webhookUrlProblem); 422 on `url`. */
  private async checkUrl(url: string | undefined): Promise<void> {
    const problem = url ? await this.urlProblem(url) : 'is required';
    if (problem) throw AppError.validation([{ field: 'url', message: problem }]);
  }

  /** Why this URL would be refused, or undefined. */
  urlProblem(url: string): Promise<string | undefined> {
    return webhookUrlProblem(url, this.rules);
  }
}
