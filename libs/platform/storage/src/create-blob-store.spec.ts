import { join } from 'node:path';
import { createBlobStore, type BlobStoreConfig } from './create-blob-store';
import { LocalBlobStore } from './local-blob-store';
import { S3BlobStore } from './s3-blob-store';
import { FakeS3Server } from './testing/fake-s3-server';

const base: BlobStoreConfig = {
  RECORDINGS_STORE: 'local',
  DATA_DIR: '/var/lib/parley',
  S3_REGION: 'us-east-1',
  S3_FORCE_PATH_STYLE: false,
};

describe('createBlobStore', () => {
  it('stores locally under DATA_DIR/recordings by default', () => {
    const store = createBlobStore(base);
    expect(store).toBeInstanceOf(LocalBlobStore);
    expect((store as LocalBlobStore).rootDir).toBe(join('/var/lib/parley', 'recordings'));
  });

  it('stores locally under RECORDINGS_DIR when set', () => {
    const store = createBlobStore({ ...base, RECORDINGS_DIR: '/mnt/recordings' });
    expect((store as LocalBlobStore).rootDir).toBe('/mnt/recordings');
  });

  it('stores in the configured S3 bucket and endpoint when asked', async () => {
    const fake = new FakeS3Server({ buckets: ['parley-recordings'] });
    const store = createBlobStore({
      ...base,
      RECORDINGS_STORE: 's3',
      S3_BUCKET: 'parley-recordings',
      S3_ENDPOINT: await fake.start(),
      S3_ACCESS_KEY_ID: 'id',
      S3_SECRET_ACCESS_KEY: 'secret',
      S3_FORCE_PATH_STYLE: true,
    });
    try {
      expect(store.kind).toBe('s3');
      await store.put('r/a.wav', Buffer.from('x'), 'audio/wav');
      expect(fake.object('parley-recordings', 'r/a.wav')?.contentType).toBe('audio/wav');
    } finally {
      (store as S3BlobStore).destroy();
      await fake.stop();
    }
  });

  it('refuses S3 without a bucket and unknown store kinds', () => {
    expect(() => createBlobStore({ ...base, RECORDINGS_STORE: 's3' })).toThrow(/S3_BUCKET/);
    expect(() => createBlobStore({ ...base, RECORDINGS_STORE: 'ftp' })).toThrow(/"local" or "s3"/);
  });
});
