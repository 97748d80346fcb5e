import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ApiClient, RunningPlatform } from '@parley/testing';

const OWNER = 'vsk_conv_owner_key_0000000001';
const ADMIN = 'vsk_conv_admin_key_0000000001';
const MEMBER = 'vsk_conv_member_key_000000001';
const STRANGER = 'vsk_conv_stranger_key_0000001';

type Operation = { 'x-permission'?: string; security?: unknown[]; responses: Record<string, unknown> };

describe('API conventions and security', () => {
  let platform: RunningPlatform;
  let owner: ApiClient;
  let admin: ApiClient;
  let member: ApiClient;
  let stranger: ApiClient;
  let openapi: { paths: Record<string, Record<string, Operation>> };

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${OWNER}`, `acme:admin:${ADMIN}`, `acme:member:${MEMBER}`, `umbrella:owner:${STRANGER}`],
    });
    owner = platform.api(OWNER);
    admin = platform.api(ADMIN);
    member = platform.api(MEMBER);
    stranger = platform.api(STRANGER);
    openapi = (await platform.api().get('/openapi.json')).body;
  });

  afterAll(() => platform?.stop());

  // The interface's 62 routes; API keys, secret rotation, an operator console's token refresh, the browser
  // client's module and versioned URLs (beside GET /v1/embed/) and a workflow run's own routes (docs/workflows.md)
  // are additions beyond it.
  const RUN = '/v1/workflows/{id}/runs/{run_id}';
  const ADDITIONS = [
    '/v1/webhook_endpoints/{id}/rotate_secret',
    '/v1/realtime/tokens/refresh',
    ...['', '/recipients', '/pause', '/resume', '/cancel', '/events'].map((tail) => `${RUN}${tail}`),
  ];
  const isAddition = (path: string) => ADDITIONS.includes(path) || (path.startsWith('/v1/embed/') && path !== '/v1/embed/');
  const versionedOperations = () =>
    Object.entries(openapi.paths)
      .filter(([path]) => path.startsWith('/v1/') && !path.startsWith('/v1/api_keys') && !isAddition(path))
      .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));

  describe('OpenAPI', () => {
    it('describes all 62 versioned routes (/v1/embed/ at the contract’s path, also answered without its slash) of the interface, each with its permission and problem responses', () => {
      const ops = versionedOperations();
      expect(ops).toHaveLength(62);
      for (const { path, op } of ops) {
        if (path === '/v1/embed/') {
          expect(op.security).toEqual([]);
          continue;
        }
        expect(op['x-permission']).toMatch(/^[a-z]+:(read|write|create)$/);
        expect(op.responses['401']).toBeDefined();
        expect(op.responses['403']).toBeDefined();
        expect(op.responses['429']).toBeDefined();
      }
    });

    it('passes redocly lint', () => {
      const file = join(mkdtempSync(join(tmpdir(), 'openapi-')), 'openapi.json');
      writeFileSync(file, JSON.stringify(openapi));
      const root = resolve(__dirname, '..', '..', '..');
      // The JSON report, so a failure names the rule and the place instead of only an exit status.
      const run = spawnSync(join(root, 'node_modules/.bin/redocly'), ['lint', file, '--config', join(root, 'redocly.yaml'), '--format', 'json'], { encoding: 'utf8' });
      const report = JSON.parse(run.stdout) as { totals: { errors: number }; problems: { severity: string; ruleId: string; message: string }[] };
      expect(report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
      expect(report.totals.errors).toBe(0);
      expect(run.status).toBe(0);
    });

    it('serves an interactive reference from the package, without a CDN', async () => {
      const page = await platform.api().get('/docs');
      expect(page.status).toBe(200);
      expect(page.body).toContain('/docs/redoc.standalone.js');
      expect(page.body).not.toMatch(/https?:\/\/(cdn|unpkg|jsdelivr)/);
      expect((await platform.api().get('/docs/redoc.standalone.js')).status).toBe(200);
    });

    it('publishes no route that answers 501: every route of the interface is built', () => {
      for (const { path, method, op } of versionedOperations()) expect({ path, method, answers501: '501' in op.responses }).toEqual({ path, method, answers501: false });
    });
  });

  describe('roles and permissions', () => {
    it('refuses a member creating or deleting agents with 403 naming agents:create, but lets it read and edit', async () => {
      const denied = await member.post('/v1/agents', { name: 'm', languages: [{ code: 'en' }] });
      expect(denied.status).toBe(403);
      expect(denied.body.code).toBe('permission_denied');
      expect(denied.body.detail).toContain('agents:create');
      const agent = (await admin.post('/v1/agents', { name: 'a', languages: [{ code: 'en' }] })).body;
      expect((await member.get(`/v1/agents/${agent.id}`)).status).toBe(200);
      expect((await member.patch(`/v1/agents/${agent.id}`, { name: 'renamed' })).status).toBe(200);
      expect((await member.delete(`/v1/agents/${agent.id}`)).status).toBe(403);
      expect((await admin.delete(`/v1/agents/${agent.id}`)).status).toBe(200);
    });

    it('lets owners change projects and budgets (billing:write), admins read them (billing:read), members neither', async () => {
      expect((await owner.get('/v1/projects')).status).toBe(200);
      expect((await admin.get('/v1/projects')).status).toBe(200);
      const adminCreate = await admin.post('/v1/projects', { name: 'by admin' });
      expect(adminCreate.status).toBe(403);
      expect(adminCreate.body.detail).toContain('billing:write');
      const memberRead = await member.get('/v1/projects');
      expect(memberRead.status).toBe(403);
      expect(memberRead.body.detail).toContain('billing:read');
      expect((await owner.post('/v1/projects', { name: 'by owner' })).status).toBe(201);
    });

    it('keeps API keys away from members', async () => {
      expect((await member.get('/v1/api_keys')).status).toBe(403);
      expect((await member.post('/v1/api_keys', {})).status).toBe(403);
      expect((await admin.get('/v1/api_keys')).status).toBe(200);
    });

    it('answers 404 for every {id} route of another account, as for an id that never existed', async () => {
      const agent = (await owner.post('/v1/agents', { name: 'private', languages: [{ code: 'en' }] })).body;
      const key = (await owner.post('/v1/api_keys', { name: 'private' })).body;
      const attempts = [
        stranger.get(`/v1/agents/${agent.id}`),
        stranger.patch(`/v1/agents/${agent.id}`, { name: 'x' }),
        stranger.delete(`/v1/agents/${agent.id}`),
        stranger.delete(`/v1/api_keys/${key.id}`),
      ];
      for (const res of await Promise.all(attempts)) {
        expect(res.status).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
      expect((await owner.get(`/v1/agents/${agent.id}`)).body.name).toBe('private');
    });
  });

  describe('API keys', () => {
    it('returns the secret once; the key works until revoked, then gives 401', async () => {
      const created = await admin.post('/v1/api_keys', { name: 'ci', role: 'member' });
      expect(created.status).toBe(201);
      expect(created.body.secret).toMatch(/^vsk_/);
      expect(created.body.hint).toBe(created.body.secret.slice(-4));
      const listed = (await admin.get('/v1/api_keys?limit=100')).body.data.find((k: { id: string }) => k.id === created.body.id);
      expect(listed).toBeDefined();
      expect(listed.secret).toBeUndefined();

      const fresh = platform.api(created.body.secret);
      expect((await fresh.get('/v1/agents')).status).toBe(200);
      await new Promise((r) => setTimeout(r, 200));
      const used = (await admin.get('/v1/api_keys?limit=100')).body.data.find((k: { id: string }) => k.id === created.body.id);
      expect(used.last_used_at).not.toBeNull();

      expect((await admin.delete(`/v1/api_keys/${created.body.id}`)).body).toEqual({ id: created.body.id, object: 'api_key', deleted: true });
      const after = await fresh.get('/v1/agents');
      expect(after.status).toBe(401);
      expect(after.body.code).toBe('unauthenticated');
    });

    it('stops an expired key', async () => {
      const created = await owner.post('/v1/api_keys', { expires_at: new Date(Date.now() + 1500).toISOString() });
      const key = platform.api(created.body.secret);
      expect((await key.get('/v1/agents')).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1700));
      expect((await key.get('/v1/agents')).status).toBe(401);
    });

    it('never lets a key mint a more powerful one', async () => {
      const res = await admin.post('/v1/api_keys', { role: 'owner' });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ field: 'role', message: 'a admin key cannot issue owner keys' }]);
    });
  });

  describe('errors', () => {
    it('refuses an unknown field on every write route with 400 naming it', async () => {
      const agent = (await owner.post('/v1/agents', { name: 'w', languages: [{ code: 'en' }] })).body;
      for (const res of [
        await owner.post('/v1/agents', { name: 'w', languages: [{ code: 'en' }], nope: 1 }),
        await owner.patch(`/v1/agents/${agent.id}`, { nope: 1 }),
        await owner.post('/v1/api_keys', { nope: 1 }),
      ]) {
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('invalid_request');
        expect(res.body.errors).toEqual([{ field: 'nope', message: 'is not a known field' }]);
      }
    });

    it('refuses a body on revoking an API key with 400 naming its fields, and revokes nothing', async () => {
      const created = await owner.post('/v1/api_keys', { name: 'kept' });
      const refused = await owner.request('DELETE', `/v1/api_keys/${created.body.id}`, { force: true });
      expect(refused.status).toBe(400);
      expect(refused.body.errors).toEqual([{ field: 'force', message: 'is not a known field' }]);
      expect((await platform.api(created.body.secret).get('/v1/agents')).status).toBe(200);
      expect((await owner.request('DELETE', `/v1/api_keys/${created.body.id}`, {})).status).toBe(200);
    });

    it('refuses an unknown query parameter on any route', async () => {
      const agent = (await owner.post('/v1/agents', { name: 'q', languages: [{ code: 'en' }] })).body;
      const res = await owner.get(`/v1/agents/${agent.id}?expand=all`);
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain('expand');
    });

    it('gives every problem a stable type link, title, status and the request id', async () => {
      const res = await owner.get('/v1/agents/agt_missing');
      expect(res.body).toEqual({
        type: 'https://docs.parley.dev/errors/not_found',
        title: 'Not found',
        status: 404,
        detail: expect.any(String),
        code: 'not_found',
        request_id: res.headers.get('x-request-id'),
      });
    });
  });

  describe('idempotency', () => {
    const body = { name: 'idem', languages: [{ code: 'en' }] };

    it('replays the first status and body for the same key and body, marked as a replay', async () => {
      const first = await owner.post('/v1/agents', body, { 'idempotency-key': 'idem-1' });
      const again = await owner.post('/v1/agents', { languages: [{ code: 'en' }], name: 'idem' }, { 'idempotency-key': 'idem-1' });
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotency-replayed')).toBe('true');
      expect(first.headers.get('idempotency-replayed')).toBeNull();
    });

    it('refuses the same key with another body with 409 idempotency_conflict', async () => {
      await owner.post('/v1/agents', body, { 'idempotency-key': 'idem-2' });
      const res = await owner.post('/v1/agents', { ...body, name: 'other' }, { 'idempotency-key': 'idem-2' });
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('idempotency_conflict');
    });

    it('keeps keys per account', async () => {
      const a = await owner.post('/v1/agents', body, { 'idempotency-key': 'idem-3' });
      const b = await stranger.post('/v1/agents', body, { 'idempotency-key': 'idem-3' });
      expect(b.status).toBe(201);
      expect(b.body.id).not.toBe(a.body.id);
    });

    it('creates exactly one object from concurrent identical requests', async () => {
      const name = `concurrent-${Date.now()}`;
      const results = await Promise.all(
        Array.from({ length: 12 }, () => owner.post('/v1/agents', { name, languages: [{ code: 'en' }] }, { 'idempotency-key': name })),
      );
      const created = results.filter((r) => r.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
      for (const r of results.filter((x) => x.status !== 201)) expect(r.body.code).toBe('idempotency_conflict');
      const all = (await owner.get('/v1/agents?limit=100')).body.data.filter((a: { name: string }) => a.name === name);
      expect(all).toHaveLength(1);
    });
  });

  describe('pagination', () => {
    it('walks every object that existed throughout exactly once while others are inserted and deleted', async () => {
      const walker = platform.api(STRANGER);
      const original: string[] = [];
      for (let i = 0; i < 30; i++) original.push((await walker.post('/v1/agents', { name: `w${i}`, languages: [{ code: 'en' }] })).body.id);
      const extra: string[] = [];
      let writing = true;
      const writer = (async () => {
        while (writing) {
          const created = await walker.post('/v1/agents', { name: 'churn', languages: [{ code: 'en' }] });
          extra.push(created.body.id);
          if (extra.length % 2 === 0) await walker.delete(`/v1/agents/${extra[extra.length - 2]}`);
        }
      })();
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await walker.get(`/v1/agents?limit=7${cursor ? `&starting_after=${cursor}` : ''}`);
        seen.push(...page.body.data.map((a: { id: string }) => a.id));
        cursor = page.body.next_cursor;
        await new Promise((r) => setTimeout(r, 20));
      } while (cursor);
      writing = false;
      await writer;
      expect(new Set(seen).size).toBe(seen.length);
      for (const id of original) expect(seen.filter((s) => s === id)).toHaveLength(1);
    });
  });
});

describe('rate limits', () => {
  let platform: RunningPlatform;

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${OWNER}`, `acme:member:${MEMBER}`],
      env: { RATE_LIMIT_REQUESTS: '5', RATE_LIMIT_WINDOW_SECONDS: '60' },
    });
  });

  afterAll(() => platform?.stop());

  it('counts per key, tells the remainder on every response and answers 429 past the ceiling', async () => {
    const api = platform.api(OWNER);
    for (let i = 1; i <= 5; i++) {
      const res = await api.get('/v1/agents');
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('5');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(5 - i));
      expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    }
    const limited = await api.get('/v1/agents');
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBe(limited.body.retry_after_seconds);
    expect(limited.body.retry_after_seconds).toBeGreaterThan(0);
    // Another key has its own budget.
    expect((await platform.api(MEMBER).get('/v1/agents')).status).toBe(200);
  });
});
