import { Injectable } from '@nestjs/common';
import { CallAnalyticsRepository } from './call-analytics.repository';

/** How often the refresher recomputes the dirty analytics slots and days (CallsRunner). */
export const ANALYTICS_REFRESH_PASS_MS = 5_000;
/** A pass stops starting transactions after this long (the next pass goes on): a backfill spans several passes. */
const PASS_BUDGET_MS = 20_000;

/**
 * Keeps the pre-aggregated analytics figures up to date (docs/analytics.md, Indexes and speed): each pass recomputes
 * the dirty slots and days from the rows, a transaction at a time, until none is left or its budget is spent. One
 * replica's refresher works at a time (an advisory lock); the others' passes find it held and do nothing.
 */
@Injectable()
export class CallAnalyticsRefresher {
  constructor(private readonly repository: CallAnalyticsRepository) {}

  /** One pass: the slots and days recomputed. */
  async runPass(): Promise<{ slots: number; days: number }> {
    const done = { slots: 0, days: 0 };
    const until = Date.now() + PASS_BUDGET_MS;
    for (;;) {
      const batch = await this.repository.refresh();
      if (!batch) return done;
      done.slots += batch.slots;
      done.days += batch.days;
      if (!batch.more || Date.now() > until) return done;
    }
  }
}
