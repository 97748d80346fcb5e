import { AGENTS_V1 } from '@parley/contracts';
import { OutboxRecord } from '@parley/messaging';
import { ServiceDefinition } from '@parley/runtime';
import { AgentEntity, AgentGroupEntity } from './lib/agent.entity';
import { AgentsModule } from './lib/agents.module';
import { AGENTS_MIGRATIONS } from './lib/migrations';

export const agentsService: ServiceDefinition = {
  name: 'agents',
  module: AgentsModule,
  grpc: { contracts: [AGENTS_V1], url: (c) => c.AGENTS_GRPC_URL },
  database: { schema: 'agents', entities: [AgentEntity, AgentGroupEntity, OutboxRecord], migrations: AGENTS_MIGRATIONS },
  outbox: true,
};
