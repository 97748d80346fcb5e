import { knowledgeV1 } from '@parley/contracts';
import { AppError, RpcClient } from '@parley/rpc';
import type { KnowledgeHit, KnowledgeQuery, KnowledgeSearch } from '@parley/voice-engine';

/**
 * Knowledge-base search for one account's calls, over the agents deployable's KnowledgeService. The turn's budget
 * is the engine's (it stops waiting, and drops the answer, when the budget is over); the RPC deadline only bounds a
 * hung connection.
 */
export class GrpcKnowledgeSearch implements KnowledgeSearch {
  constructor(
    private readonly client: Pick<RpcClient<knowledgeV1.KnowledgeServiceClient>, 'call'>,
    private readonly accountId: string,
  ) {}

  async search(query: KnowledgeQuery): Promise<KnowledgeHit[]> {
    const request = { account_id: this.accountId, knowledge_base_ids: query.baseIds, query: query.query, limit: query.limit, min_score: 0 };
    let hits: knowledgeV1.SearchHit[];
    try {
      ({ hits } = await this.client.call('search', (s, md) => s.search(request, md)));
    } catch (error) {
      // An agent's only base was deleted since: nothing to ground in, as when one of several is (they are skipped).
      if (error instanceof AppError && error.code === 'not_found') return [];
      throw error;
    }
    return hits.map((h) => ({ documentId: h.document_id, knowledgeBaseId: h.knowledge_base_id, title: h.title, heading: h.heading, text: h.text, score: h.score }));
  }
}
