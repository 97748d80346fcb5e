import * as http from 'node:http';

// Each factory records that its module was loaded; the real modules load only where a test asks for them.
const mockLoaded = new Set<string>();
const mockShutdown = jest.fn(async () => undefined);
const mockStartSdk = jest.fn((_serviceName: string) => ({ shutdown: mockShutdown }));
jest.mock('./sdk', () => {
  mockLoaded.add('./sdk');
  return { startSdk: mockStartSdk };
});
for (const name of ['@opentelemetry/sdk-node', '@opentelemetry/instrumentation-http', '@opentelemetry/instrumentation-grpc', '@opentelemetry/instrumentation-pg', '@fastify/otel']) {
  jest.doMock(name, () => {
    mockLoaded.add(name);
    return jest.requireActual(name);
  });
}

type TracingModule = typeof import('./tracing');

/** The module afresh (nothing started yet). */
function freshTracing(): TracingModule {
  let tracing: TracingModule | undefined;
  jest.isolateModules(() => {
    tracing = require('./tracing') as TracingModule;
  });
  return tracing as TracingModule;
}

describe('tracing off: no cost', () => {
  beforeEach(() => mockLoaded.clear());

  it.each([
    ['no OTLP endpoint is set', {}],
    ['the SDK is disabled despite an endpoint', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }],
    ['a setting is invalid (runProcess then reports it with every other problem)', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_SAMPLER_ARG: '2' }],
  ])('loads neither the SDK nor any instrumentation and patches nothing when %s', (_why, env) => {
    const requestBefore = http.request;
    freshTracing().startTracing('gateway', env);

    expect([...mockLoaded]).toEqual([]);
    expect(http.request).toBe(requestBefore);
  });

  it('stops without anything to flush', async () => {
    const tracing = freshTracing();
    await expect(tracing.stopTracing()).resolves.toBeUndefined();
    expect(mockShutdown).not.toHaveBeenCalled();
  });
});

describe('tracing on', () => {
  beforeEach(() => {
    mockShutdown.mockClear();
    mockStartSdk.mockClear();
  });

  it('starts the SDK once, named parley-<service>, when an OTLP endpoint is set, and flushes it on stop', async () => {
    const tracing = freshTracing();
    tracing.startTracing('media-worker', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' });
    tracing.startTracing('media-worker', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' });

    expect(mockStartSdk.mock.calls).toEqual([['parley-media-worker']]);
    await tracing.stopTracing();
    expect(mockShutdown).toHaveBeenCalledTimes(1);
  });

  it('waits at most TRACING_FLUSH_MS for the export when stopping (a collector that is down does not hold the exit)', async () => {
    jest.useFakeTimers();
    try {
      const tracing = freshTracing();
      mockShutdown.mockReturnValueOnce(new Promise(() => undefined));
      tracing.startTracing('gateway', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' });
      let stopped = false;
      const stopping = tracing.stopTracing().then(() => (stopped = true));
      await jest.advanceTimersByTimeAsync(tracing.TRACING_FLUSH_MS - 1);
      expect(stopped).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      await stopping;
      expect(stopped).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('takes OTEL_SERVICE_NAME and the traces endpoint alone', () => {
    const tracing = freshTracing();
    tracing.startTracing('gateway', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otel.example.com/v1/traces', OTEL_SERVICE_NAME: 'edge-eu' });

    expect(mockStartSdk.mock.calls).toEqual([['edge-eu']]);
  });
});
