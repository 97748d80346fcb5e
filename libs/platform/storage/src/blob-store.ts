import type { Readable } from 'node:stream';

/** A stored object as read back: a stream of its bytes plus what was recorded at `put`. */
export interface BlobObject {
  body: Readable;
  size: number;
  contentType: string;
}

/**
 * Where large binary artefacts (call recordings) live: a directory on this machine or an S3-compatible bucket.
 * Keys are validated the same way by every store (see {@link assertValidBlobKey}) so a key that works locally
 * works on S3 and cannot address anything outside the store.
 */
export interface BlobStore {
  readonly kind: 'local' | 's3';
  /** Stores `body` under `key`, replacing any previous object; readers never see a partial object. */
  put(key: string, body: Buffer | Readable, contentType: string): Promise<void>;
  /** The object, or undefined when there is none under `key`. */
  get(key: string): Promise<BlobObject | undefined>;
  exists(key: string): Promise<boolean>;
  /** Removes the object; removing a missing key is not an error. */
  delete(key: string): Promise<void>;
}

export const MAX_BLOB_KEY_LENGTH = 512;

const SEGMENT = /^[A-Za-z0-9._-]+$/;

/** Why `key` is not a valid blob key, or undefined when it is. */
export function blobKeyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string' || key.length === 0) return 'must be a non-empty string';
  if (key.length > MAX_BLOB_KEY_LENGTH) return `must be at most ${MAX_BLOB_KEY_LENGTH} characters`;
  if (key.startsWith('/')) return 'must not start with "/"';
  for (const segment of key.split('/')) {
    if (segment.length === 0) return 'must not contain empty segments ("//" or a trailing "/")';
    if (segment === '.' || segment === '..') return 'must not contain "." or ".." segments';
    if (!SEGMENT.test(segment)) return 'segments may only contain A-Z, a-z, 0-9, ".", "_" and "-"';
  }
  return undefined;
}

/** Throws unless `key` looks like `recordings/acc_x/call_y.wav` (see {@link blobKeyProblem}). */
export function assertValidBlobKey(key: string): void {
  const problem = blobKeyProblem(key);
  if (problem) throw new Error(`Invalid blob key ${JSON.stringify(String(key).slice(0, 80))}: ${problem}`);
}
