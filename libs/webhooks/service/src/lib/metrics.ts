import { Counter, Gauge, Histogram } from 'prom-client';

export const deliveriesTotal = new Counter({
  name: 'parley_webhook_deliveries_total',
  help: 'Webhook delivery attempts by outcome (succeeded, retrying, failed)',
  labelNames: ['outcome'] as const,
});

export const attemptDuration = new Histogram({
  name: 'parley_webhook_attempt_duration_seconds',
  help: 'Time from sending a webhook to its response (or failure)',
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

export const commitToFirstAttempt = new Histogram({
  name: 'parley_webhook_event_to_first_attempt_seconds',
  help: 'Time from an event being created to its first delivery attempt',
  buckets: [0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5, 10],
});

/** Set on every worker pass from the database, so every replica reports the shared queue. */
export const queueDepth = new Gauge({ name: 'parley_webhook_queue_depth', help: 'Deliveries waiting for an attempt' });
export const queueOldestAge = new Gauge({ name: 'parley_webhook_queue_oldest_age_seconds', help: 'Age of the oldest due delivery' });
export const disabledEndpoints = new Gauge({ name: 'parley_webhook_disabled_endpoints', help: 'Endpoints disabled after repeated failures' });
