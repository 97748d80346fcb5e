export const WORKFLOW_CLOCK = Symbol('WORKFLOW_CLOCK');

/**
 * The workflows' one source of time (milliseconds since the epoch): every time the service writes comes from it,
 * never from the database's now(). Tests give pg-boss's TestClock, which moves pg-boss's time in step.
 */
export interface WorkflowClock {
  now(): number;
}

export const systemClock: WorkflowClock = { now: () => Date.now() };
