import { WEBHOOKS_V1 } from '@parley/contracts';
import { OutboxRecord } from '@parley/messaging';
import { ServiceDefinition } from '@parley/runtime';
import { EndpointEntity } from './lib/entities';
import { WEBHOOKS_MIGRATIONS } from './lib/migrations';
import { WebhookDispatcherModule } from './lib/webhooks.module';

export { WebhookDispatcherModule };
export * from './lib/signing';
export { envelope } from './lib/delivery.engine';

/** Webhook endpoints and signed, at-least-once delivery of every customer-facing event. */
export const webhookDispatcherService: ServiceDefinition = {
  name: 'webhook-dispatcher',
  module: WebhookDispatcherModule,
  grpc: { contracts: [WEBHOOKS_V1], url: (c) => c.WEBHOOKS_GRPC_URL },
  database: { schema: 'webhooks', entities: [EndpointEntity, OutboxRecord], migrations: WEBHOOKS_MIGRATIONS },
  // Its own events (project.limit_reached for max_webhook_endpoints) are published from its outbox.
  outbox: true,
};
