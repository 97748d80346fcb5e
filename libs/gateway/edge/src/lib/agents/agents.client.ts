import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { AGENTS_V1, agentsV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';

export const AGENTS_GRPC = 'AGENTS_GRPC';

@Injectable()
export class AgentsClient extends RpcClient<agentsV1.AgentsServiceClient> {
  constructor(@Inject(AGENTS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
  }
}
