import { SpendPeriod } from '@parley/contracts';

/** A spending ceiling's amount: an exact decimal like the price table's (up to 12 digits, 10 decimals). */
export const SPEND_AMOUNT = /^\d{1,12}(\.\d{1,10})?$/;

/** The start of the UTC calendar day or month `at` is in. */
export function periodStart(period: SpendPeriod, at: Date): Date {
  return period === 'day'
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()))
    : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/** The start of the next period after the one starting at `start`. */
export function periodEnd(period: SpendPeriod, start: Date): Date {
  return period === 'day'
    ? new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + 1))
    : new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
}
