import { GatewayConfig } from '@parley/config';
import { ServiceDefinition } from '@parley/runtime';
import { GATEWAY_MIGRATIONS } from './lib/auth/migrations';
import { GatewayModule } from './lib/gateway.module';
import { configureGatewayHttp, gatewayAdapterOptions } from './lib/http/setup';

/** The public HTTP edge: authentication, conventions, OpenAPI; domain data stays in the services. */
export const gatewayService: ServiceDefinition<GatewayConfig> = {
  name: 'gateway',
  module: GatewayModule,
  database: { schema: 'gateway', entities: [], migrations: GATEWAY_MIGRATIONS },
  http: {
    port: (c) => c.PORT,
    host: (c) => c.HOST,
    adapterOptions: gatewayAdapterOptions,
    configure: configureGatewayHttp,
  },
};
