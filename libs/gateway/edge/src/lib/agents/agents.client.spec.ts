import { ClientGrpc } from '@nestjs/microservices';
import { of, throwError } from 'rxjs';
import { agentsV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { AppError } from '@parley/rpc';
import { AgentsClient } from './agents.client';

const agent = (account: string, id: string): agentsV1.Agent => ({
  id,
  account_id: account,
  spec_json: '{}',
  effective_json: '{}',
  created_at: '2026-11-22T00:00:00.000Z',
  updated_at: '2026-11-22T00:00:00.000Z',
});

/** An agents service holding acme/agt_1, acme/agt_2 and globex/agt_3, recording every GetAgents call. */
function clientWithService(fail?: Error) {
  const calls: agentsV1.GetAgentRequest[][] = [];
  const stored = new Set(['acme/agt_1', 'acme/agt_2', 'globex/agt_3']);
  const service = {
    getAgents: (req: agentsV1.GetAgentsRequest) => {
      calls.push(req.reads);
      if (fail) return throwError(() => fail);
      return of({ results: req.reads.map((r) => ({ agent: stored.has(`${r.account_id}/${r.id}`) ? agent(r.account_id, r.id) : null })) });
    },
  };
  const grpc = { getService: () => service, getClientByServiceName: () => undefined } as unknown as ClientGrpc;
  return { client: new AgentsClient(grpc, { RPC_TIMEOUT_MS: 1000 } as ServiceConfig), calls };
}

describe('AgentsClient reads', () => {
  it('sends the reads of one turn as one GetAgents call and gives each caller its own answer', async () => {
    const { client, calls } = clientWithService();

    const results = await Promise.allSettled([
      client.getAgent('acme', 'agt_1'),
      client.getAgent('globex', 'agt_3'),
      client.getAgent('globex', 'agt_1'),
      client.getAgent('acme', 'agt_2'),
    ]);

    expect(calls).toEqual([
      [
        { account_id: 'acme', id: 'agt_1' },
        { account_id: 'globex', id: 'agt_3' },
        { account_id: 'globex', id: 'agt_1' },
        { account_id: 'acme', id: 'agt_2' },
      ],
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? `${r.value.account_id}/${r.value.id}` : (r.reason as AppError).code))).toEqual([
      'acme/agt_1',
      'globex/agt_3',
      'not_found',
      'acme/agt_2',
    ]);
  });

  it('sends a read at once when it is alone, and later reads in calls of their own', async () => {
    const { client, calls } = clientWithService();

    await client.getAgent('acme', 'agt_1');
    await client.getAgent('acme', 'agt_2');

    expect(calls).toHaveLength(2);
  });

  it('fails every read of the call when the service fails, as service_unavailable without retrying each', async () => {
    const { client, calls } = clientWithService(Object.assign(new Error('connect ECONNREFUSED'), { code: 14 }));

    const results = await Promise.allSettled([client.getAgent('acme', 'agt_1'), client.getAgent('acme', 'agt_2')]);

    expect(results.map((r) => r.status === 'rejected' && (r.reason as AppError).code)).toEqual(['service_unavailable', 'service_unavailable']);
    expect(calls).toHaveLength(1);
  });
});
