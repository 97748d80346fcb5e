import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { assertValidBlobKey, type BlobObject, blobKeyProblem, type BlobStore, MAX_BLOB_KEY_LENGTH } from './blob-store';
import { LocalBlobStore } from './local-blob-store';
import { S3BlobStore } from './s3-blob-store';
import { FakeS3Server } from './testing/fake-s3-server';

async function readStream(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function getOrFail(store: BlobStore, key: string): Promise<BlobObject> {
  const got = await store.get(key);
  if (!got) throw new Error(`expected an object under ${key}`);
  return got;
}

const INVALID_KEYS = [
  '',
  '/recordings/a.wav',
  'recordings//a.wav',
  'recordings/a.wav/',
  'recordings/../secrets',
  '../outside.wav',
  'recordings/./a.wav',
  'recordings/a b.wav',
  'recordings\\a.wav',
  'recordings/ü.wav',
  'a'.repeat(MAX_BLOB_KEY_LENGTH + 1),
];

describe('blob keys', () => {
  it('accepts slash-separated segments of letters, digits, ".", "_" and "-"', () => {
    for (const key of ['recordings/acc_x/call_y.wav', 'a', 'a.b-c_d/E.F', 'x'.repeat(MAX_BLOB_KEY_LENGTH)]) {
      expect(blobKeyProblem(key)).toBeUndefined();
      expect(() => assertValidBlobKey(key)).not.toThrow();
    }
  });

  it.each(INVALID_KEYS.map((key) => [key.length > 40 ? `${key.slice(0, 20)}…` : key, key]))(
    'refuses %j with a message naming the problem',
    (_label, key) => {
      expect(blobKeyProblem(key)).toEqual(expect.any(String));
      expect(() => assertValidBlobKey(key)).toThrow(/^Invalid blob key .*: (must|segments)/);
    },
  );
});

interface Harness {
  store: BlobStore;
  close(): Promise<void>;
}

const stores: [string, () => Promise<Harness>][] = [
  [
    'LocalBlobStore',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'parley-blob-'));
      return { store: new LocalBlobStore(dir), close: () => rm(dir, { recursive: true, force: true }) };
    },
  ],
  [
    'S3BlobStore (against FakeS3Server)',
    async () => {
      const fake = new FakeS3Server({ buckets: ['recordings'] });
      const endpoint = await fake.start();
      const store = new S3BlobStore({
        bucket: 'recordings',
        region: 'us-east-1',
        endpoint,
        forcePathStyle: true,
        accessKeyId: 'test-access-key',
        secretAccessKey: 'test-secret-key',
      });
      return {
        store,
        close: async () => {
          store.destroy();
          await fake.stop();
        },
      };
    },
  ],
];

describe.each(stores)('%s', (_name, open) => {
  let harness: Harness;
  let store: BlobStore;

  beforeEach(async () => {
    harness = await open();
    store = harness.store;
  });
  afterEach(() => harness.close());

  it('returns what was put, with its content type and size', async () => {
    const body = Buffer.from('RIFF....WAVEfmt fake recording bytes');
    await store.put('recordings/acc_x/call_y.wav', body, 'audio/wav');

    const got = await getOrFail(store, 'recordings/acc_x/call_y.wav');
    expect(got).toMatchObject({ size: body.length, contentType: 'audio/wav' });
    expect(await readStream(got.body)).toEqual(body);
  });

  it('stores a Readable body the same as a Buffer', async () => {
    const parts = [Buffer.alloc(70_000, 1), Buffer.alloc(5, 2), Buffer.from('end')];
    await store.put('streams/s.bin', Readable.from(parts), 'application/octet-stream');

    const got = await getOrFail(store, 'streams/s.bin');
    expect(got.size).toBe(70_008);
    expect(await readStream(got.body)).toEqual(Buffer.concat(parts));
  });

  it('stores an empty object', async () => {
    await store.put('empty.txt', Buffer.alloc(0), 'text/plain');
    const got = await getOrFail(store, 'empty.txt');
    expect(got).toMatchObject({ size: 0, contentType: 'text/plain' });
    expect(await readStream(got.body)).toEqual(Buffer.alloc(0));
  });

  it('replaces an object on overwrite, content type included', async () => {
    await store.put('k/v', Buffer.from('first version, longer'), 'text/plain');
    await store.put('k/v', Buffer.from('second'), 'application/json');

    const got = await getOrFail(store, 'k/v');
    expect(got).toMatchObject({ size: 6, contentType: 'application/json' });
    expect((await readStream(got.body)).toString()).toBe('second');
  });

  it('reports existence', async () => {
    expect(await store.exists('a/b.wav')).toBe(false);
    await store.put('a/b.wav', Buffer.from('x'), 'audio/wav');
    expect(await store.exists('a/b.wav')).toBe(true);
    expect(await store.exists('a')).toBe(false);
    expect(await store.exists('a/b')).toBe(false);
  });

  it('deletes objects, and deleting a missing key is not an error', async () => {
    await store.put('a/b.wav', Buffer.from('x'), 'audio/wav');
    await store.put('a/c.wav', Buffer.from('y'), 'audio/wav');

    await store.delete('a/b.wav');
    await expect(store.delete('a/b.wav')).resolves.toBeUndefined();
    await expect(store.delete('never/was.wav')).resolves.toBeUndefined();

    expect(await store.exists('a/b.wav')).toBe(false);
    expect(await store.get('a/b.wav')).toBeUndefined();
    expect(await store.exists('a/c.wav')).toBe(true);
  });

  it('returns undefined for a missing key', async () => {
    expect(await store.get('recordings/nope.wav')).toBeUndefined();
  });

  it('refuses invalid keys in every operation', async () => {
    for (const key of ['../escape.wav', '/abs.wav', 'a//b', 'a/../../b']) {
      await expect(store.put(key, Buffer.from('x'), 'text/plain')).rejects.toThrow(/Invalid blob key/);
      await expect(store.get(key)).rejects.toThrow(/Invalid blob key/);
      await expect(store.exists(key)).rejects.toThrow(/Invalid blob key/);
      await expect(store.delete(key)).rejects.toThrow(/Invalid blob key/);
    }
  });
});
