// Imported first by main.ts: the instrumentations patch http, gRPC, pg and fastify as they load (docs/tracing.md).
import { startTracing } from '@parley/tracing';

startTracing('calls');
