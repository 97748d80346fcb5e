import { FastifyOtelInstrumentation } from '@fastify/otel';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';

/** Probes and scrapes: frequent, and never part of a request worth following. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The OpenTelemetry SDK with the instrumentations Parley needs and no others. Traces go to the OTLP exporter the
 * standard OTEL_* variables describe (endpoint, protocol, headers, sampler); metrics stay with Prometheus and no
 * logs are exported (both explicitly off whatever OTEL_*_EXPORTER says, so no second pipeline starts by accident).
 */
export function startSdk(serviceName: string): NodeSDK {
  const sdk = new NodeSDK({
    serviceName,
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0]) }),
      new FastifyOtelInstrumentation({ registerOnInitialization: true, instrumentHooks: false }),
      new GrpcInstrumentation(),
      // Only queries inside a traced operation (the relays' and runners' polling would otherwise be a trace per poll),
      // and no span per pool checkout.
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
    ],
  });
  sdk.start();
  return sdk;
}
