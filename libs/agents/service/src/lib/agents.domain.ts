import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { EffectiveConfig, FieldProblem, RegisteredFunction } from '@parley/contracts';
import { LlmProvider } from '@parley/llm';
import { isWellFormedId, Page } from '@parley/persistence';
import { analysePostCall, PostCallResult, TranscriptTurn } from '@parley/post-call';
import { AppError, pagePosition } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { AgentEntity, AgentGroupEntity } from './agent.entity';
import { AgentsRepository } from './agents.repository';
import { GroupsRepository } from './groups.repository';
import { applyPatch, groupDifferences, presentAgent, resolveEffective, runtimeToolConfigs, sealSecrets } from './spec/agent-document';
import { AgentSpec, GroupSpec, ToolConfig } from './spec/agent-spec';
import { Sealer } from '@parley/persistence';
import { checkUrlFields, urlFields } from './spec/check-urls';
import { DeploymentCatalogue, validateAgent, validateGroup } from './spec/validate-agent';

export const CATALOGUE = Symbol('CATALOGUE');
export const FUNCTIONS = Symbol('FUNCTIONS');
export const POST_CALL_LLM = Symbol('POST_CALL_LLM');
export const KNOWLEDGE_BASES = Symbol('KNOWLEDGE_BASES');

/** The knowledge bases an agent may name: the knowledge library's domain, hosted in the same deployable. */
export interface KnowledgeBases {
  /** Which of `ids` name knowledge bases of this account. */
  existingBases(accountId: string, ids: string[]): Promise<Set<string>>;
}

/** The field problems a check is refused with; none when it passes. */
async function problemsOf(check: Promise<unknown>): Promise<FieldProblem[]> {
  try {
    await check;
    return [];
  } catch (error) {
    if (error instanceof AppError && error.code === 'validation_error') return error.errors ?? [];
    throw error;
  }
}

export interface AgentView {
  entity: AgentEntity;
  spec: ReturnType<typeof presentAgent>;
  effective: EffectiveConfig;
}

/** The agents service's behaviour: validation, sealing, inheritance and the post-call test. */
@Injectable()
export class AgentsDomain {
  constructor(
    private readonly agents: AgentsRepository,
    private readonly groups: GroupsRepository,
    private readonly sealer: Sealer,
    @Inject(CATALOGUE) private readonly catalogue: DeploymentCatalogue,
    @Inject(FUNCTIONS) readonly functions: RegisteredFunction[],
    @Inject(POST_CALL_LLM) private readonly llm: LlmProvider,
    @Inject(CONFIG) private readonly config: ServiceConfig,
    @Inject(KNOWLEDGE_BASES) private readonly knowledge: KnowledgeBases,
  ) {}

  /** `project`: where the agent is created and that project's ceiling on agents (the gateway owns projects). */
  async createAgent(accountId: string, input: AgentSpec, project?: { id: string; maxAgents: number }): Promise<AgentView> {
    const spec = await this.check(accountId, applyPatch({} as AgentSpec, input), input);
    return this.view(await this.agents.create(accountId, sealSecrets(spec, this.sealer), project));
  }

  async getAgent(accountId: string, id: string): Promise<AgentView> {
    const [view] = await this.getAgents([{ accountId, id }]);
    if (view instanceof Error) throw view;
    if (!view) throw AppError.notFound('agent');
    return view;
  }

  /**
   * Several reads at once, each in its own account: one result per read, null where there is no such agent, an
   * Error where that read alone failed (its neighbours are answered all the same).
   */
  async getAgents(reads: { accountId: string; id: string }[]): Promise<(AgentView | null | Error)[]> {
    const agents = await this.agents.findMany(reads);
    const present = await this.presenter(agents.map((a) => (a instanceof AgentEntity ? a : null)));
    return agents.map((a) => (a instanceof AgentEntity ? present(a) : a));
  }

  /**
   * Internal (media worker): the agent plus what executing its tools needs, secrets opened. Never reaches the
   * public API; GetAgent stays redacted.
   */
  async getAgentRuntime(accountId: string, id: string): Promise<{ view: AgentView; toolConfigs: ToolConfig[]; functions: RegisteredFunction[] }> {
    const agent = await this.agents.find(accountId, id);
    if (!agent) throw AppError.notFound('agent');
    const view = await this.view(agent);
    const named = new Set(view.effective.tools ?? []);
    return { view, toolConfigs: runtimeToolConfigs(agent.spec, this.sealer), functions: this.functions.filter((f) => named.has(f.name)) };
  }

