import { parseEgressAllowlist } from '@parley/egress';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { fetchDocument } from './fetch';
import { IngestError } from './ingest-error';
import { buildPdf } from './testing-fixtures';

const egress = parseEgressAllowlist('127.0.0.1').policy;

describe('fetchDocument', () => {
  let server: Server;
  let base: string;
  let pdf: Buffer;

  beforeAll(async () => {
    pdf = await buildPdf([['Price list', 'Everything costs 10 euros.']], 'Prices');
    server = createServer((req, res) => {
      switch (req.url) {
        case '/page':
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          return res.end('<html><head><title>Hours</title></head><body><p>Open daily.</p></body></html>');
        case '/prices.pdf':
          res.writeHead(200, { 'content-type': 'application/pdf' });
          return res.end(pdf);
        case '/untyped':
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          return res.end(pdf);
        case '/moved':
          res.writeHead(302, { location: '/page' });
          return res.end();
        case '/to-metadata':
          res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
          return res.end();
        case '/loop':
          res.writeHead(302, { location: '/loop' });
          return res.end();
        case '/big':
          // Streamed without a length: the limit is found while reading.
          res.writeHead(200, { 'content-type': 'text/plain' });
          for (let i = 0; i < 64; i++) res.write('x'.repeat(1024));
          return res.end();
        case '/declared-big':
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(1024 * 1024) });
          return res.end('x'.repeat(1024 * 1024));
        case '/image':
          res.writeHead(200, { 'content-type': 'image/png' });
          return res.end(Buffer.from([0x89, 0x50]));
        case '/slow':
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('start');
          return; // never ends
        default:
          res.writeHead(404, { 'content-type': 'text/plain' });
          return res.end('not found');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  async function failure(url: string, options: Partial<Parameters<typeof fetchDocument>[1]> = {}): Promise<IngestError> {
    const error = await fetchDocument(url, { egress, maxBytes: 1_000_000, ...options }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(IngestError);
    return error as IngestError;
  }

  it('gives back an HTML page as html, with its URL', async () => {
    const input = await fetchDocument(`${base}/page`, { egress, maxBytes: 100_000 });
    expect(input).toEqual({ kind: 'html', html: expect.stringContaining('Open daily.'), url: `${base}/page` });
  });

  it('gives back a PDF as a file by its content type', async () => {
    const input = await fetchDocument(`${base}/prices.pdf`, { egress, maxBytes: 100_000 });
    expect(input).toEqual({ kind: 'file', contentType: 'application/pdf', data: pdf });
  });

  it('recognises a PDF served as application/octet-stream by its first bytes', async () => {
    const input = await fetchDocument(`${base}/untyped`, { egress, maxBytes: 100_000 });
    expect(input).toMatchObject({ kind: 'file', contentType: 'application/pdf' });
  });

  it('follows a redirect to an allowed host', async () => {
    const input = await fetchDocument(`${base}/moved`, { egress, maxBytes: 100_000 });
    expect(input).toMatchObject({ kind: 'html', url: `${base}/page` });
  });

  it('refuses a redirect to a host the egress policy refuses', async () => {
    const error = await failure(`${base}/to-metadata`);
    expect(error.code).toBe('fetch_failed');
    expect(error.message).toMatch(/^the URL was refused by the outbound request guard: redirect to http:\/\/169\.254\.169\.254\/.* refused/);
  });

  it('refuses a private address that is not allow-listed', async () => {
    const error = await failure(`${base}/page`, { egress: parseEgressAllowlist('').policy, allowHttp: true });
    expect(error).toMatchObject({ code: 'fetch_failed', message: expect.stringMatching(/refused by the outbound request guard/) });
  });

  it('stops after 3 redirects', async () => {
    expect(await failure(`${base}/loop`)).toMatchObject({ code: 'fetch_failed', message: 'the URL redirected more than 3 times' });
  });

  it('stops reading past maxBytes, declared or streamed', async () => {
    expect(await failure(`${base}/big`, { maxBytes: 10_000 })).toMatchObject({
      code: 'too_large',
      message: 'the document at the URL is larger than the limit of 10,000 bytes',
    });
    expect((await failure(`${base}/declared-big`, { maxBytes: 10_000 })).code).toBe('too_large');
  });

  it('fails an HTTP error status as fetch_failed', async () => {
    expect(await failure(`${base}/missing`)).toMatchObject({ code: 'fetch_failed', message: 'the URL answered HTTP 404' });
  });

  it('fails an unreachable server as fetch_failed', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await failure(`http://127.0.0.1:${port}/doc`)).toMatchObject({
      code: 'fetch_failed',
      message: 'the URL could not be fetched (ECONNREFUSED)',
    });
  });

  it('fails an unsupported content type', async () => {
    expect(await failure(`${base}/image`)).toMatchObject({ code: 'unsupported_type', message: expect.stringMatching(/^the URL answered with "image\/png"/) });
  });

  it('gives up after the timeout', async () => {
    expect(await failure(`${base}/slow`, { timeoutMs: 300 })).toMatchObject({
      code: 'fetch_failed',
      message: 'the URL did not answer within 0.3 s',
    });
  });

  it('rejects with the reason of an aborted signal', async () => {
    const controller = new AbortController();
    const pending = fetchDocument(`${base}/slow`, { egress, maxBytes: 100_000, signal: controller.signal });
    controller.abort(new Error('shutting down'));
    await expect(pending).rejects.toThrow('shutting down');
  });
});
