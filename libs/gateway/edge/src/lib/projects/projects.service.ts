import { Injectable } from '@nestjs/common';
import { defaultProjectId } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { AgentsClient } from '../agents/agents.client';
import { CallsClient } from '../calls/calls.client';
import { WebhooksClient } from '../webhooks/webhooks.client';
import { ProjectFields, ProjectRecord, ProjectsRepository } from './projects.repository';

/**
 * Projects: the gateway owns them and their ceilings. The calls service enforces `max_live_calls` on every new call
 * from its own copy, put here with each create and change, in the same transaction as the change (a failed put
 * changes nothing). `max_agents` travels with each CreateAgent, read under a share lock on the project so that a
 * change of the ceiling or a delete waits for the create.
 */
@Injectable()
export class ProjectsService {
  constructor(
    private readonly projects: ProjectsRepository,
    private readonly calls: CallsClient,
    private readonly agents: AgentsClient,
    private readonly webhooks: WebhooksClient,
  ) {}

  async list(accountId: string, limit: number, after?: { createdAt: Date; id: string }) {
    await this.ensureDefault(accountId);
    return this.projects.list(accountId, limit, after);
  }

  async get(accountId: string, id: string): Promise<ProjectRecord> {
    if (id === defaultProjectId(accountId)) await this.ensureDefault(accountId);
    const project = await this.projects.find(accountId, id);
    if (!project) throw AppError.notFound('project');
    return project;
  }

  async create(accountId: string, fields: ProjectFields): Promise<ProjectRecord> {
    return this.projects.transaction(async (m) => {
      const project = await this.projects.create(m, accountId, fields);
      await this.putCeilings(project);
      return project;
    });
  }

  /** Replaces the fields given (`change` returns the whole new set from the current one) under the project's lock. */
  async update(accountId: string, id: string, change: (current: ProjectFields) => ProjectFields): Promise<ProjectRecord> {
    if (id === defaultProjectId(accountId)) await this.ensureDefault(accountId);
    return this.projects.transaction(async (m) => {
      const current = await this.projects.lock(m, accountId, id, 'update');
      if (!current) throw AppError.notFound('project');
      const project = await this.projects.update(m, accountId, id, change(fieldsOf(current)));
      await this.putCeilings(project);
      return project;
    });
  }

  /**
   * Deletes a project that holds no agents, no webhook endpoints and no live keys scoped to it (409 otherwise: move nothing silently); the
   * default project stays (409).
   * Its calls keep naming it. Under the project's lock, so no agent is created in it meanwhile.
   */
  async delete(accountId: string, id: string): Promise<void> {
    await this.projects.transaction(async (m) => {
      const project = await this.projects.lock(m, accountId, id, 'update');
      if (!project) {
        if (id === defaultProjectId(accountId)) throw new AppError('conflict', 'The default project cannot be deleted.');
        throw AppError.notFound('project');
      }
      if (project.is_default) throw new AppError('conflict', 'The default project cannot be deleted.');
      const agents = await this.agents.call('listAgents', (s, md) => s.listAgents({ account_id: accountId, limit: 1, after: '', project_id: id }, md));
      if (agents.data.length) throw new AppError('conflict', 'The project still has agents: delete them (or create them elsewhere) first.');
      const endpoints = await this.webhooks.call('listEndpoints', (s, md) => s.listEndpoints({ account_id: accountId, limit: 1, after: '', project_id: id }, md));
      if (endpoints.data.length) throw new AppError('conflict', 'The project still has webhook endpoints: delete them first.');
      if (await this.projects.hasScopedKeys(m, accountId, id)) throw new AppError('conflict', 'API keys are scoped to the project: revoke them first.');
      await this.projects.delete(m, accountId, id);
      // Nothing can be placed in it any more (it has no agents); its stored ceilings are cleared all the same.
      await this.calls.call('putProjectCeilings', (s, md) => s.putProjectCeilings({ account_id: accountId, project_id: id, max_live_calls: 0, spend: undefined }, md));
    });
  }

  /**
   * Runs `work` (a resource's creation in the owning service) with the project it goes into, held under a share lock:
   * `id` absent means the account's default project. `missing()` is thrown when the account has no such project.
   */
  async within<T>(accountId: string, id: string | undefined, missing: () => AppError, work: (project: ProjectRecord) => Promise<T>): Promise<T> {
    const projectId = id ?? defaultProjectId(accountId);
    if (projectId === defaultProjectId(accountId)) await this.ensureDefault(accountId);
    return this.projects.transaction(async (m) => {
      const project = await this.projects.lock(m, accountId, projectId, 'share');
      if (!project) throw missing();
      return work(project);
    });
  }

  /** The default project exists once anything asks for it; created without ceilings, it has none to put. */
  private async ensureDefault(accountId: string): Promise<void> {
    await this.projects.ensureDefault(accountId);
  }

  private async putCeilings(project: ProjectRecord): Promise<void> {
    await this.calls.call('putProjectCeilings', (s, md) =>
      s.putProjectCeilings({ account_id: project.account_id, project_id: project.id, max_live_calls: project.max_live_calls ?? 0, spend: spendOf(project) ?? undefined }, md),
    );
  }
}

/** A project named in a body that the account does not have: 422 on `field`. */
export function noSuchProject(field: string): () => AppError {
  return () => AppError.validation([{ field, message: 'names no project of this account' }]);
}

export function fieldsOf(p: ProjectRecord): ProjectFields {
  return { name: p.name, metadata: p.metadata, maxLiveCalls: p.max_live_calls, maxAgents: p.max_agents, maxWebhookEndpoints: p.max_webhook_endpoints, spend: spendOf(p) };
}

/** The project's spending ceiling; null when it has none. */
export function spendOf(p: ProjectRecord): ProjectFields['spend'] {
  return p.spend_amount && p.spend_currency && p.spend_period ? { amount: p.spend_amount, currency: p.spend_currency, period: p.spend_period } : null;
}