  async agentProject(accountId: string, id: string): Promise<string> {
    const projectId = isWellFormedId('agt', id) ? await this.agents.projectOf(accountId, id) : null;
    if (!projectId) throw AppError.notFound('agent');
    return projectId;
  }

  async locateAgent(id: string): Promise<string> {
    const accountId = await this.agents.accountOf(id);
    if (!accountId) throw AppError.notFound('agent');
    return accountId;
  }

  async updateAgent(accountId: string, id: string, patch: Partial<AgentSpec>): Promise<AgentView> {
    const agent = await this.agents.update(accountId, id, async (current, m) =>
      sealSecrets(await this.check(accountId, applyPatch(current, patch), patch, m), this.sealer),
    );
    if (!agent) throw AppError.notFound('agent');
    return this.view(agent);
  }

  async deleteAgent(accountId: string, id: string): Promise<void> {
    if (!(await this.agents.softDelete(accountId, id))) throw AppError.notFound('agent');
  }

  /** `maxAgents`: the ceiling of the agent's project (the gateway owns projects); 0: none. */
  async restoreAgent(accountId: string, id: string, maxAgents = 0): Promise<AgentView> {
    const agent = await this.agents.restore(accountId, id, maxAgents);
    if (!agent) throw AppError.notFound('agent');
    return this.view(agent);
  }

  async listAgents(accountId: string, limit: number, after: string, projectId?: string): Promise<Page<AgentView>> {
    const page = await this.agents.list(accountId, limit, pagePosition(after), projectId);
    return { ...page, items: page.items.map(await this.presenter(page.items)) };
  }

  /** Runs the agent's post-call settings on a transcript given by the caller, through the LLM provider. */
  async testPostCall(accountId: string, id: string, transcript: TranscriptTurn[]): Promise<PostCallResult> {
    const { spec } = await this.getAgent(accountId, id);
    const settings = spec.post_call ?? {};
    try {
      return await analysePostCall(
        this.llm,
        {
          summary: settings.summary ?? true,
          model: settings.model || this.config.POST_CALL_MODEL,
          extraction: (settings.extraction ?? []).map((f) => ({ ...f, type: f.type ?? 'string' })),
        },
        transcript,
      );
    } catch (error) {
      throw new AppError('service_unavailable', `The language model did not answer usably: ${(error as Error).message}`);
    }
  }

  async createGroup(accountId: string, input: GroupSpec): Promise<AgentGroupEntity> {
    await this.checkGroup(accountId, input, input);
    return this.groups.create(accountId, input);
  }

  async getGroup(accountId: string, id: string): Promise<AgentGroupEntity> {
    const group = await this.groups.find(accountId, id);
    if (!group) throw AppError.notFound('agent group');
    return group;
  }

  async updateGroup(accountId: string, id: string, patch: Partial<GroupSpec>): Promise<AgentGroupEntity> {
    const group = await this.groups.update(accountId, id, patch, (spec) => this.checkGroup(accountId, spec, patch));
    if (!group) throw AppError.notFound('agent group');
    return group;
  }

  async deleteGroup(accountId: string, id: string): Promise<void> {
    if (!(await this.groups.delete(accountId, id))) throw AppError.notFound('agent group');
  }

  listGroups(accountId: string, limit: number, after: string): Promise<Page<AgentGroupEntity>> {
    return this.groups.list(accountId, limit, pagePosition(after));
  }

  async groupMembers(accountId: string, id: string) {
    const group = await this.getGroup(accountId, id);
    const members = (await this.agents.members(accountId, id)).map((agent) => {
      const spec = presentAgent(agent.spec);
      return { agent_id: agent.id, name: spec.name, overrides: spec.overrides ?? [], differences: groupDifferences(agent.spec, group.spec) };
    });
    return {
      object: 'agent_group_members',
      group_id: id,
      members,
      differing: members.filter((m) => m.differences.length > 0).length,
    };
  }

