import { CALLS_V1 } from '@parley/contracts';
import { OutboxRecord } from '@parley/messaging';
import { ServiceDefinition } from '@parley/runtime';
import { CallsModule } from './lib/calls.module';
import { CallEntity, CallTurnEntity } from './lib/entities';
import { CALLS_MIGRATIONS } from './lib/migrations';

export { CallsModule };
export * from './lib/call-state';

/** Call records and the call state machine; its events reach webhooks through the outbox. */
export const callsService: ServiceDefinition = {
  name: 'calls',
  module: CallsModule,
  grpc: { contracts: [CALLS_V1], url: (c) => c.CALLS_GRPC_URL },
  database: { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS },
  outbox: true,
};
