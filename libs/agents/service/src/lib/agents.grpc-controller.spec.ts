import { AgentEntity } from './agent.entity';
import { AgentsDomain, AgentView } from './agents.domain';
import { AgentsGrpcController } from './agents.grpc-controller';

const view = (accountId: string, id: string): AgentView => ({
  entity: Object.assign(new AgentEntity(), { id, accountId, createdAt: new Date(0), updatedAt: new Date(0) }),
  spec: { name: id } as AgentView['spec'],
  effective: {} as AgentView['effective'],
});

describe('GetAgents over gRPC', () => {
  const domain = {
    getAgents: async (reads: { accountId: string; id: string }[]) =>
      reads.map((r) => (r.id === 'agt_known' ? view(r.accountId, r.id) : r.id === 'agt_failing' ? new Error('invalid byte sequence') : null)),
  } as unknown as AgentsDomain;
  const controller = new AgentsGrpcController(domain);

  it('answers one result per read, in order, with no agent where the account has none', async () => {
    const res = await controller.getAgents({
      reads: [
        { account_id: 'acme', id: 'agt_known' },
        { account_id: 'acme', id: 'agt_unknown' },
      ],
    });

    expect(res.results.map((r) => r.agent && { id: r.agent.id, account_id: r.agent.account_id, spec: JSON.parse(r.agent.spec_json) })).toEqual([
      { id: 'agt_known', account_id: 'acme', spec: { name: 'agt_known' } },
      undefined,
    ]);
  });

  it("answers a read that failed alone with its own error beside its neighbours' agents", async () => {
    const res = await controller.getAgents({
      reads: [
        { account_id: 'acme', id: 'agt_known' },
        { account_id: 'globex', id: 'agt_failing' },
        { account_id: 'acme', id: 'agt_unknown' },
      ],
    });

    expect(res.results.map((r) => ({ id: r.agent?.id, error: r.error && JSON.parse(r.error).code }))).toEqual([
      { id: 'agt_known', error: '' },
      { id: undefined, error: 'internal_error' },
      { id: undefined, error: '' },
    ]);
  });

  it('refuses a call of more than 1000 reads', async () => {
    const reads = Array.from({ length: 1001 }, (_, i) => ({ account_id: 'acme', id: `agt_${i}` }));
    await expect(controller.getAgents({ reads })).rejects.toMatchObject({ code: 'invalid_request', message: 'At most 1000 reads per call.' });
  });
});
