import { ApiClient, ApiResponse, RunningPlatform } from '@parley/testing';

const VICTIM = 'vsk_e2e_victim_key_0000000001';
const HOSTILE = 'vsk_e2e_hostile_key_000000001';

/** Reads the victim makes, and hostile requests sent alongside them. */
const VICTIM_READS = 600;
const HOSTILE_ROUNDS = 40;
const CONCURRENCY = 12;

/** `{"name": [[[…]]]}` nested `depth` levels, as raw JSON text. */
const deepBody = (depth: number) => `{"name":${'['.repeat(depth)}${']'.repeat(depth)}}`;

/** Runs `task` `count` times, at most `concurrency` at once. */
async function pool<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

describe('two accounts at once, one hostile', () => {
  let platform: RunningPlatform;
  let victim: ApiClient;
  let hostile: ApiClient;
  let sentinel: { id: string; [field: string]: unknown };
  /** The sentinel as the victim reads it before the hostile account starts. */
  let baseline: unknown;

  beforeAll(async () => {
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${VICTIM}`, `mallory:owner:${HOSTILE}`],
      env: { RATE_LIMIT_REQUESTS: '1000000' },
    });
    victim = platform.api(VICTIM);
    hostile = platform.api(HOSTILE);
    const created = await victim.post('/v1/agents', { name: 'Sentinel', languages: [{ code: 'en-US' }], metadata: { team: 'front' } });
    expect(created.status).toBe(201);
    sentinel = created.body;
    baseline = (await victim.get(`/v1/agents/${sentinel.id}`)).body;
  }, 120_000);

  afterAll(() => platform?.stop());

  /** Hostile requests, each aimed at the path ids, bodies and query of the routes a neighbour shares. */
  function hostileRequests(): (() => Promise<ApiResponse>)[] {
    const id = sentinel.id;
    return [
      () => hostile.get('/v1/agents/%00'),
      () => hostile.get('/v1/agents/agt_%00'),
      () => hostile.get(`/v1/agents/${id.slice(0, -1)}%00`),
      () => hostile.get(`/v1/agents/${id}%00`),
      () => hostile.get('/v1/agents/agt_%ED%A0%80'),
      () => hostile.get(`/v1/agents/agt_${'a'.repeat(300)}`),
      () => hostile.get(`/v1/agents/whep_${id.slice(4)}`),
      () => hostile.get(`/v1/agents/agt_${'-'.repeat(22)}`),
      () => hostile.get(`/v1/agents/${id}`),
      () => hostile.get('/v1/agents?limit=%00'),
      () => hostile.get('/v1/agents?starting_after=%00'),
      () => hostile.patch(`/v1/agents/${id}`, { name: 'taken' }),
      () => hostile.patch(`/v1/agents/${id}%00`, { name: 'taken' }),
      () => hostile.delete(`/v1/agents/${id}`),
      () => hostile.post('/v1/agents', { name: 'a\u0000b', languages: [{ code: 'en-US' }] }),
      () => hostile.post('/v1/agents', { name: 'x', languages: [{ code: 'en-US' }], metadata: { 'k\ud800': 'v', team: '\udfff' } }),
      () => hostile.post('/v1/agents', deepBody(5_000)),
      () => hostile.post('/v1/calls', { agent_id: 'agt_\u0000', to: '+15550100000' }),
      () => hostile.post('/v1/calls', { agent_id: id, to: '+15550100000' }),
      () => hostile.post('/v1/webhook_endpoints', { url: 'https://example.com/hook', description: '\u0000' }),
    ];
  }

  it('refuses hostile ids and text at the edge with the answers the API documents', async () => {
    expect((await hostile.get('/v1/agents/agt_%00')).body).toMatchObject({ code: 'not_found' });
    expect((await hostile.get(`/v1/agents/whep_${sentinel.id.slice(4)}`)).body).toMatchObject({ code: 'not_found' });
    expect((await hostile.get('/v1/agents?starting_after=%00')).body).toMatchObject({ code: 'invalid_request', errors: [{ field: 'starting_after' }] });
    const text = await hostile.post('/v1/agents', { name: 'x', languages: [{ code: 'en-US' }], metadata: { 'k\ud800': 'v', team: '\udfff' } });
    expect(text.status).toBe(422);
    expect(text.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['metadata.k\\ud800', 'metadata.team']);
    const deep = await hostile.post('/v1/agents', deepBody(5_000));
    expect(deep.status).toBe(400);
    expect(deep.body).toMatchObject({ code: 'invalid_request', request_id: deep.headers.get('x-request-id') });
  });

  it("answers every read of the other account while the hostile one sends impossible ids and text, and leaves its agent unchanged", async () => {
    const requests = hostileRequests();
    const [reads, attacks] = await Promise.all([
      pool(VICTIM_READS, CONCURRENCY, () => victim.get(`/v1/agents/${sentinel.id}`)),
      pool(HOSTILE_ROUNDS * requests.length, CONCURRENCY, (i) => requests[i % requests.length]()),
    ]);

    const statuses = reads.reduce<Record<number, number>>((counts, r) => ({ ...counts, [r.status]: (counts[r.status] ?? 0) + 1 }), {});
    console.log(`victim reads: ${reads.length} (${JSON.stringify(statuses)}); hostile requests: ${attacks.length}`);
    expect(statuses).toEqual({ 200: VICTIM_READS });
    for (const r of reads) expect(r.body).toEqual(baseline);

    const failures = attacks.filter((r) => r.status >= 500);
    expect(failures.map((r) => r.body)).toEqual([]);
    for (const r of attacks) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.body.request_id).toBe(r.headers.get('x-request-id'));
    }

    const after = await victim.get(`/v1/agents/${sentinel.id}`);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(baseline);
  }, 120_000);
});
