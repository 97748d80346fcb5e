import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';

/** One request the fake received, as the SDK sent it (body already decoded from aws-chunked). */
export interface FakeS3Request {
  method: string;
  bucket: string | undefined;
  key: string | undefined;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface FakeS3Object {
  body: Buffer;
  contentType: string;
  etag: string;
  lastModified: Date;
}

/**
 * Enough of the S3 REST API, path-style (`/{bucket}/{key}`), for `@aws-sdk/client-s3` to put, get, head and
 * delete objects: a real HTTP server on 127.0.0.1 so the SDK's whole stack (signing, checksums, XML errors) runs.
 * Any SigV4 `Authorization` header is accepted (requests without one get `AccessDenied`); every request is
 * recorded in {@link requests}. Bodies sent `aws-chunked` (the SDK does so for streams, with a trailing checksum)
 * are decoded.
 */
export class FakeS3Server {
  readonly requests: FakeS3Request[] = [];
  private readonly buckets = new Map<string, Map<string, FakeS3Object>>();
  private server: Server | undefined;

  constructor(options: { buckets?: string[] } = {}) {
    for (const bucket of options.buckets ?? ['recordings']) this.createBucket(bucket);
  }

  createBucket(bucket: string): void {
    if (!this.buckets.has(bucket)) this.buckets.set(bucket, new Map());
  }

  /** What is stored under `bucket`/`key`, for assertions. */
  object(bucket: string, key: string): FakeS3Object | undefined {
    return this.buckets.get(bucket)?.get(key);
  }

  keys(bucket: string): string[] {
    return [...(this.buckets.get(bucket)?.keys() ?? [])].sort();
  }

  /** Listens on a random port of 127.0.0.1; resolves to the base URL (the SDK's `endpoint`). */
  async start(): Promise<string> {
    if (this.server) throw new Error('FakeS3Server already started');
    const server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendError(res, 500, 'InternalError', String(error));
        else res.destroy();
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    // The SDK keeps connections alive; close them or close() waits for their idle timeout.
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake-s3');
    const [rawBucket, ...rawKey] = url.pathname.slice(1).split('/');
    const bucket = rawBucket ? decodeURIComponent(rawBucket) : undefined;
    const key = rawKey.length ? rawKey.map(decodeURIComponent).join('/') || undefined : undefined;
    const raw = await readBody(req);
    const { body, trailers } = isAwsChunked(req.headers) ? decodeAwsChunked(raw) : { body: raw, trailers: {} };
    const method = req.method ?? 'GET';
    this.requests.push({ method, bucket, key, headers: req.headers, body });

    if (!/^AWS4-HMAC-SHA256 /.test(req.headers.authorization ?? '')) {
      return sendError(res, 403, 'AccessDenied', 'Access Denied', method);
    }
    const objects = bucket ? this.buckets.get(bucket) : undefined;
    if (!objects) return sendError(res, 404, 'NoSuchBucket', 'The specified bucket does not exist', method);
    if (!key) return sendError(res, 501, 'NotImplemented', `${method} on a bucket is not implemented`, method);

    switch (method) {
      case 'PUT': {
        const decodedLength = req.headers['x-amz-decoded-content-length'];
        if (decodedLength !== undefined && Number(decodedLength) !== body.length) {
          return sendError(res, 400, 'IncompleteBody', 'Body length differs from x-amz-decoded-content-length');
        }
        // The SDK sends a CRC32 by default (header for buffers, trailer for streams); check it like S3 does.
        const checksum = trailers['x-amz-checksum-crc32'] ?? req.headers['x-amz-checksum-crc32'];
        if (typeof checksum === 'string' && checksum !== crc32Base64(body)) {
          return sendError(res, 400, 'BadDigest', 'The CRC32 you specified did not match the calculated checksum.');
        }
        const etag = `"${createHash('md5').update(body).digest('hex')}"`;
        const contentType = req.headers['content-type'] ?? 'binary/octet-stream';
        objects.set(key, { body, contentType, etag, lastModified: new Date() });
        res.writeHead(200, { ETag: etag, 'x-amz-request-id': requestId() });
        res.end();
        return;
      }
      case 'GET':
      case 'HEAD': {
        const object = objects.get(key);
        if (!object) return sendError(res, 404, 'NoSuchKey', 'The specified key does not exist.', method);
        res.writeHead(200, {
          'Content-Length': object.body.length,
          'Content-Type': object.contentType,
          ETag: object.etag,
          'Last-Modified': object.lastModified.toUTCString(),
          'x-amz-request-id': requestId(),
        });
        res.end(method === 'GET' ? object.body : undefined);
        return;
      }
      case 'DELETE':
        // S3 answers 204 whether or not the key existed.
        objects.delete(key);
        res.writeHead(204, { 'x-amz-request-id': requestId() });
        res.end();
        return;
      default:
        return sendError(res, 405, 'MethodNotAllowed', `${method} is not allowed`, method);
    }
  }
}

function isAwsChunked(headers: IncomingHttpHeaders): boolean {
  return (
    String(headers['x-amz-content-sha256'] ?? '').startsWith('STREAMING-') ||
    String(headers['content-encoding'] ?? '')
      .split(',')
      .some((encoding) => encoding.trim() === 'aws-chunked')
  );
}

/**
 * Decodes `aws-chunked`: `<hex size>[;chunk-signature=…]\r\n<bytes>\r\n` repeated, a zero-size chunk, then
 * trailer lines (`x-amz-checksum-crc32:…`) and a blank line.
 */
export function decodeAwsChunked(raw: Buffer): { body: Buffer; trailers: Record<string, string> } {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    if (lineEnd < 0) throw new Error('aws-chunked body: missing chunk header');
    const size = parseInt(raw.subarray(at, lineEnd).toString('latin1').split(';')[0].trim(), 16);
    if (!Number.isFinite(size) || size < 0) throw new Error('aws-chunked body: bad chunk size');
    at = lineEnd + 2;
    if (size === 0) break;
    if (at + size > raw.length) throw new Error('aws-chunked body: truncated chunk');
    parts.push(raw.subarray(at, at + size));
    at += size + 2;
  }
  const trailers: Record<string, string> = {};
  for (const line of raw.subarray(at).toString('latin1').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) trailers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { body: Buffer.concat(parts), trailers };
}

function crc32Base64(body: Buffer): string {
  const digest = Buffer.alloc(4);
  digest.writeUInt32BE(crc32(body));
  return digest.toString('base64');
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function sendError(res: ServerResponse, status: number, code: string, message: string, method?: string): void {
  const id = requestId();
  const xml =
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message><RequestId>${id}</RequestId></Error>`;
  // HEAD responses carry no body; the SDK then falls back to the status code (404 → NotFound).
  res.writeHead(status, { 'Content-Type': 'application/xml', 'x-amz-request-id': id });
  res.end(method === 'HEAD' ? undefined : xml);
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

function requestId(): string {
  return randomBytes(8).toString('hex').toUpperCase();
}
