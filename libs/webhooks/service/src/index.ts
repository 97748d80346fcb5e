import { Module } from '@nestjs/common';
import { ServiceDefinition } from '@parley/runtime';

/** Signed webhook deliveries (webhooks issue). */
@Module({})
export class WebhookDispatcherModule {}

export const webhookDispatcherService: ServiceDefinition = {
  name: 'webhook-dispatcher',
  module: WebhookDispatcherModule,
  grpc: { contracts: [], url: (c) => c.WEBHOOKS_GRPC_URL },
};
