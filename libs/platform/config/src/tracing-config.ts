import { IsIn, IsNumber, IsOptional, Matches, Max, Min } from 'class-validator';

/**
 * The OpenTelemetry settings Parley reads, under their standard names (docs/tracing.md). Tracing starts before the
 * rest of the configuration is read (its instrumentations must patch modules before they load), so these are a
 * class of their own that `@parley/tracing` validates first; ServiceConfig extends it, so a bad value is also
 * listed with every other problem at boot.
 */
export class TracingConfig {
  /** OTLP base URL (`/v1/traces` is appended for HTTP); with it (or the traces endpoint) every process exports spans. */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s?#]+$/, { message: 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL without query' })
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;

  /** OTLP URL for spans alone, used as given (takes precedence over OTEL_EXPORTER_OTLP_ENDPOINT). */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s?#]+$/, { message: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL without query' })
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;

  /** Unset: http/protobuf, the OTLP default. */
  @IsOptional()
  @IsIn(['http/protobuf', 'http/json', 'grpc'])
  OTEL_EXPORTER_OTLP_PROTOCOL?: string;

  /** Headers sent with every export (a hosted backend's key): `key=value` pairs, comma separated. */
  @IsOptional()
  @Matches(/^[^=,\s]+=[^,]*(,[^=,\s]+=[^,]*)*$/, { message: 'OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs separated by commas' })
  OTEL_EXPORTER_OTLP_HEADERS?: string;

  /** The spans' service.name; unset: `parley-<service>` (parley-gateway, parley-standalone, parley-media-worker, …). */
  @IsOptional()
  @Matches(/^\S{1,255}$/, { message: 'OTEL_SERVICE_NAME must be 1-255 characters without spaces' })
  OTEL_SERVICE_NAME?: string;

  /** `true` keeps tracing off even with an endpoint. */
  @IsOptional()
  @IsIn(['true', 'false'])
  OTEL_SDK_DISABLED?: string;

  /** Unset: parentbased_always_on (every trace a caller did not decline is kept). */
  @IsOptional()
  @IsIn(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'])
  OTEL_TRACES_SAMPLER?: string;

  /** The ratio of the `*traceidratio` samplers, 0 to 1. */
  @IsOptional()
  @IsNumber({}, { message: 'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1' })
  @Min(0)
  @Max(1)
  OTEL_TRACES_SAMPLER_ARG?: number;
}
