import Fastify, { FastifyInstance } from 'fastify';
import { acceptRequestId } from '@parley/observability';
import { rawHttp } from '@parley/testing';
import { AppError } from '@parley/rpc';
import { MemoryRateLimitStore, RateLimiter } from '../edge/rate-limit';
import { CommonHeaders, registerCommonHeaders } from './common-headers';
import { frameworkErrorOptions, parserProblem, rawProblemResponse } from './framework-errors';
import { sendProblem } from './problem';

describe('framework and protocol errors', () => {
  let fastify: FastifyInstance;
  let port: number;

  beforeAll(async () => {
    fastify = Fastify({ ...frameworkErrorOptions, routerOptions: { maxParamLength: 40 }, genReqId: (req) => acceptRequestId(req.headers['x-request-id']) });
    registerCommonHeaders(fastify, new CommonHeaders(new RateLimiter(100, 60, new MemoryRateLimitStore()), []));
    // As Nest's error handler does: everything a hook or route fails with leaves through the problem writer.
    fastify.setErrorHandler((error, request, reply) => sendProblem(reply, request, error));
    fastify.get('/v1/agents/:id', async () => ({ ok: true }));
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    port = (fastify.server.address() as { port: number }).port;
  });

  afterAll(() => fastify.close());

  const close = 'Connection: close\r\n\r\n';

  it.each([
    ['bad percent-encoding', `GET /v1/agents/%ff%fe HTTP/1.1\r\nHost: x\r\n${close}`, 400, 'invalid_request'],
    ['a lone percent sign', `GET /v1/agents/% HTTP/1.1\r\nHost: x\r\n${close}`, 400, 'invalid_request'],
    ['an over-long path parameter', `GET /v1/agents/${'a'.repeat(200)} HTTP/1.1\r\nHost: x\r\n${close}`, 414, 'uri_too_long'],
    ['a missing Host', `GET /v1/agents/agt_1 HTTP/1.1\r\n${close}`, 400, 'invalid_request'],
    ['an unknown method', `BREW /v1/agents/agt_1 HTTP/1.1\r\nHost: x\r\n${close}`, 400, 'invalid_request'],
    [
      'Content-Length with Transfer-Encoding',
      `POST /v1/agents/agt_1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n${close}0\r\n\r\n`,
      400,
      'invalid_request',
    ],
    ['20 KB of headers', `GET /v1/agents/agt_1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n${close}`, 431, 'headers_too_large'],
  ])('answers %s with a problem carrying the request id and rate-limit headers', async (_what, request, status, code) => {
    const res = await rawHttp(port, request);

    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = JSON.parse(res.body);
    expect(problem).toMatchObject({ status, code });
    expect(problem.request_id).toMatch(/^req_/);
    expect(res.headers['x-request-id']).toBe(problem.request_id);
    expect(Number(res.headers['x-ratelimit-limit'])).toBe(100);
    expect(Number(res.headers['x-ratelimit-remaining'])).toBeLessThan(100);
    expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThan(0);
  });

  it('answers a 20 KB URL followed by an 8 MB body to a client that writes it all before reading', async () => {
    // rawHttp fails on a write the server reset, the way such a client loses its answer.
    const res = await rawHttp(port, `POST /v1/agents/agt_1?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n${close}${' '.repeat(8_388_608)}`);

    expect(res.status).toBe(431);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'headers_too_large' });
  });

  it('still lets an HTTP/1.0 request without Host through', async () => {
    expect((await rawHttp(port, 'GET /v1/agents/agt_1 HTTP/1.0\r\n\r\n')).status).toBe(200);
  });

  it('answers a preflight itself, with the common headers', async () => {
    const res = await rawHttp(port, `OPTIONS /v1/agents/agt_1 HTTP/1.1\r\nHost: x\r\nOrigin: https://a.example\r\nAccess-Control-Request-Method: GET\r\n${close}`);

    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(res.headers['x-ratelimit-limit']).toBe('100');
  });
});

describe('parserProblem', () => {
  it.each([
    ['HPE_HEADER_OVERFLOW', 'headers_too_large'],
    ['ERR_HTTP_REQUEST_TIMEOUT', 'request_timeout'],
    ['HPE_INVALID_METHOD', 'invalid_request'],
    ['HPE_UNEXPECTED_CONTENT_LENGTH', 'invalid_request'],
  ])('maps %s to %s', (parserCode, code) => {
    expect(parserProblem(Object.assign(new Error('parse'), { code: parserCode })).code).toBe(code);
  });
});

describe('rawProblemResponse', () => {
  it('writes a complete HTTP/1.1 response whose Content-Length counts the body’s bytes', () => {
    const text = rawProblemResponse(new AppError('invalid_request', 'Naïve request.'), 'req_1', { 'x-ratelimit-limit': '5' });
    const [head, body] = text.split('\r\n\r\n');

    expect(head.split('\r\n')).toEqual(
      expect.arrayContaining(['HTTP/1.1 400 Bad Request', 'x-request-id: req_1', 'x-ratelimit-limit: 5', 'connection: close']),
    );
    expect(head).toContain(`content-length: ${Buffer.byteLength(body)}`);
    expect(JSON.parse(body)).toMatchObject({ code: 'invalid_request', request_id: 'req_1', detail: 'Naïve request.' });
  });
});
