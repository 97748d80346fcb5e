import { Client } from 'pg';
import { ApiClient, RunningPlatform } from '@parley/testing';

const OWNER = 'vsk_e2e_owner_key_00000000001';
const OTHER = 'vsk_e2e_other_key_00000000001';
const PAGER = 'vsk_e2e_pager_key_00000000001';

describe('standalone platform over HTTP', () => {
  let platform: RunningPlatform;
  let api: ApiClient;

  beforeAll(async () => {
    platform = await RunningPlatform.start({ bootstrapKeys: [`acme:owner:${OWNER}`, `globex:admin:${OTHER}`, `initech:admin:${PAGER}`] });
    api = platform.api(OWNER);
  });

  afterAll(() => platform?.stop());

  it('answers liveness without a key and sets X-Request-Id', async () => {
    const res = await platform.api().get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('is ready once database, bus and the media worker answer', async () => {
    const res = await platform.api().get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body.checks).toEqual({ database: true, bus: true, 'media-worker': true });
  });

  it('serves the OpenAPI document as JSON and YAML, describing the agent routes', async () => {
    const json = await platform.api().get('/openapi.json');
    expect(json.status).toBe(200);
    expect(json.body.openapi).toBe('3.1.0');
    expect(Object.keys(json.body.paths)).toEqual(expect.arrayContaining(['/v1/agents', '/v1/agents/{id}', '/healthz']));
    expect(json.body.paths['/v1/agents'].post.responses['422'].content['application/problem+json']).toBeDefined();
    // Knowledge grounding is acted on: no agent field but `autonomy` (outbound calls to a person) is marked not yet
    // supported; injected call events are acted on.
    const agentFields = json.body.components.schemas.AgentInputDto.properties as Record<string, Record<string, unknown>>;
    expect(Object.keys(agentFields).filter((f) => agentFields[f]['x-parley-status'])).toEqual(['autonomy']);
    expect(agentFields['knowledge_base_ids'].description).toContain('A base deleted later is skipped by the search.');
    expect(json.body.paths['/v1/calls/{id}/events'].post['x-parley-status']).toBeUndefined();
    const yaml = await platform.api().get('/openapi.yaml');
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get('content-type')).toContain('application/yaml');
    expect(yaml.body).toContain('openapi: 3.1.0');
  });

  it.each([
    ['no key', {}],
    ['a malformed key', { authorization: 'Bearer nope' }],
    ['an unknown key', { authorization: 'Bearer vsk_unknown_key_000000000001' }],
    ['a non-bearer scheme', { authorization: `Basic ${OWNER}` }],
  ])('refuses %s with 401 problem+json', async (_name, headers) => {
    const res = await platform.api().request('GET', '/v1/agents', undefined, headers);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body).toMatchObject({ code: 'unauthenticated', status: 401, request_id: res.headers.get('x-request-id') });
  });

  it('refuses a key sent in the query string even alongside a valid header', async () => {
    const res = await api.get(`/v1/agents?api_key=${OWNER}`);
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthenticated');
  });

  it('creates, reads, updates, lists and deletes an agent', async () => {
    const created = await api.post('/v1/agents', {
      name: 'Front desk',
      description: 'Answers the main line',
      languages: [{ code: 'en-US' }],
      metadata: { team: 'ops' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'agent',
      name: 'Front desk',
      languages: [{ code: 'en-US' }],
      metadata: { team: 'ops' },
    });
    expect(created.body.id).toMatch(/^agt_/);
    expect(new Date(created.body.created_at).toISOString()).toBe(created.body.created_at);

    const id = created.body.id;
    expect((await api.get(`/v1/agents/${id}`)).body).toEqual(created.body);

    const patched = await api.patch(`/v1/agents/${id}`, { description: 'Night line', metadata: { shift: 'night' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Front desk', description: 'Night line', metadata: { shift: 'night' } });

    const list = await api.get('/v1/agents');
    expect(list.body.object).toBe('list');
    expect(list.body.data.map((a: { id: string }) => a.id)).toContain(id);

    const deleted = await api.delete(`/v1/agents/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id, object: 'agent', deleted: true });
    expect((await api.get(`/v1/agents/${id}`)).status).toBe(404);
  });

  it("carries the caller's X-Request-Id through gRPC into the agents service, where its event records it", async () => {
    const res = await api.post('/v1/agents', { name: 'Traced', languages: [{ code: 'en' }] }, { 'x-request-id': 'trace-e2e-0001' });
    expect(res.headers.get('x-request-id')).toBe('trace-e2e-0001');

    const db = new Client({ connectionString: platform.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query(`SELECT headers FROM agents.outbox WHERE payload->>'agent_id' = $1`, [res.body.id]);
      expect(rows).toEqual([{ headers: { 'X-Request-Id': 'trace-e2e-0001' } }]);
    } finally {
      await db.end();
    }
  });

  it('hides one account’s agent from another: 404, like an id that never existed', async () => {
    const mine = await api.post('/v1/agents', { name: 'Mine', languages: [{ code: 'en' }] });
    const other = platform.api(OTHER);
    for (const res of [
      await other.get(`/v1/agents/${mine.body.id}`),
      await other.patch(`/v1/agents/${mine.body.id}`, { name: 'Stolen' }),
      await other.delete(`/v1/agents/${mine.body.id}`),
      await other.get('/v1/agents/agt_doesnotexist'),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    }
    expect((await other.get('/v1/agents')).body.data).toEqual([]);
  });

  it('answers many concurrent reads from two accounts each with its own agent, and 404 for the other account’s', async () => {
    const other = platform.api(OTHER);
    const acme = await Promise.all([1, 2, 3].map((n) => api.post('/v1/agents', { name: `Acme ${n}`, languages: [{ code: 'en' }] })));
    const globex = await Promise.all([1, 2].map((n) => other.post('/v1/agents', { name: `Globex ${n}`, languages: [{ code: 'en' }] })));

    const reads = await Promise.all([
      ...acme.map((a) => api.get(`/v1/agents/${a.body.id}`)),
      ...globex.map((a) => other.get(`/v1/agents/${a.body.id}`)),
      ...acme.map((a) => other.get(`/v1/agents/${a.body.id}`)),
      ...globex.map((a) => api.get(`/v1/agents/${a.body.id}`)),
    ]);

    expect(reads.map((r) => r.body.name ?? r.status)).toEqual(['Acme 1', 'Acme 2', 'Acme 3', 'Globex 1', 'Globex 2', 404, 404, 404, 404, 404]);
  });

  it('pages newest first with an opaque cursor, absent on the last page', async () => {
    const pager = platform.api(PAGER);
    const names = ['p1', 'p2', 'p3', 'p4', 'p5'];
    for (const name of names) await pager.post('/v1/agents', { name, languages: [{ code: 'en' }] });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await pager.get(`/v1/agents?limit=2${cursor ? `&starting_after=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((a: { name: string }) => a.name));
      cursor = res.body.next_cursor;
      expect(res.body.has_more).toBe(cursor !== undefined);
    } while (cursor);
    expect(seen).toEqual([...names].reverse());
  });

  it('refuses a tampered or foreign cursor with 422', async () => {
    for (const name of ['c1', 'c2']) await api.post('/v1/agents', { name, languages: [{ code: 'en' }] });
    const first = await api.get('/v1/agents?limit=1');
    const cursor: string = first.body.next_cursor;
    const tampered = await api.get(`/v1/agents?starting_after=${cursor.slice(0, -2)}xx`);
    expect(tampered.status).toBe(422);
    expect(tampered.body.code).toBe('validation_error');
    const foreign = await platform.api(OTHER).get(`/v1/agents?starting_after=${cursor}`);
    expect(foreign.status).toBe(422);
  });

  it.each([
    ['limit=0', 400],
    ['limit=101', 400],
    ['limit=abc', 400],
    ['colour=red', 400],
  ])('refuses the query %s with %i', async (query, status) => {
    const res = await api.get(`/v1/agents?${query}`);
    expect(res.status).toBe(status);
    expect(res.body.code).toBe('invalid_request');
  });

  it('names every unknown field, nested ones by path, with 400', async () => {
    const res = await api.post('/v1/agents', { name: 'x', languages: [{ code: 'en', accent: 'posh' }], colour: 'red' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['colour', 'languages[0].accent']);
  });

  it('reports every invalid field at once with 422', async () => {
    const res = await api.post('/v1/agents', { name: '', languages: [], metadata: { k: 1 } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation_error');
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['languages', 'metadata', 'name']);
  });

  it('answers unparseable JSON with 400, a non-JSON body with 415 and an oversized body with 413', async () => {
    const bad = await api.request('POST', '/v1/agents', '{"name":', { 'content-type': 'application/json' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_request');
    const text = await api.request('POST', '/v1/agents', 'name=x', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.body.code).toBe('unsupported_media_type');
    const big = await api.post('/v1/agents', { name: 'x', languages: [{ code: 'en' }], description: 'y'.repeat(1_100_000) });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');
  });

  it('answers an unknown route with 404 problem+json', async () => {
    const res = await api.get('/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  it('exposes Prometheus metrics including request durations by route', async () => {
    const res = await platform.api().get('/metrics');
    expect(res.status).toBe(200);
    expect(res.body).toContain('parley_http_request_duration_seconds_bucket');
    expect(res.body).toContain('route="/v1/agents"');
    expect(res.body).toContain('parley_rpc_client_duration_seconds');
  });
});
