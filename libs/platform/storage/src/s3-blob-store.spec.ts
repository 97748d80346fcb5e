import { Readable } from 'node:stream';
import { S3BlobStore } from './s3-blob-store';
import { FakeS3Server } from './testing/fake-s3-server';

describe('S3BlobStore', () => {
  let fake: FakeS3Server;
  let endpoint: string;
  const stores: S3BlobStore[] = [];

  function open(bucket = 'recordings'): S3BlobStore {
    const store = new S3BlobStore({
      bucket,
      region: 'eu-west-1',
      endpoint,
      forcePathStyle: true,
      accessKeyId: 'AKIDTEST',
      secretAccessKey: 'secret',
    });
    stores.push(store);
    return store;
  }

  beforeEach(async () => {
    fake = new FakeS3Server({ buckets: ['recordings'] });
    endpoint = await fake.start();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) store.destroy();
    await fake.stop();
  });

  it('puts path-style, signed with the configured credentials and region', async () => {
    await open().put('recordings/acc_1/call_1.wav', Buffer.from('abc'), 'audio/wav');

    const put = fake.requests.find((r) => r.method === 'PUT');
    expect(put).toMatchObject({ bucket: 'recordings', key: 'recordings/acc_1/call_1.wav' });
    expect(put?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/eu-west-1\/s3\/aws4_request/);
    expect(fake.object('recordings', 'recordings/acc_1/call_1.wav')).toMatchObject({
      body: Buffer.from('abc'),
      contentType: 'audio/wav',
    });
  });

  it('buffers a Readable body and sends it with a known length', async () => {
    await open().put('s.bin', Readable.from([Buffer.from('ab'), Buffer.from('cd')]), 'application/octet-stream');

    const put = fake.requests.find((r) => r.method === 'PUT');
    expect(put?.headers['content-length']).toBe('4');
    expect(fake.object('recordings', 's.bin')?.body.toString()).toBe('abcd');
  });

  it('surfaces a missing bucket as an error rather than a missing object', async () => {
    const store = open('no-such-bucket');
    await expect(store.get('a.wav')).rejects.toMatchObject({ name: 'NoSuchBucket' });
    await expect(store.put('a.wav', Buffer.from('x'), 'audio/wav')).rejects.toMatchObject({ name: 'NoSuchBucket' });
  });

  it('validates keys before any request', async () => {
    await expect(open().get('../x')).rejects.toThrow(/Invalid blob key/);
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses half-configured credentials', () => {
    expect(
      () => new S3BlobStore({ bucket: 'b', region: 'us-east-1', forcePathStyle: true, accessKeyId: 'only-id' }),
    ).toThrow(/both accessKeyId and secretAccessKey/);
  });
});
