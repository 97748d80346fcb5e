import { Operation } from './openapi';
import { violations } from './oracle';

const COMMON = { 'x-request-id': 'req_abc', 'x-ratelimit-limit': '1000', 'x-ratelimit-remaining': '999', 'x-ratelimit-reset': '60' };
const problem = (status: number, code: string, requestId = 'req_abc') =>
  ({ status, headers: { ...COMMON, 'content-type': 'application/problem+json; charset=utf-8' }, body: JSON.stringify({ status, code, request_id: requestId }) });
const planned: Operation = { method: 'GET', template: '/v1/workflows', pathParams: [], query: [], declaresNotImplemented: true };
const implemented: Operation = { ...planned, template: '/v1/agents', declaresNotImplemented: false };

describe('the properties every answer must keep', () => {
  it('accepts a problem with its code, its own request id and the common headers', () => {
    expect(violations(problem(422, 'validation_error'), implemented)).toEqual([]);
  });

  it('reports a 5xx as a server error', () => {
    expect(violations(problem(500, 'internal_error'), implemented).map((v) => v.klass)).toEqual(['server-error']);
  });

  it('allows 501 not_implemented only where the document declares the operation planned', () => {
    expect(violations(problem(501, 'not_implemented'), planned)).toEqual([]);
    expect(violations(problem(501, 'not_implemented'), implemented).map((v) => v.klass)).toEqual(['server-error']);
  });

  it('reports a failure that is not problem+json, lacks a code, or carries another request id', () => {
    const plain = { status: 400, headers: { ...COMMON, 'content-type': 'application/json' }, body: '{"message":"bad"}' };
    expect(violations(plain, implemented)).toEqual([expect.objectContaining({ klass: 'not-a-problem', status: 400 })]);
    expect(violations(problem(404, 'not_found', 'req_other'), implemented)[0].detail).toMatch(/request_id/);
  });

  it('reports an answer without X-Request-Id or a rate-limit header', () => {
    const { 'x-ratelimit-reset': _reset, ...headers } = COMMON;
    const found = violations({ status: 200, headers, body: '{}' }, implemented);
    expect(found).toEqual([expect.objectContaining({ klass: 'missing-common-headers', detail: 'without x-ratelimit-reset' })]);
  });

  it('reports no answer at all', () => {
    expect(violations({ error: 'the connection closed without an answer' })).toEqual([expect.objectContaining({ klass: 'no-answer' })]);
  });
});
