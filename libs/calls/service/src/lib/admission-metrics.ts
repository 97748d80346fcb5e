import { Counter, Gauge } from 'prom-client';

export const callAdmissions = new Counter({
  name: 'parley_call_admissions_total',
  help: 'Outbound call set-ups by outcome (admitted, refused) and refusal reason (setup_queue, deadline, media_capacity, media_load, no_media_worker)',
  labelNames: ['outcome', 'reason'] as const,
});

export const callSetupsInFlight = new Gauge({
  name: 'parley_call_setups_in_flight',
  help: 'Outbound call set-ups (agent read, record, dial) running in this calls service',
});

export const callSetupsWaiting = new Gauge({
  name: 'parley_call_setups_waiting',
  help: 'Outbound call set-ups waiting for their turn in this calls service',
});

export const mediaCapacityFree = new Gauge({
  name: 'parley_media_capacity_free',
  help: 'Media streams still free at the last admission decision: reporting workers’ capacity minus their streams and the calls placed but not yet answered',
});

export const mediaWorkersReporting = new Gauge({
  name: 'parley_media_workers_reporting',
  help: 'Media workers whose load report is current, by state (accepting, overloaded, draining)',
  labelNames: ['state'] as const,
});
