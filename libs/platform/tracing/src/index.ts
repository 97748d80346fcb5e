// Only @opentelemetry/api is imported here: the SDK and its instrumentations load when tracing starts (./sdk).
export * from './tracing';
export * from './bus-trace';
