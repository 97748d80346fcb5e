import { Module } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import { AGENTS_V1 } from '@parley/contracts';
import { grpcClientProvider } from '@parley/rpc';
import { AGENTS_GRPC, AgentWebhooks } from './agent-webhooks';
import { resolveSecretKey, ServiceConfig } from '@parley/config';
import { parseEgressAllowlist, parseHttpHosts, WebhookUrlRules } from '@parley/egress';
import { Sealer } from '@parley/persistence';
import { CONFIG } from '@parley/runtime';
import { CLOCK, databaseClock } from './db-clock';
import { DeliveriesRepository } from './deliveries.repository';
import { DeliveryEngine } from './delivery.engine';
import { DeliveryRunner } from './delivery.runner';
import { EndpointsDomain, WEBHOOK_URL_RULES } from './endpoints.domain';
import { EndpointsRepository } from './endpoints.repository';
import { WebhookEventsConsumer, WebhooksGrpcController } from './webhooks.controllers';

@Module({
  imports: [
    ClientsModule.registerAsync([
      { name: AGENTS_GRPC, inject: [CONFIG], useFactory: (c: ServiceConfig) => grpcClientProvider(AGENTS_GRPC, AGENTS_V1, c.AGENTS_GRPC_URL) },
    ]),
  ],
  controllers: [WebhooksGrpcController, WebhookEventsConsumer],
  providers: [
    EndpointsRepository,
    DeliveriesRepository,
    EndpointsDomain,
    DeliveryEngine,
    DeliveryRunner,
    AgentWebhooks,
    { provide: CLOCK, useValue: databaseClock },
    { provide: Sealer, inject: [CONFIG], useFactory: (c: ServiceConfig) => new Sealer(resolveSecretKey(c), 'webhooks:endpoint-secrets') },
    {
      provide: WEBHOOK_URL_RULES,
      inject: [CONFIG],
      useFactory: (c: ServiceConfig): WebhookUrlRules => ({
        egress: parseEgressAllowlist(c.EGRESS_ALLOWLIST ?? '').policy,
        httpHosts: parseHttpHosts(c.WEBHOOK_ALLOW_HTTP_HOSTS ?? ''),
      }),
    },
  ],
})
export class WebhookDispatcherModule {}
