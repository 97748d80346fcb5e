import DataLoader from 'dataloader';

export interface PerTurnBatchOptions {
  /** The most keys one call to `load` carries; more go in further calls of the same turn. */
  maxBatchSize?: number;
  /**
   * Whether a failed call may have failed through one of its keys (rather than for a reason all share, such as the
   * peer being unreachable): such a call is made again key by key, so that key fails alone. Without it, or when it
   * answers false, every key of the call gets the error.
   */
  retryAlone?: (error: unknown) => boolean;
}

/**
 * Gathers the loads made in one turn of the event loop (every request the gateway parsed in that turn) and hands
 * them to `load` together once the turn ends. No cache: each load is served by the batch that follows it, so nothing
 * is answered from before it was asked; an idle gateway sends a lone load at once.
 */
export function perTurnBatch<K, V>(load: (keys: readonly K[]) => Promise<readonly (V | Error)[]>, options: PerTurnBatchOptions = {}): DataLoader<K, V> {
  const { maxBatchSize = Infinity, retryAlone } = options;
  const batch = async (keys: readonly K[]): Promise<readonly (V | Error)[]> => {
    try {
      return await load(keys);
    } catch (error) {
      if (keys.length === 1 || !retryAlone?.(error)) throw error;
      return Promise.all(keys.map((key) => load([key]).then(([result]) => result, (e: unknown) => (e instanceof Error ? e : new Error(String(e))))));
    }
  };
  return new DataLoader<K, V>(batch, { cache: false, maxBatchSize, batchScheduleFn: (dispatch) => setImmediate(dispatch) });
}
