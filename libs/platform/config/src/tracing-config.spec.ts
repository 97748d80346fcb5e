import 'reflect-metadata';
import { ConfigError, loadConfig } from './load-config';
import { ServiceConfig } from './platform-config';
import { TracingConfig } from './tracing-config';

function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(ServiceConfig, env);
    return [];
  } catch (error) {
    return (error as ConfigError).problems;
  }
}

describe('OpenTelemetry settings', () => {
  it('accept the standard values and read the sampler ratio as a number', () => {
    const config = loadConfig(TracingConfig, {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc123,x-team=voice',
      OTEL_SERVICE_NAME: 'parley-edge-eu',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    expect(config).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318', OTEL_TRACES_SAMPLER_ARG: 0.25 });
  });

  it('are validated at boot with every other setting, each bad one named', () => {
    expect(
      problems({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'otel-collector:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'udp',
        OTEL_EXPORTER_OTLP_HEADERS: 'just-a-key',
        OTEL_SDK_DISABLED: 'yes',
        OTEL_TRACES_SAMPLER: 'sometimes',
        OTEL_TRACES_SAMPLER_ARG: '1.5',
      }).map((p) => p.split(':')[0]),
    ).toEqual(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_SDK_DISABLED', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG']);
  });
});
