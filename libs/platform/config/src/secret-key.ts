import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** SECRET_KEY, or a key generated once and kept (mode 0600) under DATA_DIR for single-machine deployments. */
export function resolveSecretKey(config: { SECRET_KEY?: string; DATA_DIR: string }): string {
  if (config.SECRET_KEY) return config.SECRET_KEY;
  const file = join(resolve(config.DATA_DIR), 'secret-key');
  if (!existsSync(file)) {
    mkdirSync(resolve(config.DATA_DIR), { recursive: true });
    try {
      writeFileSync(file, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
      chmodSync(file, 0o600);
    } catch (error) {
      // Another service of this process or machine wrote it first: use theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return readFileSync(file, 'utf8').trim();
}
