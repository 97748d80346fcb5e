import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { WORKFLOWS_V1, workflowsV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';

export const WORKFLOWS_GRPC = 'WORKFLOWS_GRPC';

/** WorkflowsService, served by the calls deployable (CALLS_GRPC_URL). */
@Injectable()
export class WorkflowsClient extends RpcClient<workflowsV1.WorkflowsServiceClient> {
  constructor(@Inject(WORKFLOWS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, WORKFLOWS_V1, 'workflows', config.RPC_TIMEOUT_MS);
  }
}
