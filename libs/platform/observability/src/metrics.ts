import { collectDefaultMetrics, Histogram, register } from 'prom-client';

let defaultsCollected = false;

/** Process metrics are registered once per process, even when several services share it (standalone). */
export function ensureProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ prefix: 'parley_' });
}

const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequestDuration = new Histogram({
  name: 'parley_http_request_duration_seconds',
  help: 'Public HTTP request duration by route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: latencyBuckets,
});

export const rpcServerDuration = new Histogram({
  name: 'parley_rpc_server_duration_seconds',
  help: 'gRPC handler duration by service, method and status code',
  labelNames: ['service', 'method', 'code'] as const,
  buckets: latencyBuckets,
});

export const rpcClientDuration = new Histogram({
  name: 'parley_rpc_client_duration_seconds',
  help: 'Outgoing gRPC call duration by target service, method and status code',
  labelNames: ['service', 'method', 'code'] as const,
  buckets: latencyBuckets,
});

export const busHandlerDuration = new Histogram({
  name: 'parley_bus_handler_duration_seconds',
  help: 'Event handler duration by consuming service, subject and outcome',
  labelNames: ['service', 'subject', 'outcome'] as const,
  buckets: latencyBuckets,
});

export const metricsRegistry = register;
