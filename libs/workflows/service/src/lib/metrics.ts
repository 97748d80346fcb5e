import { Counter, Histogram } from 'prom-client';

export const workflowMetrics = {
  callsPlaced: new Counter({ name: 'parley_workflow_calls_placed_total', help: 'Calls placed for workflow run recipients' }),
  /** From a recipient being due (its time, its window's opening, its retry, or a line freed for it) to its call placed. */
  dispatchLag: new Histogram({
    name: 'parley_workflow_dispatch_lag_seconds',
    help: 'Seconds from a workflow recipient becoming due to its call being placed',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
  }),
  recipientsFinished: new Counter({
    name: 'parley_workflow_recipients_finished_total',
    help: 'Workflow run recipients that reached a final state, by state',
    labelNames: ['state'] as const,
  }),
};
