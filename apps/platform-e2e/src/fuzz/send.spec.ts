import { parseResponse, wireBytes } from './send';

describe('reading answers off the socket', () => {
  it('parses the status, lower-cased headers and the body up to Content-Length', () => {
    const observed = parseResponse('HTTP/1.1 404 Not Found\r\nX-Request-Id: req_1\r\nContent-Length: 2\r\n\r\n{}trailing');
    expect(observed).toEqual({ status: 404, headers: { 'x-request-id': 'req_1', 'content-length': '2' }, body: '{}' });
  });

  it('joins a chunked body', () => {
    const observed = parseResponse('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{"\r\n4\r\na":1\r\n1\r\n}\r\n0\r\n\r\n');
    expect(observed).toMatchObject({ status: 200, body: '{"a":1}' });
  });

  it('tells nothing, an unfinished head and non-HTTP bytes apart', () => {
    expect(parseResponse('').error).toMatch(/without an answer/);
    expect(parseResponse('HTTP/1.1 200 OK\r\n').error).toMatch(/incomplete/);
    expect(parseResponse('SSH-2.0\r\n\r\n').error).toMatch(/not an HTTP answer/);
  });
});

describe('writing a case on the wire', () => {
  it('writes the target as generated, its headers, the body length and Connection: close', () => {
    const bytes = wireBytes(
      { kind: 'http', method: 'POST', template: '/v1/agents', target: '/v1/agents/%00?x=%ff', headers: { authorization: 'Bearer k' }, body: Buffer.from('{}'), note: '' },
      '127.0.0.1:1',
    ).toString('latin1');
    expect(bytes).toBe('POST /v1/agents/%00?x=%ff HTTP/1.1\r\nhost: 127.0.0.1:1\r\nauthorization: Bearer k\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
  });
});
