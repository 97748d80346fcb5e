import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { KNOWLEDGE_V1, knowledgeV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';

export const KNOWLEDGE_GRPC = 'KNOWLEDGE_GRPC';

/** KnowledgeService, served by the agents deployable (AGENTS_GRPC_URL). */
@Injectable()
export class KnowledgeClient extends RpcClient<knowledgeV1.KnowledgeServiceClient> {
  constructor(@Inject(KNOWLEDGE_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, KNOWLEDGE_V1, 'knowledge', config.RPC_TIMEOUT_MS);
  }
}
