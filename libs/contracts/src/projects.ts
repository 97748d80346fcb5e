/**
 * A project's ceilings (docs/projects.md), each named as the 402 `plan_limit_reached` that enforces it names it (its
 * `limit` member) and as `project.limit_reached` reports it.
 */
export const PROJECT_LIMITS = ['max_live_calls', 'max_agents'] as const;
export type ProjectLimit = (typeof PROJECT_LIMITS)[number];
