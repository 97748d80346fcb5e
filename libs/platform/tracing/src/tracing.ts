// Config validation reads decorator metadata, and tracing starts before the app's other imports.
import 'reflect-metadata';
import { loadConfig, TracingConfig } from '@parley/config';

/** What stops tracing at shutdown: flushes the spans not yet exported. */
interface RunningTracing {
  shutdown(): Promise<void>;
}

let running: RunningTracing | undefined;

/** Whether these settings turn tracing on: an OTLP endpoint is set and the SDK is not disabled. */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return !!(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) && env['OTEL_SDK_DISABLED'] !== 'true';
}

/**
 * Starts OpenTelemetry for this process when an OTLP endpoint is configured: spans of incoming HTTP (and Fastify's
 * routes), gRPC both ways and PostgreSQL queries, exported over OTLP, plus the manual spans of the bus and the
 * voice engine. Call it before anything else is imported (each app's `tracing.ts`, imported first by its main):
 * the instrumentations patch http, @grpc/grpc-js, pg and fastify as they are loaded.
 *
 * Off (no endpoint): nothing is loaded or patched; the manual spans go through @opentelemetry/api's no-op tracer.
 * Settings that fail validation leave tracing off here; runProcess then lists them with every other problem and
 * stops the process.
 */
export function startTracing(service: string, env: NodeJS.ProcessEnv = process.env): void {
  if (running || !tracingEnabled(env)) return;
  let config: TracingConfig;
  try {
    config = loadConfig(TracingConfig, env);
  } catch {
    return;
  }
  // Loaded only now, so a process without tracing never loads the SDK (a unit test holds it to that).
  const { startSdk } = require('./sdk') as typeof import('./sdk');
  running = startSdk(config.OTEL_SERVICE_NAME ?? `parley-${service}`);
}

/** How long a shutdown waits for the last spans to be exported: a collector that is down must not hold the exit. */
export const TRACING_FLUSH_MS = 3_000;

/**
 * Exports the spans still buffered and stops the SDK, waiting at most TRACING_FLUSH_MS; called last in a process's
 * shutdown. No-op when off.
 */
export async function stopTracing(): Promise<void> {
  const current = running;
  running = undefined;
  if (!current) return;
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, TRACING_FLUSH_MS).unref()));
  await Promise.race([current.shutdown(), bound]).finally(() => clearTimeout(timer));
}
