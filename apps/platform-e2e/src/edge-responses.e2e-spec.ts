import { rawHttp, RunningPlatform } from '@parley/testing';

const OWNER = 'vsk_edge_owner_key_00000000001';

const CLOSE = 'Connection: close\r\n\r\n';

describe('every gateway response is a problem or a success with the common headers', () => {
  let platform: RunningPlatform;
  let port: number;

  beforeAll(async () => {
    platform = await RunningPlatform.start({ bootstrapKeys: [`acme:owner:${OWNER}`], env: { CORS_ALLOWED_ORIGINS: 'https://app.example.com' } });
    port = Number(new URL(platform.baseUrl).port);
  });

  afterAll(() => platform?.stop());

  const expectCommonHeaders = (headers: Record<string, string> | Headers) => {
    const get = (name: string) => (headers instanceof Headers ? headers.get(name) : headers[name]);
    expect(get('x-request-id')).toMatch(/^req_/);
    expect(Number(get('x-ratelimit-limit'))).toBeGreaterThan(0);
    expect(get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    expect(Number(get('x-ratelimit-reset'))).toBeGreaterThan(0);
  };

  it.each([
    ['bad percent-encoding', `GET /v1/agents/%ff%fe HTTP/1.1\r\nHost: x\r\n${CLOSE}`, 400, 'invalid_request'],
    ['a lone percent sign', `GET /v1/agents/% HTTP/1.1\r\nHost: x\r\n${CLOSE}`, 400, 'invalid_request'],
    ['%zz', `GET /v1/agents/%zz HTTP/1.1\r\nHost: x\r\n${CLOSE}`, 400, 'invalid_request'],
    ['a long path parameter', `GET /v1/agents/${'a'.repeat(1000)} HTTP/1.1\r\nHost: x\r\n${CLOSE}`, 414, 'uri_too_long'],
    [
      'conflicting Content-Length and Transfer-Encoding',
      `POST /v1/agents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n${CLOSE}0\r\n\r\n`,
      400,
      'invalid_request',
    ],
    ['a missing Host', `GET /v1/agents HTTP/1.1\r\n${CLOSE}`, 400, 'invalid_request'],
    ['a bad method', `FOO /v1/agents HTTP/1.1\r\nHost: x\r\n${CLOSE}`, 400, 'invalid_request'],
    ['a 20 KB header', `GET /v1/agents HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n${CLOSE}`, 431, 'headers_too_large'],
  ])('answers %s with problem+json, its code, request id and the common headers', async (_what, request, status, code) => {
    const res = await rawHttp(port, request);

    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = JSON.parse(res.body);
    expect(problem).toMatchObject({ status, code, request_id: res.headers['x-request-id'] });
    expectCommonHeaders(res.headers);
  });

  it.each([
    ['over the body limit', '/v1/agents', 413, 'payload_too_large'],
    ['to a malformed URL', '/v1/calls/%/claim', 400, 'invalid_request'],
  ])('answers a client that writes a whole 8 MB body %s before reading, without resetting its write', async (_what, path, status, code) => {
    const body = ' '.repeat(8 * 1024 * 1024);
    const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${OWNER}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${CLOSE}`;

    // rawHttp fails on a write the gateway reset (EPIPE, ECONNRESET), the way such a client loses its answer.
    const res = await rawHttp(port, head + body);

    expect(res.status).toBe(status);
    expect(JSON.parse(res.body)).toMatchObject({ status, code, request_id: res.headers['x-request-id'] });
    expectCommonHeaders(res.headers);
  });

  it.each([
    ['GET', '/v1/agents/agt_1', 'No such agent.'],
    ['PATCH', '/v1/agent_groups/grp_x', 'No such agent group.'],
    ['GET', '/v1/calls/call_123/transcript', 'No such call.'],
    ['POST', '/v1/webhook_endpoints/agt_00000000000000000000000/test', 'No such webhook endpoint.'],
    ['DELETE', '/v1/api_keys/whatever', 'No such API key.'],
  ])('answers %s %s, an id its service could not have given, 404 naming the resource', async (method, path, detail) => {
    const res = await platform.api(OWNER).request(method, path, method === 'PATCH' ? {} : undefined);

    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'not_found', detail });
  });

  it.each(['/healthz', '/openapi.json', '/openapi.yaml', '/no-such-route'])('puts the rate-limit headers on %s', async (path) => {
    const res = await fetch(`${platform.baseUrl}${path}`);

    expectCommonHeaders(res.headers);
    if (path === '/no-such-route') expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('counts requests to unknown /v1 routes against the key', async () => {
    const api = platform.api(OWNER);
    const before = Number((await api.get('/v1/agents')).headers.get('x-ratelimit-remaining'));
    const unknown = await api.get('/v1/no-such-route');
    const after = Number((await api.get('/v1/agents')).headers.get('x-ratelimit-remaining'));

    expect(unknown.status).toBe(404);
    expect(Number(unknown.headers.get('x-ratelimit-remaining'))).toBe(before - 1);
    expect(after).toBe(before - 2);
  });

  it('serves and documents GET /v1/embed/ at the contract’s path, and answers /v1/embed the same', async () => {
    const document = (await platform.api().get('/openapi.json')).body as { paths: Record<string, unknown> };
    expect(document.paths['/v1/embed/']).toHaveProperty('get');
    expect(document.paths).not.toHaveProperty('/v1/embed');
    for (const path of ['/v1/embed/', '/v1/embed']) {
      const res = await fetch(`${platform.baseUrl}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
      expectCommonHeaders(res.headers);
    }
  });

  describe('CORS', () => {
    const preflight = (path: string, origin: string, method: string) =>
      fetch(`${platform.baseUrl}${path}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': method } });

    it('allows a configured origin on the embed script, with the common headers exposed', async () => {
      const res = await fetch(`${platform.baseUrl}/v1/embed/`, { headers: { origin: 'https://app.example.com' } });
      expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(res.headers.get('access-control-expose-headers')).toContain('X-Request-Id');

      const module = await fetch(`${platform.baseUrl}/v1/embed/parley.mjs`, { headers: { origin: 'https://app.example.com' } });
      expect(module.headers.get('access-control-allow-origin')).toBe('https://app.example.com');

      const pre = await preflight('/v1/embed/', 'https://app.example.com', 'GET');
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(pre.headers.get('access-control-allow-methods')).toContain('GET');
      expectCommonHeaders(pre.headers);
    });

    it('refuses an origin that is not configured', async () => {
      const res = await fetch(`${platform.baseUrl}/v1/embed/`, { headers: { origin: 'https://evil.example' } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect((await preflight('/v1/embed/', 'https://evil.example', 'GET')).headers.get('access-control-allow-origin')).toBeNull();
    });

    it('keeps API-key routes closed to every origin, the configured one included', async () => {
      for (const path of ['/v1/agents', '/v1/realtime/tokens']) {
        const pre = await preflight(path, 'https://app.example.com', 'POST');
        expect(pre.status).toBe(204);
        expect(pre.headers.get('access-control-allow-origin')).toBeNull();
        expect(pre.headers.get('access-control-allow-methods')).toBeNull();
      }
      const res = await platform.api(OWNER).get('/v1/agents');
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });
  });
});
