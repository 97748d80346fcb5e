import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { isWellFormedId } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { AgentsClient } from '../agents/agents.client';
import { CallsClient } from '../calls/calls.client';
import { WebhooksClient } from '../webhooks/webhooks.client';
import { Principal } from './api-keys.repository';
import { PROJECT_SCOPE_KEY, ProjectScope, ScopedObject } from './project-scope';

const ID_PREFIX: Record<ScopedObject, string> = { agent: 'agt', call: 'call', 'webhook endpoint': 'whep', project: 'prj' };

/**
 * Confines an API key scoped to a project (Principal.projectId) to that project on every route, in one place: a route
 * either declares how it is scoped (ProjectScoped, through Operation's `project`) or is refused. Runs after AuthGuard;
 * keys without a project, console tokens and public routes pass untouched.
 */
@Injectable()
export class ProjectScopeGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly agents: AgentsClient,
    private readonly calls: CallsClient,
    private readonly webhooks: WebhooksClient,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const projectId = request.principal?.projectId;
    if (!projectId) return true;
    const who = request.principal as Principal & { projectId: string };
    const scope = this.reflector.get<ProjectScope | undefined>(PROJECT_SCOPE_KEY, context.getHandler());
    if (!scope) throw refused(projectId, 'this route is account-wide');
    if (scope === 'own_project') return true;
    if (scope === 'list') {
      const query = request.query as Record<string, unknown>;
      confine(query, 'project_id', projectId, 'query parameter');
      return true;
    }
    if (scope === 'body_project') {
      const body = request.body;
      if (body && typeof body === 'object' && !Array.isArray(body)) confine(body as Record<string, unknown>, 'project_id', projectId, 'field');
      return true;
    }
    if (scope === 'body_agent') {
      const agentId = (request.body as Record<string, unknown> | undefined)?.agent_id;
      if (typeof agentId !== 'string') throw refused(projectId, 'without `agent_id` this request is account-wide');
      if ((await this.projectOf(who, 'agent', agentId)) !== projectId) throw AppError.notFound('agent');
      return true;
    }
    const id = (request.params as Record<string, string>)[scope.param];
    if ((await this.projectOf(who, scope.object, id)) !== projectId) throw AppError.notFound(scope.object);
    return true;
  }

  /** The project of the account's object; not_found (as the route would answer) when the account has none such. */
  private async projectOf(who: Principal, object: ScopedObject, id: string): Promise<string> {
    if (!isWellFormedId(ID_PREFIX[object], id)) throw AppError.notFound(object);
    const request = { account_id: who.accountId, id };
    switch (object) {
      case 'project':
        return id;
      case 'agent':
        return (await this.agents.call('getAgentProject', (s, md) => s.getAgentProject(request, md))).project_id;
      case 'call':
        return (await this.calls.call('getCall', (s, md) => s.getCall(request, md))).call?.project_id ?? '';
      case 'webhook endpoint':
        return (await this.webhooks.call('getEndpoint', (s, md) => s.getEndpoint(request, md))).endpoint?.project_id ?? '';
    }
  }
}

/** `target[field]` is set to the key's project when absent; naming another project is refused. */
function confine(target: Record<string, unknown>, field: string, projectId: string, what: string): void {
  if (target[field] === undefined) target[field] = projectId;
  else if (target[field] !== projectId) throw refused(projectId, `the ${what} \`${field}\` names another project`);
}

function refused(projectId: string, why: string): AppError {
  return new AppError('permission_denied', `This API key is scoped to project ${projectId}: ${why}.`, undefined, { project_id: projectId });
}
