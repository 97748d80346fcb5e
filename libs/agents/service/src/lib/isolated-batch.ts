import { isDatabaseUnavailable } from '@parley/persistence';

/**
 * Reads many keys with one statement and, should that statement fail, each key on its own: a key the database
 * refuses then fails alone (its own Error in its place) and never fails the keys read beside it, which may belong to
 * other accounts. The database being unreachable is every key's failure and is thrown as it is.
 */
export async function readIsolated<K, V>(
  keys: readonly K[],
  readAll: (keys: readonly K[]) => Promise<readonly V[]>,
  readOne: (key: K) => Promise<V>,
): Promise<(V | Error)[]> {
  try {
    return [...(await readAll(keys))];
  } catch (error) {
    if (isDatabaseUnavailable(error)) throw error;
    if (keys.length === 1) return [asError(error)];
    return Promise.all(keys.map((key) => readOne(key).catch((e: unknown) => asError(e))));
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
