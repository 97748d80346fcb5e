/**
 * A project's ceilings (docs/projects.md), each named as the 402 `plan_limit_reached` that enforces it names it (its
 * `limit` member) and as `project.limit_reached` reports it: `spend` is the spending ceiling of `budget.spend`.
 */
export const PROJECT_LIMITS = ['max_live_calls', 'max_agents', 'max_webhook_endpoints', 'spend'] as const;
export type ProjectLimit = (typeof PROJECT_LIMITS)[number];

/** The periods a spending ceiling counts over: the UTC calendar day or month. */
export const SPEND_PERIODS = ['day', 'month'] as const;
export type SpendPeriod = (typeof SPEND_PERIODS)[number];
