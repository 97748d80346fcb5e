import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** An opaque prefixed identifier (`agt_…`, `call_…`) with 128 bits of randomness in base62. */
export function newId(prefix: string): string {
  const bytes = randomBytes(22);
  let out = '';
  for (const b of bytes) out += ALPHABET[b % 62];
  return `${prefix}_${out}`;
}
