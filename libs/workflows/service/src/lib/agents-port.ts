import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { AGENTS_V1, agentsV1, AgentDocument, readAgent } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { AppError, RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';

export const AGENTS_GRPC = 'WORKFLOWS_AGENTS_GRPC';
export const AGENTS_PORT = Symbol('AGENTS_PORT');

/** The agent a workflow names, as far as workflows check it: undefined when the account has no such agent. */
export interface AgentsPort {
  agent(accountId: string, agentId: string): Promise<AgentDocument | undefined>;
}

@Injectable()
export class GrpcAgents extends RpcClient<agentsV1.AgentsServiceClient> implements AgentsPort {
  constructor(@Inject(AGENTS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
  }

  async agent(accountId: string, agentId: string): Promise<AgentDocument | undefined> {
    try {
      const { agent } = await this.call('getAgent', (s, md) => s.getAgent({ account_id: accountId, id: agentId }, md));
      return agent ? readAgent(agent).spec : undefined;
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return undefined;
      throw error;
    }
  }
}