  /**
   * The problems creating (no id) or patching this agent would be refused with, without writing: the gateway asks
   * for them when the body's shape is already refused, so the caller hears of every invalid field at once. No such
   * agent: none (the write itself answers 404).
   */
  async agentWriteProblems(accountId: string, id: string, written: Partial<AgentSpec>): Promise<FieldProblem[]> {
    const current = id ? (await this.agents.find(accountId, id))?.spec : ({} as AgentSpec);
    return current ? problemsOf(this.check(accountId, applyPatch(current, written), written)) : [];
  }

  /** As agentWriteProblems, for an agent group. */
  async groupWriteProblems(accountId: string, id: string, written: Partial<GroupSpec>): Promise<FieldProblem[]> {
    const current = id ? (await this.groups.find(accountId, id))?.spec : ({} as GroupSpec);
    return current ? problemsOf(this.checkGroup(accountId, applyPatch(current, written), written)) : [];
  }

  /**
   * Validates the whole agent; the URLs the platform will call are checked (DNS included) where the request
   * writes them, so an unrelated update never fails on a stored URL's resolution.
   */
  private async check(accountId: string, spec: AgentSpec, written: Partial<AgentSpec>, manager?: EntityManager): Promise<AgentSpec> {
    const problems = [
      ...(spec.name ? [] : [{ field: 'name', message: 'is required' }]),
      ...(spec.languages?.length ? [] : [{ field: 'languages', message: 'needs at least one language' }]),
      ...validateAgent(spec, this.catalogue),
    ];
    problems.push(...(await this.checkUrls(urlFields(written), problems)));
    if (spec.group_id && !(await this.groups.find(accountId, spec.group_id, manager))) {
      problems.push({ field: 'group_id', message: 'names no agent group of this account' });
    }
    problems.push(...(await this.checkBases(accountId, written)));
    if (problems.length) throw AppError.validation(problems);
    return spec;
  }

  private async checkGroup(accountId: string, spec: GroupSpec, written: Partial<GroupSpec>): Promise<void> {
    const problems = validateGroup(spec, this.catalogue);
    problems.push(...(await this.checkUrls(urlFields(written.defaults ?? {}, 'defaults.'), problems)));
    problems.push(...(await this.checkBases(accountId, written.defaults ?? {}, 'defaults.')));
    if (problems.length) throw AppError.validation(problems);
  }

  /**
   * The knowledge bases the request writes must be the account's (one query). Checked where written only: a base
   * deleted later stays named on its agents (the search skips it), and an unrelated update still passes.
   */
  private async checkBases(accountId: string, written: Partial<Pick<AgentSpec, 'knowledge_base_id' | 'knowledge_base_ids'>>, prefix = ''): Promise<FieldProblem[]> {
    const named = [
      ...(written.knowledge_base_id ? [{ field: `${prefix}knowledge_base_id`, id: written.knowledge_base_id }] : []),
      ...(written.knowledge_base_ids ?? []).map((id, i) => ({ field: `${prefix}knowledge_base_ids[${i}]`, id })),
    ];
    if (!named.length) return [];
    const existing = await this.knowledge.existingBases(accountId, named.map((n) => n.id));
    return named.filter((n) => !existing.has(n.id)).map((n) => ({ field: n.field, message: 'names no knowledge base of this account' }));
  }

  /** The egress check of the URL fields not already refused (one problem per field). */
  private checkUrls(fields: ReturnType<typeof urlFields>, refused: { field: string }[]) {
    const done = new Set(refused.map((p) => p.field));
    return checkUrlFields(fields.filter((f) => !done.has(f.field)), this.catalogue.urls);
  }

  private async view(agent: AgentEntity): Promise<AgentView> {
    return (await this.presenter([agent]))(agent);
  }

  /** Reads the groups of these agents in one query, and returns how to present each agent with its group. */
  private async presenter(agents: (AgentEntity | null)[]): Promise<(agent: AgentEntity) => AgentView> {
    const groups = await this.groups.findMany(agents.flatMap((a) => (a?.groupId ? [{ accountId: a.accountId, id: a.groupId }] : [])));
    return (agent) => ({
      entity: agent,
      spec: presentAgent(agent.spec),
      effective: resolveEffective(agent.spec, agent.groupId ? groups.get(`${agent.accountId}/${agent.groupId}`)?.spec : undefined),
    });
  }
}
