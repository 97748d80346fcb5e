import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { assertValidBlobKey, type BlobObject, type BlobStore } from './blob-store';

export interface S3BlobStoreOptions {
  bucket: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, R2, …); AWS when omitted. */
  endpoint?: string;
  /** `/{bucket}/{key}` URLs instead of `{bucket}.host`, as most S3-compatible servers want. */
  forcePathStyle: boolean;
  /** Both or neither; without them the SDK's default chain (environment, instance role, …) applies. */
  accessKeyId?: string;
  secretAccessKey?: string;
}

/**
 * A {@link BlobStore} on an S3 bucket. `@aws-sdk/lib-storage` (multipart upload) is not a dependency, so a
 * Readable body is buffered into memory and sent with one PutObject: fine for call recordings (tens of MB), and
 * it gives the SDK a known length, which some S3-compatible servers require.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  readonly bucket: string;
  private readonly client: S3Client;

  constructor(options: S3BlobStoreOptions) {
    if (!options.bucket) throw new Error('S3BlobStore: bucket is required');
    if (Boolean(options.accessKeyId) !== Boolean(options.secretAccessKey)) {
      throw new Error('S3BlobStore: set both accessKeyId and secretAccessKey, or neither');
    }
    this.bucket = options.bucket;
    const config: S3ClientConfig = { region: options.region, forcePathStyle: options.forcePathStyle };
    if (options.endpoint) config.endpoint = options.endpoint;
    if (options.accessKeyId && options.secretAccessKey) {
      config.credentials = { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey };
    }
    this.client = new S3Client(config);
  }

  async put(key: string, body: Buffer | Readable, contentType: string): Promise<void> {
    assertValidBlobKey(key);
    const bytes = Buffer.isBuffer(body) ? body : await readAll(body);
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: bytes,
        ContentType: contentType,
        ContentLength: bytes.length,
      }),
    );
  }

  async get(key: string): Promise<BlobObject | undefined> {
    assertValidBlobKey(key);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const body = out.Body;
      if (!(body instanceof Readable)) throw new Error('S3BlobStore: GetObject returned no Node.js stream');
      return {
        body,
        size: out.ContentLength ?? 0,
        contentType: out.ContentType ?? 'application/octet-stream',
      };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    assertValidBlobKey(key);
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    assertValidBlobKey(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      // S3 itself answers 204 for a missing key; some compatible servers answer 404.
      if (!isNotFound(error)) throw error;
    }
  }

  /** Closes the SDK's pooled connections. */
  destroy(): void {
    this.client.destroy();
  }
}

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** NoSuchKey (GET) or NotFound (HEAD, which has no error body), but not NoSuchBucket: that is misconfiguration. */
function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  const name = e?.name ?? e?.Code;
  if (name === 'NoSuchKey' || name === 'NotFound') return true;
  return e?.$metadata?.httpStatusCode === 404 && name !== 'NoSuchBucket';
}
