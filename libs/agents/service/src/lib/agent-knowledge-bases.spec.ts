import { ServiceConfig } from '@parley/config';
import { LlmProvider } from '@parley/llm';
import { Sealer } from '@parley/persistence';
import { AgentEntity, AgentGroupEntity } from './agent.entity';
import { AgentsDomain, KnowledgeBases } from './agents.domain';
import { AgentsRepository } from './agents.repository';
import { GroupsRepository } from './groups.repository';
import { AgentSpec, GroupSpec } from './spec/agent-spec';
import { DeploymentCatalogue } from './spec/validate-agent';

const catalogue: DeploymentCatalogue = {
  sttProviders: new Set(['deepgram']),
  ttsProviders: new Set(['offline']),
  functions: new Set(),
  urls: { internalHosts: [], webhookHttpHosts: [], egress: { allowAll: true } } as unknown as DeploymentCatalogue['urls'],
};

/** The account's knowledge bases as the knowledge library's domain answers them; the lookups it was asked. */
class Bases implements KnowledgeBases {
  readonly asked: { accountId: string; ids: string[] }[] = [];
  constructor(private readonly byAccount: Record<string, string[]>) {}
  async existingBases(accountId: string, ids: string[]): Promise<Set<string>> {
    this.asked.push({ accountId, ids });
    return new Set(ids.filter((id) => this.byAccount[accountId]?.includes(id)));
  }
}

function domainWith(bases: Bases, stored: { agent?: AgentSpec; group?: GroupSpec } = {}) {
  const written: AgentSpec[] = [];
  const agents = {
    create: async (accountId: string, spec: AgentSpec) => {
      written.push(spec);
      return Object.assign(new AgentEntity(), { id: 'agt_1', accountId, spec, name: spec.name, groupId: null });
    },
    find: async () => (stored.agent ? Object.assign(new AgentEntity(), { id: 'agt_1', spec: stored.agent }) : null),
    update: async (accountId: string, id: string, change: (current: AgentSpec) => Promise<AgentSpec>) => {
      const spec = await change(structuredClone(stored.agent as AgentSpec));
      written.push(spec);
      return Object.assign(new AgentEntity(), { id, accountId, spec, name: spec.name, groupId: null });
    },
  } as unknown as AgentsRepository;
  const groups = {
    find: async () => (stored.group ? Object.assign(new AgentGroupEntity(), { spec: stored.group }) : null),
    findMany: async () => new Map(),
    create: async (_accountId: string, spec: GroupSpec) => Object.assign(new AgentGroupEntity(), { spec }),
  } as unknown as GroupsRepository;
  const domain = new AgentsDomain(agents, groups, new Sealer('test-secret'), catalogue, [], {} as LlmProvider, {} as ServiceConfig, bases);
  return { domain, written };
}

const agent = (extra: Partial<AgentSpec> = {}): AgentSpec => ({ name: 'Front desk', languages: [{ code: 'en-US' }], ...extra }) as AgentSpec;

describe("an agent's knowledge bases are the account's", () => {
  it('accepts bases of the account, asking the knowledge domain once for all the fields name', async () => {
    const bases = new Bases({ acme: ['kb_faq', 'kb_policy'] });
    const { domain, written } = domainWith(bases);

    await domain.createAgent('acme', agent({ knowledge_base_id: 'kb_faq', knowledge_base_ids: ['kb_policy'] }));

    expect(written).toHaveLength(1);
    expect(bases.asked).toEqual([{ accountId: 'acme', ids: ['kb_faq', 'kb_policy'] }]);
  });

  it('refuses each base the account does not have under its field path, with the other problems, writing nothing', async () => {
    // kb_other is another account's: as absent as kb_gone.
    const { domain, written } = domainWith(new Bases({ acme: ['kb_faq'], globex: ['kb_other'] }));

    const refused = domain.createAgent('acme', agent({ name: '', knowledge_base_id: 'kb_gone', knowledge_base_ids: ['kb_faq', 'kb_other'] }));

    await expect(refused).rejects.toMatchObject({
      code: 'validation_error',
      errors: expect.arrayContaining([
        { field: 'name', message: 'is required' },
        { field: 'knowledge_base_id', message: 'names no knowledge base of this account' },
        { field: 'knowledge_base_ids[1]', message: 'names no knowledge base of this account' },
      ]),
    });
    await refused.catch((error: { errors: { field: string }[] }) => expect(error.errors.map((e) => e.field)).not.toContain('knowledge_base_ids[0]'));
    expect(written).toEqual([]);
  });

  it('reports the problem when the gateway asks for the problems of a body it refuses for its shape', async () => {
    const { domain } = domainWith(new Bases({ acme: [] }));

    expect(await domain.agentWriteProblems('acme', '', { knowledge_base_ids: ['kb_nope'] })).toEqual(
      expect.arrayContaining([{ field: 'knowledge_base_ids[0]', message: 'names no knowledge base of this account' }]),
    );
  });

  it('keeps a base deleted after the agent named it: an update that does not write the bases passes; one that writes them is checked', async () => {
    const bases = new Bases({ acme: ['kb_new'] });
    const { domain, written } = domainWith(bases, { agent: agent({ knowledge_base_ids: ['kb_deleted'] }) });

    await domain.updateAgent('acme', 'agt_1', { name: 'Renamed' });
    expect(written.at(-1)).toMatchObject({ name: 'Renamed', knowledge_base_ids: ['kb_deleted'] });
    expect(bases.asked).toEqual([]);

    await expect(domain.updateAgent('acme', 'agt_1', { knowledge_base_ids: ['kb_deleted', 'kb_new'] })).rejects.toMatchObject({
      errors: [{ field: 'knowledge_base_ids[0]', message: 'names no knowledge base of this account' }],
    });
    await domain.updateAgent('acme', 'agt_1', { knowledge_base_ids: ['kb_new'] });
    expect(written.at(-1)).toMatchObject({ knowledge_base_ids: ['kb_new'] });
  });

  it("checks a group's default bases under defaults.", async () => {
    const { domain } = domainWith(new Bases({ acme: ['kb_faq'] }));

    await expect(domain.createGroup('acme', { name: 'Support', defaults: { knowledge_base_ids: ['kb_faq', 'kb_x'] } } as GroupSpec)).rejects.toMatchObject({
      errors: [{ field: 'defaults.knowledge_base_ids[1]', message: 'names no knowledge base of this account' }],
    });
    await expect(domain.createGroup('acme', { name: 'Support', defaults: { knowledge_base_ids: ['kb_faq'] } } as GroupSpec)).resolves.toBeDefined();
    expect(await domain.groupWriteProblems('acme', '', { defaults: { knowledge_base_ids: ['kb_y'] } })).toEqual([
      { field: 'defaults.knowledge_base_ids[0]', message: 'names no knowledge base of this account' },
    ]);
  });
});
