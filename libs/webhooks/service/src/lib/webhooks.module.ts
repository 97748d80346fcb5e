import { Module } from '@nestjs/common';
import { resolveSecretKey, ServiceConfig } from '@parley/config';
import { parseEgressAllowlist } from '@parley/egress';
import { Sealer } from '@parley/persistence';
import { CONFIG } from '@parley/runtime';
import { CLOCK, DeliveryEngine, systemClock } from './delivery.engine';
import { EGRESS_POLICY, EndpointsDomain } from './endpoints.domain';
import { WebhookEventsConsumer, WebhooksGrpcController } from './webhooks.controllers';

@Module({
  controllers: [WebhooksGrpcController, WebhookEventsConsumer],
  providers: [
    EndpointsDomain,
    DeliveryEngine,
    { provide: CLOCK, useValue: systemClock },
    { provide: Sealer, inject: [CONFIG], useFactory: (c: ServiceConfig) => new Sealer(resolveSecretKey(c), 'webhooks:endpoint-secrets') },
    { provide: EGRESS_POLICY, inject: [CONFIG], useFactory: (c: ServiceConfig) => parseEgressAllowlist(c.EGRESS_ALLOWLIST ?? '').policy },
  ],
})
export class WebhookDispatcherModule {}
