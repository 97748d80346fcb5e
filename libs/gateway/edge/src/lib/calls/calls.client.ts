import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { CALLS_V1, callsV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';

export const CALLS_GRPC = 'CALLS_GRPC';

@Injectable()
export class CallsClient extends RpcClient<callsV1.CallsServiceClient> {
  /** How long a call waits for the calls service (its deadline), told to the service on CreateCall. */
  readonly deadlineMs: number;

  constructor(@Inject(CALLS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, CALLS_V1, 'calls', config.RPC_TIMEOUT_MS);
    this.deadlineMs = config.RPC_TIMEOUT_MS;
  }
}
