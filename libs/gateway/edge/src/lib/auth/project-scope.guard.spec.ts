import 'reflect-metadata';
import { Metadata } from '@grpc/grpc-js';
import { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { firstValueFrom, Observable, of } from 'rxjs';
import { AppError } from '@parley/rpc';
import { AgentsClient } from '../agents/agents.client';
import { CallsClient } from '../calls/calls.client';
import { WebhooksClient } from '../webhooks/webhooks.client';
import { Principal } from './api-keys.repository';
import { ProjectScoped } from './project-scope';
import { ProjectScopeGuard } from './project-scope.guard';

const MINE = `prj_${'a'.repeat(22)}`;
const OTHER = `prj_${'b'.repeat(22)}`;
const MY_AGENT = `agt_${'a'.repeat(22)}`;
const THEIR_AGENT = `agt_${'b'.repeat(22)}`;
const THEIR_CALL = `call_${'b'.repeat(22)}`;

class Routes {
  accountWide(): string {
    return 'accountWide';
  }
  @ProjectScoped('list')
  list(): string {
    return 'list';
  }
  @ProjectScoped('body_project')
  create(): string {
    return 'create';
  }
  @ProjectScoped('body_agent')
  place(): string {
    return 'place';
  }
  @ProjectScoped({ param: 'id', object: 'call' })
  call(): string {
    return 'call';
  }
}

const client = <S>(service: Partial<S>) =>
  ({ call: <R>(_m: string, invoke: (s: S, md: Metadata) => Observable<R>) => firstValueFrom(invoke(service as S, new Metadata())) }) as unknown;

const guard = new ProjectScopeGuard(
  new Reflector(),
  client({ getAgentProject: (r: { id: string }) => of({ project_id: r.id === MY_AGENT ? MINE : OTHER }) }) as AgentsClient,
  client({ getCall: () => of({ call: { project_id: OTHER } }) }) as CallsClient,
  client({}) as WebhooksClient,
);

interface Request {
  principal: Principal;
  query: Record<string, unknown>;
  body?: unknown;
  params: Record<string, string>;
}

async function run(route: keyof Routes, request: Partial<Request>, projectId: string | null = MINE): Promise<Request | AppError> {
  const full: Request = { query: {}, params: {}, ...request, principal: { accountId: 'acme', role: 'owner', keyId: 'key_1', ...(projectId ? { projectId } : {}) } };
  const context = { getHandler: () => Routes.prototype[route], switchToHttp: () => ({ getRequest: () => full }) } as unknown as ExecutionContext;
  try {
    await guard.canActivate(context);
    return full;
  } catch (error) {
    return error as AppError;
  }
}

describe('ProjectScopeGuard', () => {
  it('lets an account-wide key through every route untouched', async () => {
    expect(await run('accountWide', {}, null)).toMatchObject({ query: {} });
    expect(await run('list', {}, null)).toMatchObject({ query: {} });
  });

  it('refuses a scoped key on a route that declares no scope (403 naming its project)', async () => {
    expect(await run('accountWide', {})).toMatchObject({ code: 'permission_denied', message: expect.stringContaining(`scoped to project ${MINE}`), extra: { project_id: MINE } });
  });

  it('filters a list to the key’s project, and refuses a project_id naming another', async () => {
    expect(await run('list', {})).toMatchObject({ query: { project_id: MINE } });
    expect(await run('list', { query: { project_id: MINE } })).toMatchObject({ query: { project_id: MINE } });
    expect(await run('list', { query: { project_id: OTHER } })).toMatchObject({ code: 'permission_denied' });
  });

  it('creates in the key’s project, and refuses a body naming another', async () => {
    expect(await run('create', { body: { name: 'x' } })).toMatchObject({ body: { name: 'x', project_id: MINE } });
    expect(await run('create', { body: { project_id: OTHER } })).toMatchObject({ code: 'permission_denied' });
  });

  it('answers another project’s agent or object with 404, as another account’s', async () => {
    expect(await run('place', { body: { agent_id: MY_AGENT } })).toMatchObject({ body: { agent_id: MY_AGENT } });
    expect(await run('place', { body: { agent_id: THEIR_AGENT } })).toMatchObject({ code: 'not_found', message: 'No such agent.' });
    expect(await run('place', { body: {} })).toMatchObject({ code: 'permission_denied' });
    expect(await run('call', { params: { id: THEIR_CALL } })).toMatchObject({ code: 'not_found', message: 'No such call.' });
    expect(await run('call', { params: { id: 'nonsense' } })).toMatchObject({ code: 'not_found' });
  });
});
