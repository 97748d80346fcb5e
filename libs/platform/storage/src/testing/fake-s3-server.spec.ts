import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { decodeAwsChunked, FakeS3Server } from './fake-s3-server';

const SIGNED = { authorization: 'AWS4-HMAC-SHA256 Credential=x/20250101/us-east-1/s3/aws4_request, Signature=00' };

describe('FakeS3Server', () => {
  let fake: FakeS3Server;
  let base: string;

  beforeEach(async () => {
    fake = new FakeS3Server({ buckets: ['b'] });
    base = await fake.start();
  });
  afterEach(() => fake.stop());

  it('listens on 127.0.0.1 and serves put, get, head and delete path-style', async () => {
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const put = await fetch(`${base}/b/dir/file.txt`, {
      method: 'PUT',
      headers: { ...SIGNED, 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(put.status).toBe(200);
    const etag = put.headers.get('etag');
    expect(etag).toBe('"5d41402abc4b2a76b9719d911017c592"');

    const get = await fetch(`${base}/b/dir/file.txt`, { headers: SIGNED });
    expect(get.status).toBe(200);
    expect(get.headers.get('content-type')).toBe('text/plain');
    expect(get.headers.get('content-length')).toBe('5');
    expect(get.headers.get('etag')).toBe(etag);
    expect(await get.text()).toBe('hello');

    const head = await fetch(`${base}/b/dir/file.txt`, { method: 'HEAD', headers: SIGNED });
    expect([head.status, head.headers.get('content-length')]).toEqual([200, '5']);

    expect((await fetch(`${base}/b/dir/file.txt`, { method: 'DELETE', headers: SIGNED })).status).toBe(204);
    expect((await fetch(`${base}/b/dir/file.txt`, { method: 'DELETE', headers: SIGNED })).status).toBe(204);
    expect(fake.keys('b')).toEqual([]);
    expect(fake.requests.map((r) => `${r.method} ${r.bucket}/${r.key}`)).toEqual([
      'PUT b/dir/file.txt',
      'GET b/dir/file.txt',
      'HEAD b/dir/file.txt',
      'DELETE b/dir/file.txt',
      'DELETE b/dir/file.txt',
    ]);
  });

  it('answers S3 XML errors: NoSuchKey, NoSuchBucket, and AccessDenied without a SigV4 signature', async () => {
    const missingKey = await fetch(`${base}/b/nope`, { headers: SIGNED });
    expect(missingKey.status).toBe(404);
    expect(await missingKey.text()).toMatch(/<Error><Code>NoSuchKey<\/Code>/);

    const missingBucket = await fetch(`${base}/other/key`, { headers: SIGNED });
    expect(missingBucket.status).toBe(404);
    expect(await missingBucket.text()).toMatch(/<Code>NoSuchBucket<\/Code>/);

    const anonymous = await fetch(`${base}/b/key`);
    expect(anonymous.status).toBe(403);
    expect(await anonymous.text()).toMatch(/<Code>AccessDenied<\/Code>/);

    const head = await fetch(`${base}/b/nope`, { method: 'HEAD', headers: SIGNED });
    expect(head.status).toBe(404);
  });

  it('decodes the aws-chunked body and checks the trailing CRC32 the SDK sends for streams', async () => {
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: base,
      forcePathStyle: true,
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
    });
    try {
      const body = Readable.from([Buffer.from('hello '), Buffer.from('streamed world')]);
      await client.send(new PutObjectCommand({ Bucket: 'b', Key: 's', Body: body, ContentLength: 20 }));
    } finally {
      client.destroy();
    }

    const put = fake.requests[0];
    expect(put.headers['content-encoding']).toContain('aws-chunked');
    expect(put.headers['x-amz-content-sha256']).toMatch(/^STREAMING-/);
    expect(fake.object('b', 's')?.body.toString()).toBe('hello streamed world');
  });

  it('refuses a body whose CRC32 does not match', async () => {
    const res = await fetch(`${base}/b/k`, {
      method: 'PUT',
      headers: { ...SIGNED, 'x-amz-checksum-crc32': 'AAAAAA==' },
      body: 'hello',
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/<Code>BadDigest<\/Code>/);
    expect(fake.object('b', 'k')).toBeUndefined();
  });

  it('decodes signed aws-chunked framing with trailers', () => {
    const raw = Buffer.from(
      '5;chunk-signature=abc\r\nhello\r\n3;chunk-signature=def\r\n!!!\r\n0;chunk-signature=000\r\n' +
        'x-amz-checksum-crc32:AAAAAA==\r\n\r\n',
    );
    expect(decodeAwsChunked(raw)).toEqual({
      body: Buffer.from('hello!!!'),
      trailers: { 'x-amz-checksum-crc32': 'AAAAAA==' },
    });
  });

  it('stops even while the SDK holds keep-alive connections', async () => {
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: base,
      forcePathStyle: true,
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
    });
    await client.send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: Buffer.from('x') }));
    await fake.stop();
    await expect(fetch(`${base}/b/k`, { headers: SIGNED })).rejects.toThrow();
    client.destroy();
  });
});
