import { AggregatorRegistry, collectDefaultMetrics, Counter, Histogram, register } from 'prom-client';

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

export const httpProblems = new Counter({
  name: 'parley_http_problems_total',
  help: 'Public HTTP problem+json answers by route template, status and problem code',
  labelNames: ['route', 'status', 'code'] as const,
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

type MetricsJson = Awaited<ReturnType<typeof register.getMetricsAsJSON>>;
const metricsSources = new Set<() => Promise<MetricsJson>>();

/**
 * Adds another process's metrics to this one's /metrics (standalone: the media worker runs in a child process).
 * Returns the function that removes the source again.
 */
export function addMetricsSource(source: () => Promise<MetricsJson>): () => void {
  metricsSources.add(source);
  return () => metricsSources.delete(source);
}

/**
 * The Prometheus text of this process plus every added source, merged the way prom-client merges cluster workers
 * (counters and histograms summed, version info taken once). A source that does not answer is left out of that
 * scrape rather than failing it.
 */
export async function collectMetrics(): Promise<string> {
  if (metricsSources.size === 0) return register.metrics();
  const others = await Promise.all([...metricsSources].map((source) => source().catch(() => undefined)));
  const all = [await register.getMetricsAsJSON(), ...others.filter((m): m is MetricsJson => m !== undefined)];
  return AggregatorRegistry.aggregate(all).metrics();
}
