import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveSecretKey } from './secret-key';

describe('resolveSecretKey', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-secret-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('uses SECRET_KEY when set and writes nothing', () => {
    const secret = 's'.repeat(40);

    expect(resolveSecretKey({ SECRET_KEY: secret, DATA_DIR: dir })).toBe(secret);
    expect(existsSync(join(dir, 'secret-key'))).toBe(false);
  });

  it('generates a key into DATA_DIR/secret-key with mode 0600 when SECRET_KEY is unset', () => {
    const key = resolveSecretKey({ DATA_DIR: dir });

    const file = join(dir, 'secret-key');
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes, base64url
    expect(readFileSync(file, 'utf8')).toBe(key);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('returns the same key on a second call', () => {
    const first = resolveSecretKey({ DATA_DIR: dir });

    expect(resolveSecretKey({ DATA_DIR: dir })).toBe(first);
    expect(resolveSecretKey({ SECRET_KEY: '', DATA_DIR: dir })).toBe(first);
  });

  it('creates a DATA_DIR that does not exist yet', () => {
    const nested = join(dir, 'a', 'b');

    const key = resolveSecretKey({ DATA_DIR: nested });

    expect(readFileSync(join(nested, 'secret-key'), 'utf8')).toBe(key);
  });

  it('keeps an existing key file, trimming its whitespace', () => {
    writeFileSync(join(dir, 'secret-key'), 'operator-provided-key-0123456789abcdef\n');

    expect(resolveSecretKey({ DATA_DIR: dir })).toBe('operator-provided-key-0123456789abcdef');
  });

  it('generates a different key for a different DATA_DIR', () => {
    const other = mkdtempSync(join(tmpdir(), 'parley-secret-'));
    try {
      expect(resolveSecretKey({ DATA_DIR: dir })).not.toBe(resolveSecretKey({ DATA_DIR: other }));
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
