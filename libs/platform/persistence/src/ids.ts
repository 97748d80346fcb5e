import { createHash, randomFillSync } from 'node:crypto';

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

const ID_SHAPE = new RegExp(`^[0-9A-Za-z]{${ID_BYTES}}$`);

/**
 * Whether `value` has the shape newId(prefix) gives (the format has not changed since the first id was stored): a
 * value that fails can name no stored object, so it is answered "not found" without any query.
 */
export function isWellFormedId(prefix: string, value: string): boolean {
  return value.length === prefix.length + 1 + ID_BYTES && value.startsWith(`${prefix}_`) && ID_SHAPE.test(value.slice(prefix.length + 1));
}

/**
 * The id of an account's default project (`prj_…`), derived from the account id so every service knows it without
 * asking the gateway (which owns projects): resources stored before projects existed, or created without one,
 * belong to it. Well formed as newId's ids are (hex digits are base62).
 */
export function defaultProjectId(accountId: string): string {
  return `prj_${createHash('sha256').update(`parley-default-project\n${accountId}`).digest('hex').slice(0, ID_BYTES)}`;
}

/**
 * The SQL condition selecting the rows of project `projectId` by `column` (whose null means the account's default
 * project), with `param` the named parameter holding the id: `= id` for another project, so an index on the column
 * serves it, and `= id OR IS NULL` for the default project.
 */
export function projectCondition(column: string, accountId: string, projectId: string, param: string): string {
  return projectId === defaultProjectId(accountId) ? `(${column} = ${param} OR ${column} IS NULL)` : `${column} = ${param}`;
}
