import { GatewayConfig } from '@parley/config';
import { ServiceDefinition } from '@parley/runtime';
import { AddApiKeyProject1765800000107, CreateAccountsAndKeys1763700000101 } from './lib/auth/migrations';
import { CreateIdempotencyAndRateLimits1763700000102, IdempotencyRetryableKeys1764100000103 } from './lib/edge/migrations';
import { GatewayModule } from './lib/gateway.module';
import { AddProjectSpend1765500000105, AddProjectWebhookCeiling1765500000106, CreateProjects1765500000104 } from './lib/projects/migrations';
import { configureGatewayHttp, gatewayAdapterOptions } from './lib/http/setup';

/** The public HTTP edge: authentication, conventions, OpenAPI; domain data stays in the services. */
export const gatewayService: ServiceDefinition<GatewayConfig> = {
  name: 'gateway',
  module: GatewayModule,
  database: {
    schema: 'gateway',
    entities: [],
    migrations: [CreateAccountsAndKeys1763700000101, CreateIdempotencyAndRateLimits1763700000102, IdempotencyRetryableKeys1764100000103, CreateProjects1765500000104, AddProjectSpend1765500000105, AddProjectWebhookCeiling1765500000106, AddApiKeyProject1765800000107],
  },
  http: {
    port: (c) => c.PORT,
    host: (c) => c.HOST,
    adapterOptions: gatewayAdapterOptions,
    configure: configureGatewayHttp,
  },
};
