import { FakeTwilioServer } from '@parley/carrier-twilio';
import { ApiClient, ApiResponse, RunningPlatform } from '@parley/testing';

const OWNER = 'vsk_scoped_owner_key_00000001';
const STRANGER = 'vsk_scoped_stranger_key_00001';

type Operation = { 'x-permission'?: string; 'x-project-scope'?: 'project' | 'account'; parameters?: { name: string }[] };

describe('API keys scoped to a project: every route either confines the key to its project or refuses it', () => {
  let platform: RunningPlatform;
  let twilio: FakeTwilioServer;
  let owner: ApiClient;
  let scoped: ApiClient;
  let openapi: { paths: Record<string, Record<string, Operation>> };
  /** The key's project (a) and another (b), each with an agent, a call and a webhook endpoint. */
  const a = { project: '', agent: '', call: '', endpoint: '' };
  const b = { project: '', agent: '', call: '', endpoint: '' };

  beforeAll(async () => {
    twilio = new FakeTwilioServer();
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${OWNER}`, `umbrella:owner:${STRANGER}`],
      env: {
        EGRESS_ALLOWLIST: '127.0.0.1',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        ...(await twilio.platformEnv()),
      },
    });
    owner = platform.api(OWNER);
    for (const [name, set] of [
      ['Scoped', a],
      ['Other', b],
    ] as const) {
      set.project = (await owner.post('/v1/projects', { name })).body.id;
      set.agent = (await owner.post('/v1/agents', { name, languages: [{ code: 'en' }], project_id: set.project })).body.id;
      set.call = (await owner.post('/v1/calls', { agent_id: set.agent, to: '+15550100001' })).body.id;
      set.endpoint = (await owner.post('/v1/webhook_endpoints', { url: `http://127.0.0.1:9/${name}`, project_id: set.project })).body.id;
    }
    const key = await owner.post('/v1/api_keys', { name: 'scoped', role: 'owner', project_id: a.project });
    expect(key.status).toBe(201);
    expect(key.body).toMatchObject({ object: 'api_key', role: 'owner', project_id: a.project });
    scoped = platform.api(key.body.secret);
    openapi = (await platform.api().get('/openapi.json')).body;
  });

  afterAll(async () => {
    await platform?.stop();
    await twilio?.stop();
  });

  const refusedAsScoped = (res: ApiResponse) => {
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'permission_denied', detail: expect.stringContaining(`scoped to project ${a.project}`), project_id: a.project });
  };

  it('issues a scoped key only for a project of the account other than the default (422 on project_id otherwise) and shows project_id (null: account-wide)', async () => {
    const fallback = (await owner.get('/v1/projects')).body.data.find((p: { is_default: boolean }) => p.is_default);
    const foreign = (await platform.api(STRANGER).post('/v1/projects', { name: 'theirs' })).body;
    for (const project_id of [fallback.id, foreign.id, 'prj_0000000000000000000000', 'nonsense']) {
      const res = await owner.post('/v1/api_keys', { project_id });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([expect.objectContaining({ field: 'project_id' })]);
    }
    const keys = (await owner.get('/v1/api_keys')).body.data;
    expect(keys.find((k: { name: string }) => k.name === 'bootstrap')).toMatchObject({ project_id: null });
    expect(keys.find((k: { name: string }) => k.name === 'scoped')).toMatchObject({ project_id: a.project });
  });

  it('walks every route of the OpenAPI document with a scoped key: each is declared, and either confined to its project or refused', async () => {
    const ops = Object.entries(openapi.paths).flatMap(([path, methods]) =>
      Object.entries(methods)
        .filter(([, op]) => op['x-permission'])
        .map(([method, op]) => ({
          path,
          method: method.toUpperCase(),
          scope: op['x-project-scope'],
          filters: (op.parameters ?? []).some((p) => p.name === 'project_id'),
        })),
    );
    expect(ops.length).toBeGreaterThan(60);
    const objectOf: [string, string][] = [
      ['/v1/agents/', b.agent],
      ['/v1/calls/', b.call],
      ['/v1/webhook_endpoints/', b.endpoint],
      ['/v1/projects/', b.project],
    ];
    for (const { path, method, scope, filters } of ops) {
      const named = objectOf.find(([prefix]) => path.startsWith(prefix))?.[1];
      const url = path.replace('{id}', named ?? 'x_1').replace(/\{[a-z_]+\}/g, 'x_1');
      // A body naming the other project's agent and project: a route must refuse before reading it.
      const body = method === 'GET' || method === 'DELETE' ? undefined : { agent_id: b.agent, project_id: b.project };
      const res = await scoped.request(method, url, body);
      const where = `${method} ${path} (${scope}) answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
      expect({ where, scope }).toEqual({ where, scope: expect.stringMatching(/^(project|account)$/) });
      if (scope === 'account') {
        // Console-token-only routes refuse every API key before its scope matters (401).
        if (res.status === 401) continue;
        expect({ where, status: res.status, code: res.body.code }).toEqual({ where, status: 403, code: 'permission_denied' });
      } else if (path.includes('{id}')) {
        expect({ where, status: res.status }).toEqual({ where, status: 404 });
      } else if (method === 'GET') {
        expect({ where, status: res.status }).toEqual({ where, status: 200 });
        const items: { object: string; id: string; project_id: string }[] = res.body.object === 'list' ? res.body.data : [res.body];
        for (const item of items) {
          expect({ where, project: item.object === 'project' ? item.id : item.project_id }).toEqual({ where, project: a.project });
        }
        if (filters) expect({ where, status: (await scoped.get(`${path}?project_id=${b.project}`)).status }).toEqual({ where, status: 403 });
      } else {
        // Creates: in another project (403) or through another project's agent (404 for the agent).
        expect({ where, refused: [403, 404].includes(res.status) }).toEqual({ where, refused: true });
      }
    }
  });

  it('lists, reads and creates only within its project: its agents, calls, endpoints and analytics, its own project alone', async () => {
    expect((await scoped.get('/v1/agents')).body.data.map((x: { id: string }) => x.id)).toEqual([a.agent]);
    expect((await scoped.get('/v1/calls')).body.data.map((x: { id: string }) => x.id)).toEqual([a.call]);
    expect((await scoped.get('/v1/webhook_endpoints')).body.data.map((x: { id: string }) => x.id)).toEqual([a.endpoint]);
    expect((await scoped.get(`/v1/agents?project_id=${a.project}`)).body.data.map((x: { id: string }) => x.id)).toEqual([a.agent]);
    expect((await scoped.get('/v1/analytics/overview')).body).toMatchObject({ project_id: a.project, calls: 1 });
    expect((await scoped.get('/v1/projects')).body).toMatchObject({ object: 'list', has_more: false, data: [{ id: a.project }] });
    expect((await scoped.get(`/v1/projects/${a.project}`)).body.id).toBe(a.project);
    expect((await scoped.get(`/v1/agents/${a.agent}`)).body.id).toBe(a.agent);
    expect((await scoped.get(`/v1/calls/${a.call}`)).body.id).toBe(a.call);

    const agent = await scoped.post('/v1/agents', { name: 'made scoped', languages: [{ code: 'en' }] });
    expect(agent.status).toBe(201);
    expect(agent.body.project_id).toBe(a.project);
    refusedAsScoped(await scoped.post('/v1/agents', { name: 'elsewhere', languages: [{ code: 'en' }], project_id: b.project }));
    const call = await scoped.post('/v1/calls', { agent_id: agent.body.id, to: '+15550100002' });
    expect(call.status).toBe(201);
    expect(call.body.project_id).toBe(a.project);
    const across = await scoped.post('/v1/calls', { agent_id: b.agent, to: '+15550100003' });
    expect(across.status).toBe(404);
    expect(across.body.detail).toBe('No such agent.');
  });

  it('refuses budgets, keys and account-wide resources (403 naming its project), and keeps its project from being deleted while it lives', async () => {
    refusedAsScoped(await scoped.post('/v1/projects', { name: 'mine' }));
    refusedAsScoped(await scoped.patch(`/v1/projects/${a.project}`, { budget: { max_live_calls: 1 } }));
    refusedAsScoped(await scoped.post('/v1/api_keys', { project_id: a.project }));
    refusedAsScoped(await scoped.get('/v1/knowledge_bases'));
    refusedAsScoped(await scoped.get('/v1/workflows'));
    refusedAsScoped(await scoped.post('/v1/realtime/tokens', { role: 'console', operator: 'alice' }));

    const emptied = (await owner.post('/v1/projects', { name: 'Keyed' })).body.id;
    const key = (await owner.post('/v1/api_keys', { project_id: emptied })).body;
    expect((await owner.delete(`/v1/projects/${emptied}`)).body).toMatchObject({ code: 'conflict', detail: expect.stringContaining('API keys') });
    await owner.delete(`/v1/api_keys/${key.id}`);
    expect((await owner.delete(`/v1/projects/${emptied}`)).status).toBe(200);
  });
});
