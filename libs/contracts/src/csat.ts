/**
 * Satisfaction ratings (CSAT) of calls: `POST /v1/analytics/csat` and an agent's end-of-call keypad survey. One per
 * call and source; the calls service stores them (`call_ratings`) and emits `csat.received`.
 */

/** Where a rating came from: the API (`api`, the default), the customer's own page (`web`), the agent's keypad survey (`keypad`). */
export const CSAT_SOURCES = ['api', 'web', 'keypad'] as const;
export type CsatSource = (typeof CSAT_SOURCES)[number];

/** The scales a rating may be on: 1 to 5, or 1 to 10. */
export const CSAT_SCALES = [5, 10] as const;
export type CsatScale = (typeof CSAT_SCALES)[number];

/** The longest comment a rating takes, in characters. */
export const CSAT_COMMENT_MAX = 1000;

/**
 * A score on its scale brought to 1..5 (`csat.received`'s `rating`), so ratings on different scales average
 * together: 1 stays 1, the scale's top becomes 5, linearly between, to two decimals (score 7 of 10: 3.67).
 */
export function csatRating(score: number, scale: number): number {
  if (scale === 5) return score;
  return Math.round((1 + ((score - 1) * 4) / (scale - 1)) * 100) / 100;
}
