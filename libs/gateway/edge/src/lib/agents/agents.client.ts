import { Inject, Injectable } from '@nestjs/common';
import { ClientGrpc } from '@nestjs/microservices';
import { AGENTS_V1, agentsV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { newRequestId, runWithRequestId } from '@parley/observability';
import { isWellFormedId } from '@parley/persistence';
import { AppError, fromGrpcError, RpcClient } from '@parley/rpc';
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
   * The reads of one call belong to many accounts, so none may fail another: the service answers each read's own
   * failure in its place, and a call that fails for any reason but the service being unavailable is made again read
   * by read.
   */
  private readonly reads = perTurnBatch<agentsV1.GetAgentRequest, agentsV1.Agent | null>(
    // The batch serves many requests: it runs under an id of its own rather than the first request's.
    (reads) =>
      runWithRequestId(newRequestId(), () => this.call('getAgents', (s, md) => s.getAgents({ reads: [...reads] }, md))).then((res) =>
        res.results.map((r) => (r.error ? fromGrpcError({ details: r.error }, 'agents') : (r.agent ?? null))),
      ),
    { maxBatchSize: MAX_COALESCED_READS, retryAlone: (error) => !(error instanceof AppError && error.code === 'service_unavailable') },
  );

  constructor(@Inject(AGENTS_GRPC) grpc: ClientGrpc, @Inject(CONFIG) config: ServiceConfig) {
    super(grpc, AGENTS_V1, 'agents', config.RPC_TIMEOUT_MS);
  }

  /**
   * One agent of the account, as GetAgent answers it; not_found when the account has no such live agent, and at
   * once, without joining a batch, when the id is not one the agents service could have given.
   */
  async getAgent(accountId: string, id: string): Promise<agentsV1.Agent> {
    if (!isWellFormedId('agt', id)) throw AppError.notFound('agent');
    const agent = await this.reads.load({ account_id: accountId, id });
    if (!agent) throw AppError.notFound('agent');
    return agent;
  }
}
