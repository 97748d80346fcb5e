import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { assertValidBlobKey, type BlobObject, type BlobStore } from './blob-store';

const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/**
 * A {@link BlobStore} on the local filesystem: key `a/b.wav` is the file `<rootDir>/a/b.wav`.
 *
 * The content type lives in a sidecar JSON file `<file>~meta.json`, and temporary files are named
 * `.<file>~tmp-<random>`: `~` is not allowed in keys, so neither can ever collide with a stored object.
 * Writes go to a temporary file in the target directory, are fsynced, then renamed over the target, so readers
 * see the old object or the new one, never a partial one. (A key cannot be both an object and a "directory" of
 * other keys, e.g. `a` and `a/b`; S3 allows that, this store refuses the second with the filesystem's error.)
 */
export class LocalBlobStore implements BlobStore {
  readonly kind = 'local' as const;
  readonly rootDir: string;

  constructor(rootDir: string) {
    this.rootDir = resolve(rootDir);
  }

  async put(key: string, body: Buffer | Readable, contentType: string): Promise<void> {
    const file = this.pathOf(key);
    const dir = dirname(file);
    await mkdir(dir, { recursive: true });
    const dataTmp = tempPath(file);
    const metaTmp = tempPath(metaPath(file));
    try {
      await writeDurably(dataTmp, body);
      await writeDurably(metaTmp, Buffer.from(JSON.stringify({ contentType })));
      // Metadata first: a reader racing the two renames may see the new type with the old bytes, never a new
      // object without its type.
      await rename(metaTmp, metaPath(file));
      await rename(dataTmp, file);
    } catch (error) {
      await Promise.all([rm(dataTmp, { force: true }), rm(metaTmp, { force: true })]);
      throw error;
    }
  }

  async get(key: string): Promise<BlobObject | undefined> {
    const file = this.pathOf(key);
    let handle;
    try {
      // Open first: the stream keeps reading this version even if a put renames a new one over it.
      handle = await open(file, 'r');
    } catch (error) {
      // EISDIR: the key names a "directory" of other keys (some platforms refuse to open one), not an object.
      if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'EISDIR') return undefined;
      throw error;
    }
    try {
      const info = await handle.stat();
      if (!info.isFile()) {
        await handle.close();
        return undefined;
      }
      const contentType = await this.readContentType(file);
      return { body: handle.createReadStream(), size: info.size, contentType };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await stat(this.pathOf(key))).isFile();
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    if (!(await this.exists(key))) return;
    await rm(file, { force: true });
    await rm(metaPath(file), { force: true });
  }

  /** The absolute path of `key`, refusing anything that would resolve outside the root. */
  pathOf(key: string): string {
    assertValidBlobKey(key);
    const file = resolve(this.rootDir, key);
    // Validation already rules out "..", this is the second line of defence.
    if (!file.startsWith(this.rootDir + sep)) {
      throw new Error(`Invalid blob key ${JSON.stringify(key)}: escapes the store root`);
    }
    return file;
  }

  private async readContentType(file: string): Promise<string> {
    try {
      const meta = JSON.parse(await readFile(metaPath(file), 'utf8')) as { contentType?: unknown };
      return typeof meta.contentType === 'string' && meta.contentType ? meta.contentType : DEFAULT_CONTENT_TYPE;
    } catch (error) {
      if (isMissing(error)) return DEFAULT_CONTENT_TYPE;
      throw error;
    }
  }
}

function metaPath(file: string): string {
  return `${file}~meta.json`;
}

function tempPath(file: string): string {
  return join(dirname(file), `.${basename(file)}~tmp-${randomBytes(6).toString('hex')}`);
}

async function writeDurably(path: string, body: Buffer | Readable): Promise<void> {
  const handle = await open(path, 'wx');
  try {
    if (Buffer.isBuffer(body)) {
      await writeAll(handle, body);
    } else {
      for await (const chunk of body) await writeAll(handle, typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}

// A single write may be short; loop until the chunk is on disk.
async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let offset = 0; offset < chunk.length; ) offset += (await handle.write(chunk, offset)).bytesWritten;
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
