import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { projectLimitReached, webhooksV1 } from '@parley/contracts';
import { OutboxRelay } from '@parley/messaging';
import { newId, Page, Sealer } from '@parley/persistence';
import { webhookUrlProblem, WebhookUrlRules } from '@parley/egress';
import { AppError, pagePosition } from '@parley/rpc';
import { DeliveriesRepository } from './deliveries.repository';
import { EndpointEntity } from './entities';
import { EndpointsRepository } from './endpoints.repository';

/** The deployment's WebhookUrlRules (EGRESS_ALLOWLIST, WEBHOOK_ALLOW_HTTP_HOSTS), injected. */
export const WEBHOOK_URL_RULES = Symbol('WEBHOOK_URL_RULES');

export interface EndpointFields {
  url?: string;
  events?: string[];
  description?: string;
  enabled?: boolean;
  metadata?: Record<string, string>;
}

/** The project an endpoint is created in and its ceiling on endpoints (0: none), from the gateway. */
export interface EndpointProject {
  id: string;
  maxEndpoints: number;
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

/** Why a disabled endpoint's pending deliveries were cancelled, in its history. */
const DISABLED = 'the endpoint was disabled';

/** Webhook endpoints and their signing secrets, scoped to the account where they are read. */
@Injectable()
export class EndpointsDomain {
  constructor(
    private readonly endpoints: EndpointsRepository,
    private readonly deliveries: DeliveriesRepository,
    private readonly sealer: Sealer,
    @Inject(WEBHOOK_URL_RULES) private readonly rules: WebhookUrlRules,
    /** Nudged after a refusal committed project.limit_reached, so it goes out at once rather than on the next poll. */
    @Optional() private readonly relay?: OutboxRelay,
  ) {}

  /**
   * Always a new endpoint: several endpoints may share a URL (each with its own events, secret and history). In
   * `project` (absent: the default project), refused (402, limit max_webhook_endpoints) at its ceiling.
   */
  async create(accountId: string, fields: EndpointFields, project?: EndpointProject): Promise<{ endpoint: EndpointEntity; secret: string }> {
    await this.checkUrl(fields.url);
    const outcome = await this.endpoints.transaction(
      async (m) => (await this.refusalAtCeiling(m, accountId, project)) ?? this.insert(m, accountId, fields, null, project?.id ?? null),
    );
    // A refusal is committed, not thrown inside: its project.limit_reached event (and its mark) must be kept.
    if (outcome instanceof AppError) throw this.refused(outcome);
    return outcome;
  }

  /**
   * PUT: the endpoint with this URL is made to be exactly the given state (created when absent). When several
   * endpoints share the URL, which one is meant is ambiguous: 409 `conflict` naming them, so the caller PATCHes one.
   * Re-declaring never moves the failure count and never lifts an automatic disable (only PATCH `enabled: true`
   * does): a deploy script that declares its endpoints on every run must not defeat automatic disabling.
   */
  async declare(accountId: string, fields: EndpointFields, project?: EndpointProject): Promise<{ endpoint: EndpointEntity; created: boolean; secret?: string }> {
    const url = await this.checkUrl(fields.url);
    const outcome = await this.endpoints.transaction(async (m) => {
      await this.endpoints.lockUrl(m, accountId, url);
      const sharing = await this.endpoints.withUrl(m, accountId, url, 100);
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
      if (!existing) {
        const refused = await this.refusalAtCeiling(m, accountId, project);
        if (refused) return refused;
        return { ...(await this.insert(m, accountId, fields, null, project?.id ?? null)), created: true };
      }
      const wasEnabled = existing.enabled;
      const autoDisabled = !existing.enabled && existing.disabledReason !== null;
      Object.assign(existing, {
        events: fields.events ?? ['*'],
        description: fields.description ?? '',
        enabled: autoDisabled ? false : (fields.enabled ?? true),
        metadata: fields.metadata ?? {},
        updatedAt: new Date(),
      });
      await this.endpoints.save(m, existing);
      if (wasEnabled && !existing.enabled) await this.deliveries.cancelPending(m, existing.id, DISABLED);
      return { endpoint: existing, created: false };
    });
    if (outcome instanceof AppError) throw this.refused(outcome);
    return outcome;
  }

  /** The account's endpoint; a deleted one only when asked for (its history stays readable). */
  async get(accountId: string, id: string, m?: EntityManager, includeDeleted = false): Promise<EndpointEntity> {
    const endpoint = await this.endpoints.find(accountId, id, m, includeDeleted);
    if (!endpoint) throw AppError.notFound('webhook endpoint');
    return endpoint;
  }

  async update(accountId: string, id: string, patch: EndpointFields): Promise<EndpointEntity> {
    if (patch.url !== undefined) await this.checkUrl(patch.url);
    return this.endpoints.transaction(async (m) => {
      const endpoint = await this.get(accountId, id, m);
      const wasEnabled = endpoint.enabled;
      Object.assign(endpoint, patch, { updatedAt: new Date() });
      // Re-enabling starts afresh: the failure count resets; what was pending was cancelled when it was disabled.
      if (patch.enabled === true && !wasEnabled) Object.assign(endpoint, { disabledReason: null, consecutiveFailures: 0 });
      if (patch.enabled === false) endpoint.disabledReason = null;
      await this.endpoints.save(m, endpoint);
      if (wasEnabled && !endpoint.enabled) await this.deliveries.cancelPending(m, endpoint.id, DISABLED);
      return endpoint;
    });
  }

