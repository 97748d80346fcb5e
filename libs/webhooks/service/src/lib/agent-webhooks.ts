import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { AGENTS_V1, agentsV1, readAgent } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';

export const AGENTS_GRPC = 'AGENTS_GRPC';

/** How long an agent's effective webhook_url is reused; agent changes drop it at once, group changes within this. */
const TTL_MS = 60_000;

/**
 * An agent's effective `webhook_url` (after group inheritance), asked of the agents service over gRPC. When the
 * agents service is down the lookup fails, the bus redelivers the event later, and nothing is lost.
 */
@Injectable()
export class AgentWebhooks {
  private readonly client: RpcClient<agentsV1.AgentsServiceClient>;
  private readonly cache = new Map<string, { url: string | undefined; until: number }>();

  constructor(@Inject(AGENTS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    this.client = new RpcClient(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
  }

  async webhookUrl(accountId: string, agentId: string): Promise<string | undefined> {
    const key = `${accountId}\n${agentId}`;
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return hit.url;
    let url: string | undefined;
    try {
      const res = await this.client.call('getAgent', (s, md) => s.getAgent({ account_id: accountId, id: agentId }, md));
      url = (res.agent && readAgent(res.agent).effective.webhook_url) || undefined;
    } catch (error) {
      // A deleted agent's events go to the tenant's endpoints.
      if ((error as { code?: string }).code !== 'not_found') throw error;
    }
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(key, { url, until: Date.now() + TTL_MS });
    return url;
  }

  forget(accountId: string, agentId: string): void {
    this.cache.delete(`${accountId}\n${agentId}`);
  }
}
