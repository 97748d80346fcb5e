import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { LocalBlobStore } from './local-blob-store';

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

describe('LocalBlobStore', () => {
  let root: string;
  let store: LocalBlobStore;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'parley-local-blob-'));
    store = new LocalBlobStore(join(root, 'store'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('writes the object as a plain file under the root, creating directories, with a content-type sidecar', async () => {
    await store.put('recordings/acc_x/call_y.wav', Buffer.from('wav bytes'), 'audio/wav');

    expect(await readFile(join(root, 'store/recordings/acc_x/call_y.wav'), 'utf8')).toBe('wav bytes');
    expect(await listFiles(join(root, 'store'))).toEqual([
      'recordings/acc_x/call_y.wav',
      'recordings/acc_x/call_y.wav~meta.json',
    ]);
  });

  it('reports application/octet-stream when the sidecar is missing', async () => {
    await mkdir(join(root, 'store/imported'), { recursive: true });
    await writeFile(join(root, 'store/imported/file.bin'), 'abc');
    const got = await store.get('imported/file.bin');
    got?.body.destroy();
    expect(got).toMatchObject({ size: 3, contentType: 'application/octet-stream' });
  });

  it('keeps the previous object and leaves no temporary file when a streamed put fails', async () => {
    await store.put('a/b.wav', Buffer.from('old'), 'audio/wav');
    const failing = new Readable({
      read() {
        this.push(Buffer.from('partial new bytes'));
        this.destroy(new Error('caller hung up'));
      },
    });

    await expect(store.put('a/b.wav', failing, 'audio/x-new')).rejects.toThrow('caller hung up');

    const got = await store.get('a/b.wav');
    got?.body.destroy();
    expect(got).toMatchObject({ size: 3, contentType: 'audio/wav' });
    expect(await listFiles(join(root, 'store'))).toEqual(['a/b.wav', 'a/b.wav~meta.json']);
  });

  it('lets a reader finish the version it opened while a put replaces it', async () => {
    await store.put('k', Buffer.alloc(100_000, 'a'), 'text/plain');
    const reading = await store.get('k');
    if (!reading) throw new Error('expected the first version');
    await store.put('k', Buffer.from('new'), 'text/plain');

    const chunks: Buffer[] = [];
    for await (const chunk of reading.body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks)).toEqual(Buffer.alloc(100_000, 'a'));
  });

  it('cannot address anything outside its root', async () => {
    await writeFile(join(root, 'secret.txt'), 'top secret');

    for (const key of ['../secret.txt', 'x/../../secret.txt', '/etc/passwd', '..']) {
      expect(() => store.pathOf(key)).toThrow(/Invalid blob key/);
      await expect(store.get(key)).rejects.toThrow(/Invalid blob key/);
      await expect(store.delete(key)).rejects.toThrow(/Invalid blob key/);
    }
    expect(await readFile(join(root, 'secret.txt'), 'utf8')).toBe('top secret');
    expect(store.pathOf('a/b.wav')).toBe(join(root, 'store', 'a', 'b.wav'));
  });

  it('treats a directory of other keys as no object', async () => {
    await store.put('a/b.wav', Buffer.from('x'), 'audio/wav');
    expect(await store.get('a')).toBeUndefined();
    await expect(store.delete('a')).resolves.toBeUndefined();
    expect(await store.exists('a/b.wav')).toBe(true);
  });

  it('removes the sidecar with the object', async () => {
    await store.put('a/b.wav', Buffer.from('x'), 'audio/wav');
    await store.delete('a/b.wav');
    expect(await listFiles(join(root, 'store'))).toEqual([]);
  });
});