  /**
   * Soft delete: the row stays (disabled, without secrets) so its history stays readable and attempts in flight
   * still find it; its pending deliveries are cancelled in the same transaction.
   */
  async delete(accountId: string, id: string): Promise<void> {
    await this.endpoints.transaction(async (m) => {
      if (!(await this.endpoints.softDelete(m, accountId, id))) throw AppError.notFound('webhook endpoint');
      // Attempts of them still in flight are abandoned by the engine that runs them (DeliveryEngine).
      await this.deliveries.cancelPending(m, id, 'the endpoint was deleted');
    });
  }

  list(accountId: string, limit: number, after: string, projectId?: string): Promise<Page<EndpointEntity>> {
    return this.endpoints.list(accountId, limit, pagePosition(after), projectId);
  }

  /** A new secret; the current ones keep signing beside it for `overlapSeconds`. */
  async rotateSecret(accountId: string, id: string, overlapSeconds: number): Promise<{ endpoint: EndpointEntity; secret: string; previousExpiresAt: Date }> {
    return this.endpoints.transaction(async (m) => {
      const endpoint = await this.get(accountId, id, m);
      const previousExpiresAt = await this.endpoints.expireSecrets(m, id, overlapSeconds);
      const secret = newSecret();
      await this.endpoints.addSecret(m, id, this.sealer.seal(secret).sealed);
      return { endpoint, secret, previousExpiresAt };
    });
  }

  /** Secrets that sign a delivery now, newest first, per endpoint. */
  async activeSecrets(endpointIds: string[]): Promise<Map<string, string[]>> {
    const byEndpoint = new Map<string, string[]>();
    for (const r of await this.endpoints.activeSecrets(endpointIds)) {
      byEndpoint.set(r.endpointId, [...(byEndpoint.get(r.endpointId) ?? []), this.sealer.unseal({ sealed: r.sealed, hint: '' })]);
    }
    return byEndpoint;
  }

  /**
   * The endpoint that carries an agent's events to its `webhook_url`: the account's endpoint with that URL if
   * there is one, otherwise one made for the agent (listed like any endpoint; rotate its secret to read one).
   */
  async forAgentWebhook(accountId: string, agentId: string, url: string): Promise<EndpointEntity> {
    return this.endpoints.transaction(async (m) => {
      await this.endpoints.lockUrl(m, accountId, url);
      const [existing] = await this.endpoints.withUrl(m, accountId, url, 1);
      if (existing) return existing;
      await this.checkUrl(url);
      const { endpoint } = await this.insert(m, accountId, { url, description: `webhook_url of agent ${agentId}` }, agentId);
      return endpoint;
    });
  }

  /**
   * The refusal (402, limit max_webhook_endpoints) when `project` already holds its ceiling's worth of endpoints,
   * counted under the account's lock. The first refusal enqueues `project.limit_reached` (once, until an endpoint is
   * created under the ceiling again, which clears the mark), in this transaction: the caller commits it.
   */
  /** A committed refusal at the ceiling: its event, if it enqueued one, is relayed now. */
  private refused(refusal: AppError): AppError {
    this.relay?.nudge();
    return refusal;
  }

  private async refusalAtCeiling(m: EntityManager, accountId: string, project: EndpointProject | undefined): Promise<AppError | undefined> {
    if (!project?.maxEndpoints) return undefined;
    const live = await this.endpoints.countInProject(m, accountId, project.id);
    if (live < project.maxEndpoints) {
      await this.endpoints.clearLimitReport(m, project.id);
      return undefined;
    }
    const data = { project_id: project.id, limit: 'max_webhook_endpoints' as const, ceiling: project.maxEndpoints };
    await this.endpoints.reportLimitOnce(m, projectLimitReached(newId('evt'), accountId, data));
    return new AppError(
      'plan_limit_reached',
      `Project ${project.id} already has ${live} webhook endpoints, its ceiling (max_webhook_endpoints: ${project.maxEndpoints}).`,
      undefined,
      data,
    );
  }

  private async insert(
    m: EntityManager,
    accountId: string,
    fields: EndpointFields,
    ownerAgentId: string | null = null,
    projectId: string | null = null,
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
      projectId,
      deletedAt: null,
      createdAt: now,
      updatedAt: now,
    });
    const secret = newSecret();
    await this.endpoints.insert(m, endpoint, this.sealer.seal(secret).sealed);
    return { endpoint, secret };
  }

  /** Registration-time check of an endpoint URL (see webhookUrlProblem); 422 on `url`. Returns the URL that passed. */
  private async checkUrl(url: string | undefined): Promise<string> {
    const problem = url ? await this.urlProblem(url) : 'is required';
    if (problem || !url) throw AppError.validation([{ field: 'url', message: problem ?? 'is required' }]);
    return url;
  }

  /** Why this URL would be refused, or undefined. */
  urlProblem(url: string): Promise<string | undefined> {
    return webhookUrlProblem(url, this.rules);
  }
}
