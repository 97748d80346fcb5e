import { ClientGrpc } from '@nestjs/microservices';
import { of, throwError } from 'rxjs';
import { agentsV1 } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { AppError, toGrpcError } from '@parley/rpc';
import { AgentsClient } from './agents.client';

/** Ids of the shape the agents service gives (`agt_` + 22 base62). */
const AGT_1 = `agt_${'1'.repeat(22)}`;
const AGT_2 = `agt_${'2'.repeat(22)}`;
const AGT_3 = `agt_${'3'.repeat(22)}`;
const AGT_POISON = `agt_${'P'.repeat(22)}`;

const agent = (account: string, id: string): agentsV1.Agent => ({
  id,
  account_id: account,
  project_id: '',
  spec_json: '{}',
  effective_json: '{}',
  created_at: '2026-11-22T00:00:00.000Z',
  updated_at: '2026-11-22T00:00:00.000Z',
});

/**
 * An agents service holding acme/AGT_1, acme/AGT_2 and globex/AGT_3, recording every GetAgents call. A read of
 * AGT_POISON fails: alone in its result (`poison: 'result'`) or, as a service would without isolation, the whole call.
 */
function clientWithService(options: { fail?: Error; poison?: 'result' | 'call' } = {}) {
  const calls: agentsV1.GetAgentRequest[][] = [];
  const stored = new Set([`acme/${AGT_1}`, `acme/${AGT_2}`, `globex/${AGT_3}`]);
  const internal = toGrpcError(new Error('invalid byte sequence'));
  const service = {
    getAgents: (req: agentsV1.GetAgentsRequest) => {
      calls.push(req.reads);
      if (options.fail) return throwError(() => options.fail);
      if (options.poison === 'call' && req.reads.some((r) => r.id === AGT_POISON)) return throwError(() => internal);
      return of({
        results: req.reads.map((r) =>
          r.id === AGT_POISON
            ? { agent: undefined, error: internal.details }
            : { agent: stored.has(`${r.account_id}/${r.id}`) ? agent(r.account_id, r.id) : undefined, error: '' },
        ),
      });
    },
  };
  const grpc = { getService: () => service, getClientByServiceName: () => undefined } as unknown as ClientGrpc;
  return { client: new AgentsClient(grpc, { RPC_TIMEOUT_MS: 1000 } as ServiceConfig), calls };
}

const outcome = (r: PromiseSettledResult<agentsV1.Agent>) => (r.status === 'fulfilled' ? `${r.value.account_id}/${r.value.id}` : (r.reason as AppError).code);

describe('AgentsClient reads', () => {
  it('sends the reads of one turn as one GetAgents call and gives each caller its own answer', async () => {
    const { client, calls } = clientWithService();

    const results = await Promise.allSettled([
      client.getAgent('acme', AGT_1),
      client.getAgent('globex', AGT_3),
      client.getAgent('globex', AGT_1),
      client.getAgent('acme', AGT_2),
    ]);

    expect(calls).toEqual([
      [
        { account_id: 'acme', id: AGT_1 },
        { account_id: 'globex', id: AGT_3 },
        { account_id: 'globex', id: AGT_1 },
        { account_id: 'acme', id: AGT_2 },
      ],
    ]);
    expect(results.map(outcome)).toEqual([`acme/${AGT_1}`, `globex/${AGT_3}`, 'not_found', `acme/${AGT_2}`]);
  });

  it('sends a read at once when it is alone, and later reads in calls of their own', async () => {
    const { client, calls } = clientWithService();

    await client.getAgent('acme', AGT_1);
    await client.getAgent('acme', AGT_2);

    expect(calls).toHaveLength(2);
  });

  it('answers an id the service could not have given as not_found without sending it', async () => {
    const { client, calls } = clientWithService();

    const results = await Promise.allSettled(
      ['agt_\u0000', `${AGT_1.slice(0, -1)}\ud800`, `${AGT_1}0`, `whep_${AGT_1.slice(4)}`, AGT_1.slice(4), ''].map((id) => client.getAgent('globex', id)),
    );

    expect(results.map(outcome)).toEqual(Array(6).fill('not_found'));
    expect(calls).toEqual([]);
  });

  it("fails only the read the service failed, and answers its neighbours of other accounts", async () => {
    const { client } = clientWithService({ poison: 'result' });

    const results = await Promise.allSettled([client.getAgent('acme', AGT_1), client.getAgent('globex', AGT_POISON), client.getAgent('globex', AGT_3)]);

    expect(results.map(outcome)).toEqual([`acme/${AGT_1}`, 'internal_error', `globex/${AGT_3}`]);
  });

  it('makes a call that failed through one read again read by read, so only that read fails', async () => {
    const { client, calls } = clientWithService({ poison: 'call' });

    const results = await Promise.allSettled([client.getAgent('acme', AGT_1), client.getAgent('globex', AGT_POISON), client.getAgent('globex', AGT_3)]);

    expect(results.map(outcome)).toEqual([`acme/${AGT_1}`, 'internal_error', `globex/${AGT_3}`]);
    expect(calls.map((c) => c.length)).toEqual([3, 1, 1, 1]);
  });

  it('fails every read of the call when the service is unavailable, as service_unavailable without retrying each', async () => {
    const { client, calls } = clientWithService({ fail: Object.assign(new Error('connect ECONNREFUSED'), { code: 14 }) });

    const results = await Promise.allSettled([client.getAgent('acme', AGT_1), client.getAgent('acme', AGT_2)]);

    expect(results.map(outcome)).toEqual(['service_unavailable', 'service_unavailable']);
    expect(calls).toHaveLength(1);
  });
});
