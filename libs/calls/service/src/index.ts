import { Module } from '@nestjs/common';
import { CreateOutbox1763700000000, OutboxRecord } from '@parley/messaging';
import { ServiceDefinition } from '@parley/runtime';

/** Call records and the call state machine arrive with the calls issue; the service already owns its schema. */
@Module({})
export class CallsModule {}

export const callsService: ServiceDefinition = {
  name: 'calls',
  module: CallsModule,
  grpc: { contracts: [], url: (c) => c.CALLS_GRPC_URL },
  database: { schema: 'calls', entities: [OutboxRecord], migrations: [CreateOutbox1763700000000] },
  outbox: true,
};
