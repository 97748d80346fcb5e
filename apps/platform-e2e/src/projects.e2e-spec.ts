import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeTwilioServer } from '@parley/carrier-twilio';
import { ApiClient, RunningPlatform, waitFor } from '@parley/testing';

const OWNER = 'vsk_projects_owner_key_000001';
const STRANGER = 'vsk_projects_stranger_key_0001';
const FROM = '+15550009999';

describe('projects: CRUD, ceilings refused with 402 at exactly the ceiling, the limit event once', () => {
  let platform: RunningPlatform;
  let twilio: FakeTwilioServer;
  let owner: ApiClient;
  let stranger: ApiClient;
  let receiver: Server;
  const received: { type: string; data: Record<string, unknown>; path: string }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ ...JSON.parse(body), path: req.url });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    twilio = new FakeTwilioServer();
    // Twilio's minutes cost 0.50 USD: an answered call has cost 0.50 from its first second.
    const prices = join(mkdtempSync(join(tmpdir(), 'prices-')), 'prices.json');
    writeFileSync(prices, JSON.stringify({ currency: 'USD', carrier: { twilio: '0.50' } }));
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${OWNER}`, `umbrella:owner:${STRANGER}`],
      env: {
        EGRESS_ALLOWLIST: '127.0.0.1',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        ...(await twilio.platformEnv(FROM)),
        PRICES_FILE: prices,
      },
    });
    owner = platform.api(OWNER);
    stranger = platform.api(STRANGER);
    const endpoint = await owner.post('/v1/webhook_endpoints', { url: hookUrl('/hooks'), events: ['project.limit_reached'] });
    expect(endpoint.status).toBe(201);
  });

  afterAll(async () => {
    await platform?.stop();
    await twilio?.stop();
    await new Promise((r) => receiver.close(r));
  });

  const hookUrl = (path: string) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${path}`;


  it('lists the default project, creates, reads, pages, updates and deletes projects with the contract’s conventions', async () => {
    const first = await owner.get('/v1/projects');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ object: 'list', has_more: false });
    const fallback = first.body.data.find((p: { is_default: boolean }) => p.is_default);
    expect(fallback).toMatchObject({ object: 'project', name: 'Default', budget: { max_live_calls: null, max_agents: null, spend: null } });
    expect(fallback.id).toMatch(/^prj_[0-9A-Za-z]{22}$/);

    const body = { name: 'Support', metadata: { team: 'care' }, budget: { max_live_calls: 5, max_agents: 10 } };
    const created = await owner.post('/v1/projects', body, { 'idempotency-key': 'project-support' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ object: 'project', name: 'Support', is_default: false, metadata: { team: 'care' }, budget: { max_live_calls: 5, max_agents: 10 } });
    const replay = await owner.post('/v1/projects', body, { 'idempotency-key': 'project-support' });
    expect(replay.body.id).toBe(created.body.id);
    const id = created.body.id as string;

    expect((await owner.get(`/v1/projects/${id}`)).body).toEqual(created.body);
    const page = await owner.get('/v1/projects?limit=1');
    expect(page.body).toMatchObject({ has_more: true, data: [{ id }] });
    const rest = await owner.get(`/v1/projects?limit=1&starting_after=${page.body.next_cursor}`);
    expect(rest.body.data.map((p: { id: string }) => p.id)).toEqual([fallback.id]);

    // PATCH: the name merges, the budget is replaced whole (max_agents left out is removed).
    const patched = await owner.patch(`/v1/projects/${id}`, { budget: { max_live_calls: 2 } });
    expect(patched.body).toMatchObject({ name: 'Support', metadata: { team: 'care' }, budget: { max_live_calls: 2, max_agents: null, max_webhook_endpoints: null } });

    const spend = { amount: '10.50', currency: 'USD', period: 'month' };
    const capped = await owner.post('/v1/projects', { name: 'Capped', budget: { spend } });
    expect(capped.body.budget).toEqual({ max_live_calls: null, max_agents: null, max_webhook_endpoints: null, spend });
    // Calls are priced in USD here: another currency could never be compared, and 0 is no ceiling.
    const euros = await owner.post('/v1/projects', { name: 'Euros', budget: { spend: { ...spend, currency: 'EUR' } } });
    expect(euros.status).toBe(422);
    expect(euros.body.errors).toEqual([{ field: 'budget.spend.currency', message: expect.stringContaining('USD') }]);
    const week = await owner.post('/v1/projects', { name: 'Weekly', budget: { spend: { ...spend, amount: '0', period: 'week' } } });
    expect(week.status).toBe(422);
    expect(week.body.errors.map((e: { field: string }) => e.field)).toEqual(['budget.spend.period']);
    expect((await owner.get('/v1/projects?limit=100')).body.data.map((p: { name: string }) => p.name)).not.toContain('Euros');
    expect((await owner.post('/v1/projects', { name: 'x', budget: { max_live_calls: 0 } })).status).toBe(422);
    expect((await owner.post('/v1/projects', { name: 'x', colour: 'red' })).status).toBe(400);

    for (const res of await Promise.all([stranger.get(`/v1/projects/${id}`), stranger.patch(`/v1/projects/${id}`, { name: 'x' }), stranger.delete(`/v1/projects/${id}`)])) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }

    const keepDefault = await owner.delete(`/v1/projects/${fallback.id}`);
    expect(keepDefault.status).toBe(409);
    expect(keepDefault.body.code).toBe('conflict');
    const agent = await owner.post('/v1/agents', { name: 'In support', languages: [{ code: 'en' }], project_id: id });
    expect(agent.body.project_id).toBe(id);
    expect((await owner.delete(`/v1/projects/${id}`)).status).toBe(409);
    await owner.delete(`/v1/agents/${agent.body.id}`);
    expect((await owner.delete(`/v1/projects/${id}`)).body).toEqual({ id, object: 'project', deleted: true });
    expect((await owner.get(`/v1/projects/${id}`)).status).toBe(404);
  });

  it('refuses the agent past the project’s max_agents with 402 naming the limit, and lists agents by project', async () => {
    const project = (await owner.post('/v1/projects', { name: 'Two agents', budget: { max_agents: 2 } })).body;
    const made = [];
    for (const name of ['a', 'b']) made.push(await owner.post('/v1/agents', { name, languages: [{ code: 'en' }], project_id: project.id }));
    expect(made.map((r) => r.status)).toEqual([201, 201]);

    const refused = await owner.post('/v1/agents', { name: 'c', languages: [{ code: 'en' }], project_id: project.id });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 'plan_limit_reached', limit: 'max_agents', project_id: project.id, ceiling: 2 });
    expect(refused.body.detail).toContain('max_agents');

    const listed = await owner.get(`/v1/agents?project_id=${project.id}`);
    expect(listed.body.data.map((a: { name: string }) => a.name).sort()).toEqual(['a', 'b']);
    // A restore counts as a create: refused at the ceiling, and refused (409) once the agent's project is gone.
    expect((await owner.delete(`/v1/agents/${made[0].body.id}`)).status).toBe(200);
    expect((await owner.post('/v1/agents', { name: 'c', languages: [{ code: 'en' }], project_id: project.id })).status).toBe(201);
    const restore = await owner.post(`/v1/agents/${made[0].body.id}/restore`);
    expect(restore.status).toBe(402);
    expect(restore.body.limit).toBe('max_agents');
    const gone = (await owner.post('/v1/projects', { name: 'Gone' })).body;
    const orphan = (await owner.post('/v1/agents', { name: 'orphan', languages: [{ code: 'en' }], project_id: gone.id })).body;
    await owner.delete(`/v1/agents/${orphan.id}`);
    expect((await owner.delete(`/v1/projects/${gone.id}`)).status).toBe(200);
    expect((await owner.post(`/v1/agents/${orphan.id}/restore`)).status).toBe(409);
    // Without a project an agent goes into the default project; another account's project is no project.
    expect((await owner.post('/v1/agents', { name: 'anywhere', languages: [{ code: 'en' }] })).body.project_id).not.toBe(project.id);
    const foreign = (await stranger.post('/v1/projects', { name: 'theirs' })).body;
    expect((await owner.post('/v1/agents', { name: 'x', languages: [{ code: 'en' }], project_id: foreign.id })).status).toBe(422);
    expect((await owner.get('/v1/agents?project_id=nope')).status).toBe(400);
  });

  it('accepts the call at max_live_calls, refuses the next with 402 (never cutting the live one), emits project.limit_reached once', async () => {
    const project = (await owner.post('/v1/projects', { name: 'One line', budget: { max_live_calls: 1 } })).body;
    const agent = (await owner.post('/v1/agents', { name: 'Dialler', languages: [{ code: 'en' }], project_id: project.id })).body;

    const placed = await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100001' });
    expect(placed.status).toBe(201);
    expect(placed.body.project_id).toBe(project.id);
    const refused = await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100002' });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 'plan_limit_reached', limit: 'max_live_calls', project_id: project.id, ceiling: 1 });
    expect((await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100003' })).status).toBe(402);
    expect(twilio.calls.filter((c) => c.action === 'create' && ['+15550100002', '+15550100003'].includes(String(c.form['To'])))).toEqual([]);

    const event = await waitFor(() => received.find((e) => e.type === 'project.limit_reached' && e.data['project_id'] === project.id));
    expect(event.data).toEqual({ project_id: project.id, limit: 'max_live_calls', ceiling: 1 });
    expect((await owner.get(`/v1/calls/${placed.body.id}`)).body.status).not.toMatch(/ended|failed/);
    const listed = await owner.get(`/v1/calls?project_id=${project.id}`);
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([placed.body.id]);

    // Once the live call ends, the project is under its ceiling again.
    await owner.post(`/v1/calls/${placed.body.id}/end`);
    expect((await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100004' })).status).toBe(201);
    expect(received.filter((e) => e.type === 'project.limit_reached' && e.data['project_id'] === project.id)).toHaveLength(1);
  });

  it('refuses a call once the project’s calls of the month cost its spending ceiling, with 402 naming spend, and emits the event once', async () => {
    const project = (await owner.post('/v1/projects', { name: 'Half a dollar', budget: { spend: { amount: '0.5', currency: 'USD', period: 'month' } } })).body;
    const agent = (await owner.post('/v1/agents', { name: 'Spender', languages: [{ code: 'en' }], project_id: project.id })).body;

    const first = await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100011' });
    expect(first.status).toBe(201);
    // Nothing spent yet: a second call is accepted too.
    const second = await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100012' });
    expect(second.status).toBe(201);
    await owner.post(`/v1/calls/${second.body.id}/end`);
    const sid = twilio.calls.find((c) => c.action === 'create' && c.form['To'] === '+15550100011')?.callSid as string;
    expect(await twilio.sendStatusCallback(sid, 'in-progress')).toBe(204);

    // Answered, the first call has cost one started minute: 0.50, the ceiling.
    const refused = await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100013' });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 'plan_limit_reached', limit: 'spend', project_id: project.id, ceiling: '0.5', currency: 'USD', period: 'month', spent: '0.5' });
    expect((await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100014' })).status).toBe(402);
    expect((await owner.get(`/v1/calls/${first.body.id}`)).body.status).toBe('in_progress');

    const event = await waitFor(() => received.find((e) => e.type === 'project.limit_reached' && e.data['project_id'] === project.id));
    expect(event.data).toEqual({ project_id: project.id, limit: 'spend', ceiling: '0.5', currency: 'USD', period: 'month' });
    // A raised ceiling lets calls through again.
    expect((await owner.patch(`/v1/projects/${project.id}`, { budget: { spend: { amount: '100', currency: 'USD', period: 'month' } } })).status).toBe(200);
    expect((await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100015' })).status).toBe(201);
    expect(received.filter((e) => e.type === 'project.limit_reached' && e.data['project_id'] === project.id)).toHaveLength(1);
  });

  it('gives webhook endpoints a project: its ceiling, its list, and only its own events besides the default project’s endpoints getting all', async () => {
    const mine = (await owner.post('/v1/projects', { name: 'Hooked', budget: { max_webhook_endpoints: 1, max_live_calls: 1 } })).body;
    const theirs = (await owner.post('/v1/projects', { name: 'Elsewhere', budget: { max_live_calls: 1 } })).body;
    const hook = await owner.post('/v1/webhook_endpoints', { url: hookUrl('/hooked'), project_id: mine.id });
    expect(hook.status).toBe(201);
    expect(hook.body.project_id).toBe(mine.id);
    const second = await owner.post('/v1/webhook_endpoints', { url: hookUrl('/hooked-2'), project_id: mine.id });
    expect(second.status).toBe(402);
    expect(second.body).toMatchObject({ code: 'plan_limit_reached', limit: 'max_webhook_endpoints', ceiling: 1 });
    // Reported once, however many creates are refused, to the default project's endpoint (which hears every project).
    expect((await owner.post('/v1/webhook_endpoints', { url: hookUrl('/hooked-3'), project_id: mine.id })).status).toBe(402);
    const ceiling = await waitFor(() => received.find((e) => e.path === '/hooks' && e.data['limit'] === 'max_webhook_endpoints'));
    expect(ceiling).toMatchObject({ type: 'project.limit_reached', data: { project_id: mine.id, limit: 'max_webhook_endpoints', ceiling: 1 } });
    expect((await owner.get(`/v1/webhook_endpoints?project_id=${mine.id}`)).body.data.map((e: { id: string }) => e.id)).toEqual([hook.body.id]);
    expect((await owner.patch(`/v1/webhook_endpoints/${hook.body.id}`, { project_id: theirs.id })).status).toBe(400);
    expect((await owner.delete(`/v1/projects/${mine.id}`)).status).toBe(409);

    // Each project reaches its live-call ceiling: the project's endpoint hears only its own project's event.
    for (const project of [mine, theirs]) {
      const agent = (await owner.post('/v1/agents', { name: `in ${project.name}`, languages: [{ code: 'en' }], project_id: project.id })).body;
      expect((await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100021' })).status).toBe(201);
      expect((await owner.post('/v1/calls', { agent_id: agent.id, to: '+15550100022' })).status).toBe(402);
    }
    await waitFor(() => received.find((e) => e.path === '/hooks' && e.data['project_id'] === theirs.id));
    const heard = await waitFor(() => received.find((e) => e.path === '/hooked' && e.type === 'project.limit_reached'));
    expect(heard.data['project_id']).toBe(mine.id);
    expect(received.filter((e) => e.path === '/hooked' && e.data['project_id'] === theirs.id)).toEqual([]);
    expect(received.filter((e) => e.path === '/hooks' && e.data['limit'] === 'max_webhook_endpoints')).toHaveLength(1);
  });
});
