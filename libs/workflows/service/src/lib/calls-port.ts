import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { CALLS_V1, callsV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';

export const CALLS_GRPC = 'WORKFLOWS_CALLS_GRPC';
export const CALLS_PORT = Symbol('CALLS_PORT');

/** What workflows need of the calls service: placing a recipient's call, and the account's do-not-call list. */
export interface CallsPort {
  createCall(request: callsV1.CreateCallRequest): Promise<{ id: string }>;
  /** The numbers of `numbers` on the account's do-not-call list. */
  doNotCall(accountId: string, numbers: string[]): Promise<string[]>;
}

/** CallsService over gRPC (CALLS_GRPC_URL), even when it runs in the same process: the tables stay its own. */
@Injectable()
export class GrpcCalls extends RpcClient<callsV1.CallsServiceClient> implements CallsPort {
  constructor(@Inject(CALLS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, CALLS_V1, 'calls', config.RPC_TIMEOUT_MS);
  }

  async createCall(request: callsV1.CreateCallRequest): Promise<{ id: string }> {
    const { call } = await this.call('createCall', (s, md) => s.createCall(request, md));
    if (!call) throw new Error('the calls service answered without a call');
    return { id: call.id };
  }

  async doNotCall(accountId: string, numbers: string[]): Promise<string[]> {
    const listed: string[] = [];
    // The RPC takes at most 1,000 numbers at a time.
    for (let i = 0; i < numbers.length; i += 1000) {
      const answer = await this.call('checkDoNotCall', (s, md) => s.checkDoNotCall({ account_id: accountId, numbers: numbers.slice(i, i + 1000) }, md));
      listed.push(...answer.listed);
    }
    return listed;
  }
}
