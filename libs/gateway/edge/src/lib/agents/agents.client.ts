import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { AGENTS_V1, agentsV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { newRequestId, runWithRequestId } from '@parley/observability';
import { AppError, RpcClient } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { perTurnBatch } from '../edge/per-turn-batch';

export const AGENTS_GRPC = 'AGENTS_GRPC';

/** The most reads one GetAgents call carries; more go in further calls of the same turn. */
const MAX_COALESCED_READS = 100;

@Injectable()
export class AgentsClient extends RpcClient<agentsV1.AgentsServiceClient> {
  /**
   * GET /v1/agents/{id} is the API's hottest read. The reads that arrive in one turn of the event loop go to the
   * agents service as one GetAgents call (one hop, one query); an idle API sends each at once, with no added wait.
   * No cache: every read reaches the agents service and its database after it arrived, so nothing is served stale.
   */
  private readonly reads = perTurnBatch<agentsV1.GetAgentRequest, agentsV1.Agent | null>(
    // The batch serves many requests: it runs under an id of its own rather than the first request's.
    (reads) =>
      runWithRequestId(newRequestId(), () => this.call('getAgents', (s, md) => s.getAgents({ reads: [...reads] }, md))).then((res) =>
        res.results.map((r) => r.agent ?? null),
      ),
    MAX_COALESCED_READS,
  );

  constructor(@Inject(AGENTS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
  }

  /** One agent of the account, as GetAgent answers it; not_found when the account has no such live agent. */
  async getAgent(accountId: string, id: string): Promise<agentsV1.Agent> {
    const agent = await this.reads.load({ account_id: accountId, id });
    if (!agent) throw AppError.notFound('agent');
    return agent;
  }
}
