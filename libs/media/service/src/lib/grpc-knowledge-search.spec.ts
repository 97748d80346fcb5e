import { knowledgeV1 } from '@parley/contracts';
import { AppError, RpcClient } from '@parley/rpc';
import { GrpcKnowledgeSearch } from './grpc-knowledge-search';

type Client = Pick<RpcClient<knowledgeV1.KnowledgeServiceClient>, 'call'>;

function client(answer: () => knowledgeV1.SearchResponse): { client: Client; requests: knowledgeV1.SearchRequest[] } {
  const requests: knowledgeV1.SearchRequest[] = [];
  const stub = {
    search: (req: knowledgeV1.SearchRequest) => {
      requests.push(req);
      return answer();
    },
  };
  // The stub's search answers at once; RpcClient.call would wrap the observable and the deadline.
  const call = (async (_method: string, run: (s: typeof stub, md: undefined) => unknown) => run(stub, undefined)) as unknown as Client['call'];
  return { client: { call }, requests };
}

const signal = new AbortController().signal;

describe('the in-call knowledge search over gRPC', () => {
  it('asks for the account’s bases and maps the hits', async () => {
    const hit = { document_id: 'doc_1', knowledge_base_id: 'kb_1', title: 'Hours', heading: 'Store', text: 'Nine to six.', score: 0.8, position: 2 };
    const { client: c, requests } = client(() => ({ hits: [hit] }));
    const hits = await new GrpcKnowledgeSearch(c, 'acc_1').search({ baseIds: ['kb_1', 'kb_2'], query: 'hours', limit: 4, signal });
    expect(requests).toEqual([{ account_id: 'acc_1', knowledge_base_ids: ['kb_1', 'kb_2'], query: 'hours', limit: 4, min_score: 0 }]);
    expect(hits).toEqual([{ documentId: 'doc_1', knowledgeBaseId: 'kb_1', title: 'Hours', heading: 'Store', text: 'Nine to six.', score: 0.8 }]);
  });

  it('finds nothing, without failing, when the only base searched was deleted', async () => {
    const { client: c } = client(() => {
      throw AppError.notFound('knowledge base');
    });
    expect(await new GrpcKnowledgeSearch(c, 'acc_1').search({ baseIds: ['kb_gone'], query: 'hours', limit: 4, signal })).toEqual([]);
  });

  it('fails on anything else (the turn answers without grounding, counted as an error)', async () => {
    const { client: c } = client(() => {
      throw new AppError('service_unavailable', 'down');
    });
    await expect(new GrpcKnowledgeSearch(c, 'acc_1').search({ baseIds: ['kb_1'], query: 'hours', limit: 4, signal })).rejects.toThrow('down');
  });
});
