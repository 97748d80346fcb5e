import { Metadata } from '@grpc/grpc-js';
import { firstValueFrom, Observable, of } from 'rxjs';
import { agentsV1, callsV1, webhooksV1 } from '@parley/contracts';
import { defaultProjectId } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { AgentsClient } from '../agents/agents.client';
import { CallsClient } from '../calls/calls.client';
import { WebhooksClient } from '../webhooks/webhooks.client';
import { ProjectRecord, ProjectsRepository } from './projects.repository';
import { noSuchProject, ProjectsService } from './projects.service';

const ACCOUNT = 'acme';
const SALES = `prj_${'1'.repeat(22)}`;

const record = (over: Partial<ProjectRecord>): ProjectRecord => ({
  id: SALES,
  account_id: ACCOUNT,
  name: 'Sales',
  metadata: {},
  is_default: false,
  max_live_calls: null,
  max_agents: null,
  max_webhook_endpoints: null,
  spend_amount: null,
  spend_currency: null,
  spend_period: null,
  created_at: new Date(0),
  updated_at: new Date(0),
  ...over,
});

/** The repository in memory: projects by id, the transaction a plain call (the SQL is the integration tests'). */
function repository(projects: ProjectRecord[]): ProjectsRepository & { deleted: string[] } {
  const byId = new Map(projects.map((p) => [p.id, p]));
  const deleted: string[] = [];
  const find = async (accountId: string, id: string) => {
    const p = byId.get(id);
    return p && p.account_id === accountId ? p : undefined;
  };
  return {
    deleted,
    transaction: (work: (m: never) => Promise<unknown>) => work({} as never),
    ensureDefault: async (accountId: string) => {
      if (!byId.has(defaultProjectId(accountId))) byId.set(defaultProjectId(accountId), record({ id: defaultProjectId(accountId), account_id: accountId, name: 'Default', is_default: true }));
    },
    find,
    lock: async (_m: unknown, accountId: string, id: string) => find(accountId, id),
    hasScopedKeys: async () => false,
    update: async (_m: unknown, _a: string, id: string, f: { name: string; maxLiveCalls: number | null; maxAgents: number | null }) =>
      Object.assign(byId.get(id)!, { name: f.name, max_live_calls: f.maxLiveCalls, max_agents: f.maxAgents }),
    delete: async (_m: unknown, _a: string, id: string) => void deleted.push(id),
  } as unknown as ProjectsRepository & { deleted: string[] };
}

function client<S>(service: Partial<S>) {
  return { call: <R>(_m: string, invoke: (s: S, md: Metadata) => Observable<R>) => firstValueFrom(invoke(service as S, new Metadata())) };
}

describe('projects in the gateway', () => {
  let puts: callsV1.PutProjectCeilingsRequest[];
  let agentsInProject: string[];
  let endpointsInProject: string[];

  const service = (projects: ProjectRecord[]) => {
    puts = [];
    const repo = repository(projects);
    const calls = client<callsV1.CallsServiceClient>({ putProjectCeilings: (r) => (puts.push(r), of({})) });
    const agents = client<agentsV1.AgentsServiceClient>({
      listAgents: (r) => of({ data: agentsInProject.filter((p) => p === r.project_id).map(() => ({}) as agentsV1.Agent), has_more: false, next: '' }),
    });
    const webhooks = client<webhooksV1.WebhooksServiceClient>({
      listEndpoints: (r) => of({ data: endpointsInProject.filter((p) => p === r.project_id).map(() => ({}) as webhooksV1.Endpoint), has_more: false, next: '' }),
    });
    return { repo, projects: new ProjectsService(repo, calls as unknown as CallsClient, agents as unknown as AgentsClient, webhooks as unknown as WebhooksClient) };
  };

  beforeEach(() => {
    agentsInProject = [];
    endpointsInProject = [];
  });

  const code = (attempt: Promise<unknown>) =>
    attempt.then(
      () => 'done',
      (e: unknown) => (e as AppError).code,
    );

  it('refuses to delete the default project, even before it exists, and a project that holds agents or webhook endpoints, with 409', async () => {
    const { projects, repo } = service([record({})]);
    agentsInProject = [SALES];

    expect(await code(projects.delete(ACCOUNT, defaultProjectId(ACCOUNT)))).toBe('conflict');
    expect(await code(projects.delete(ACCOUNT, SALES))).toBe('conflict');
    agentsInProject = [];
    endpointsInProject = [SALES];
    expect(await code(projects.delete(ACCOUNT, SALES))).toBe('conflict');
    endpointsInProject = [];
    expect(await code(projects.delete(ACCOUNT, SALES))).toBe('done');
    expect(repo.deleted).toEqual([SALES]);
    // Its call ceilings are cleared in the calls service.
    expect(puts).toEqual([{ account_id: ACCOUNT, project_id: SALES, max_live_calls: 0, spend: undefined }]);
  });

  it('answers 404 for another account’s project on every operation', async () => {
    const { projects } = service([record({ account_id: 'umbrella' })]);

    expect(await code(projects.get(ACCOUNT, SALES))).toBe('not_found');
    expect(await code(projects.update(ACCOUNT, SALES, (f) => f))).toBe('not_found');
    expect(await code(projects.delete(ACCOUNT, SALES))).toBe('not_found');
    expect(puts).toEqual([]);
  });

  it('puts the changed call ceiling to the calls service with the change (0 when none)', async () => {
    const { projects } = service([record({ max_live_calls: 3 })]);

    await projects.update(ACCOUNT, SALES, (f) => ({ ...f, maxLiveCalls: 5 }));
    await projects.update(ACCOUNT, SALES, (f) => ({ ...f, maxLiveCalls: null }));
    expect(puts.map((p) => p.max_live_calls)).toEqual([5, 0]);
  });

  it('creates a resource in the default project when none is named (creating it first), and refuses a project that is not the account’s with 422', async () => {
    const { projects } = service([record({ account_id: 'umbrella' })]);

    expect(await projects.within(ACCOUNT, undefined, noSuchProject('project_id'), async (p) => p.id)).toBe(defaultProjectId(ACCOUNT));
    const refused = await projects.within(ACCOUNT, SALES, noSuchProject('project_id'), async () => 'created').catch((e: AppError) => e);
    expect(refused).toMatchObject({ code: 'validation_error', errors: [{ field: 'project_id', message: 'names no project of this account' }] });
  });
});
