import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { WEBHOOKS_V1, webhooksV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';

export const WEBHOOKS_GRPC = 'WEBHOOKS_GRPC';

@Injectable()
export class WebhooksClient extends RpcClient<webhooksV1.WebhooksServiceClient> {
  constructor(@Inject(WEBHOOKS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, WEBHOOKS_V1, 'webhooks', config.RPC_TIMEOUT_MS);
  }
}
