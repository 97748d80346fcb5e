/**
 * The clock of leases, due times and the delivery history: the database's (`now()`), never a replica's, so a
 * replica whose clock is skewed can neither take a lease another still holds nor retry early. Tests fix the time
 * instead; outside tests it is never fixed.
 */
export interface DbClock {
  fixedNow(): Date | null;
}

export const CLOCK = Symbol('CLOCK');
export const databaseClock: DbClock = { fixedNow: () => null };

/** SQL for now under a clock whose fixedNow() is the query's parameter $n. */
export const sqlNow = (n: number): string => `COALESCE($${n}::timestamptz, now())`;
