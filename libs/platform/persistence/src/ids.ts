import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_BYTES = 22;
// Random bytes are drawn 4 KiB at a time: one call into the CSPRNG per ~180 ids instead of one per id.
const pool = Buffer.alloc(4096 - (4096 % ID_BYTES));
let offset = pool.length;

/** An opaque prefixed identifier (`agt_…`, `call_…`) with 128 bits of randomness in base62. */
export function newId(prefix: string): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  let out = '';
  for (let i = offset; i < offset + ID_BYTES; i++) out += ALPHABET[pool[i] % 62];
  offset += ID_BYTES;
  return `${prefix}_${out}`;
}
