import DataLoader from 'dataloader';

/**
 * Gathers the loads made in one turn of the event loop (every request the gateway parsed in that turn) and hands
 * them to `load` together once the turn ends. No cache: each load is served by the batch that follows it, so nothing
 * is answered from before it was asked; an idle gateway sends a lone load at once.
 */
export function perTurnBatch<K, V>(load: (keys: readonly K[]) => Promise<readonly (V | Error)[]>, maxBatchSize = Infinity): DataLoader<K, V> {
  return new DataLoader<K, V>(load, { cache: false, maxBatchSize, batchScheduleFn: (dispatch) => setImmediate(dispatch) });
}
