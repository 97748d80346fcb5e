/** One finished attempt as the failure count sees it. */
export interface CountedAttempt<R> {
  endpointId: string;
  delivered: boolean;
  /** A synthetic delivery from the test route. */
  test: boolean;
  /** Abandoned in flight because its endpoint was disabled or deleted: says nothing about the receiver. */
  aborted: boolean;
  result: R;
}

/** How one batch of attempts moves an endpoint's consecutive-failure count. */
export interface Streak<R> {
  /** A success came in the batch: the count restarts from the failures after the last one. */
  reset: boolean;
  /** Failures to add (after the reset, when there is one). */
  failures: number;
  /** The last failure, for the disable reason. */
  last?: R;
}

/**
 * The counting rule of automatic disabling, per endpoint, over attempts in the order they finished: every failed
 * attempt counts, a success resets. Test deliveries neither count nor reset: a receiver that answers tests but not
 * events is still failing, and a test must not be able to disable an endpoint. Abandoned attempts neither count
 * nor reset either: the dispatcher cut them short.
 */
export function failureStreaks<R>(attempts: CountedAttempt<R>[]): Map<string, Streak<R>> {
  const streaks = new Map<string, Streak<R>>();
  for (const a of attempts) {
    if (a.test || a.aborted) continue;
    const s = streaks.get(a.endpointId) ?? { reset: false, failures: 0 };
    if (a.delivered) Object.assign(s, { reset: true, failures: 0 });
    else Object.assign(s, { failures: s.failures + 1, last: a.result });
    streaks.set(a.endpointId, s);
  }
  return streaks;
}
