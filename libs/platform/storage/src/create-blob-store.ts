import { join } from 'node:path';
import type { BlobStore } from './blob-store';
import { LocalBlobStore } from './local-blob-store';
import { S3BlobStore } from './s3-blob-store';

/** The configuration `createBlobStore` reads; structurally a subset of the platform's validated config. */
export interface BlobStoreConfig {
  /** `local` or `s3`. */
  RECORDINGS_STORE: string;
  RECORDINGS_DIR?: string;
  DATA_DIR: string;
  S3_ENDPOINT?: string;
  S3_BUCKET?: string;
  S3_REGION: string;
  S3_ACCESS_KEY_ID?: string;
  S3_SECRET_ACCESS_KEY?: string;
  S3_FORCE_PATH_STYLE: boolean;
}

/** The recordings store the configuration asks for: a directory (default `DATA_DIR/recordings`) or a bucket. */
export function createBlobStore(config: BlobStoreConfig): BlobStore {
  switch (config.RECORDINGS_STORE) {
    case 'local':
      return new LocalBlobStore(config.RECORDINGS_DIR || join(config.DATA_DIR, 'recordings'));
    case 's3':
      if (!config.S3_BUCKET) throw new Error('RECORDINGS_STORE=s3 needs S3_BUCKET');
      return new S3BlobStore({
        bucket: config.S3_BUCKET,
        region: config.S3_REGION,
        endpoint: config.S3_ENDPOINT || undefined,
        forcePathStyle: config.S3_FORCE_PATH_STYLE,
        accessKeyId: config.S3_ACCESS_KEY_ID || undefined,
        secretAccessKey: config.S3_SECRET_ACCESS_KEY || undefined,
      });
    default:
      throw new Error(`RECORDINGS_STORE must be "local" or "s3", got ${JSON.stringify(config.RECORDINGS_STORE)}`);
  }
}
