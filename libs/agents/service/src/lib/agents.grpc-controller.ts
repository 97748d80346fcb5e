import { Controller } from '@nestjs/common';
import { agentsV1 } from '@parley/contracts';
import { serviceLogger } from '@parley/observability';
import { defaultProjectId } from '@parley/persistence';
import { AppError, pageLimit, toGrpcError } from '@parley/rpc';
import { AgentGroupEntity } from './agent.entity';
import { AgentsDomain, AgentView } from './agents.domain';

const { AgentsServiceControllerMethods } = agentsV1;
const log = serviceLogger('agents');

/** Bounds one GetAgents call (one statement); the gateway sends far fewer. */
const MAX_READS_PER_CALL = 1000;

function toAgent(view: AgentView): agentsV1.Agent {
  return {
    id: view.entity.id,
    account_id: view.entity.accountId,
    spec_json: JSON.stringify(view.spec),
    effective_json: JSON.stringify(view.effective),
    created_at: view.entity.createdAt.toISOString(),
    updated_at: view.entity.updatedAt.toISOString(),
    project_id: view.entity.projectId ?? defaultProjectId(view.entity.accountId),
  };
}

function toGroup(group: AgentGroupEntity): agentsV1.AgentGroup {
  return {
    id: group.id,
    account_id: group.accountId,
    spec_json: JSON.stringify(group.spec),
    created_at: group.createdAt.toISOString(),
    updated_at: group.updatedAt.toISOString(),
  };
}

/** One read's own failure, as a failed call would carry it (and logged as the server logs a failed call). */
function readFailure(error: Error): string {
  if (!(error instanceof AppError)) log.error({ err: error }, 'one read of GetAgents failed');
  return toGrpcError(error).details;
}

/** The documents cross gRPC as JSON text; anything that is not a JSON object is a caller bug. */
function parse<T>(json: string): T {
  try {
    const value = JSON.parse(json || '{}');
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as T;
  } catch {
    // fall through
  }
  throw new AppError('invalid_request', 'The document is not a JSON object.');
}

@Controller()
@AgentsServiceControllerMethods()
export class AgentsGrpcController implements agentsV1.AgentsServiceController {
  constructor(private readonly domain: AgentsDomain) {}

  async createAgent(req: agentsV1.CreateAgentRequest): Promise<agentsV1.CreateAgentResponse> {
    const project = { id: req.project_id || defaultProjectId(req.account_id), maxAgents: Math.max(0, req.max_agents) };
    return { agent: toAgent(await this.domain.createAgent(req.account_id, parse(req.spec_json), project)) };
  }

  async getAgent(req: agentsV1.GetAgentRequest): Promise<agentsV1.GetAgentResponse> {
    return { agent: toAgent(await this.domain.getAgent(req.account_id, req.id)) };
  }

  async getAgents(req: agentsV1.GetAgentsRequest): Promise<agentsV1.GetAgentsResponse> {
    if (req.reads.length > MAX_READS_PER_CALL) throw new AppError('invalid_request', `At most ${MAX_READS_PER_CALL} reads per call.`);
    const views = await this.domain.getAgents(req.reads.map((r) => ({ accountId: r.account_id, id: r.id })));
    return { results: views.map((view) => (view instanceof Error ? { agent: undefined, error: readFailure(view) } : { agent: view ? toAgent(view) : undefined, error: '' })) };
  }

  /** Internal: the media worker's read, with tool secrets opened (see the proto). */
  async getAgentRuntime(req: agentsV1.GetAgentRuntimeRequest): Promise<agentsV1.GetAgentRuntimeResponse> {
    const runtime = await this.domain.getAgentRuntime(req.account_id, req.id);
    return { agent: toAgent(runtime.view), tool_configs_json: JSON.stringify(runtime.toolConfigs), functions_json: JSON.stringify(runtime.functions) };
  }

  async locateAgent(req: agentsV1.LocateAgentRequest): Promise<agentsV1.LocateAgentResponse> {
    return { account_id: await this.domain.locateAgent(req.id) };
  }

  async updateAgent(req: agentsV1.UpdateAgentRequest): Promise<agentsV1.UpdateAgentResponse> {
    return { agent: toAgent(await this.domain.updateAgent(req.account_id, req.id, parse(req.patch_json))) };
  }

  async deleteAgent(req: agentsV1.DeleteAgentRequest): Promise<agentsV1.DeleteAgentResponse> {
    await this.domain.deleteAgent(req.account_id, req.id);
    return { id: req.id, deleted: true };
  }

  async restoreAgent(req: agentsV1.RestoreAgentRequest): Promise<agentsV1.RestoreAgentResponse> {
    return { agent: toAgent(await this.domain.restoreAgent(req.account_id, req.id, Math.max(0, req.max_agents))) };
  }

  async getAgentProject(req: agentsV1.GetAgentProjectRequest): Promise<agentsV1.GetAgentProjectResponse> {
    return { project_id: await this.domain.agentProject(req.account_id, req.id) };
  }

  async listAgents(req: agentsV1.ListAgentsRequest): Promise<agentsV1.ListAgentsResponse> {
    const page = await this.domain.listAgents(req.account_id, pageLimit(req.limit), req.after, req.project_id || undefined);
    return { data: page.items.map(toAgent), has_more: page.hasMore, next: page.next };
  }

  async testPostCall(req: agentsV1.TestPostCallRequest): Promise<agentsV1.TestPostCallResponse> {
    const transcript = req.transcript.map((t) => ({ role: t.role === 'assistant' ? ('assistant' as const) : ('user' as const), text: t.text }));
    return { result_json: JSON.stringify(await this.domain.testPostCall(req.account_id, req.id, transcript)) };
  }

  async createAgentGroup(req: agentsV1.CreateAgentGroupRequest): Promise<agentsV1.CreateAgentGroupResponse> {
    return { group: toGroup(await this.domain.createGroup(req.account_id, parse(req.spec_json))) };
  }

  async getAgentGroup(req: agentsV1.GetAgentGroupRequest): Promise<agentsV1.GetAgentGroupResponse> {
    return { group: toGroup(await this.domain.getGroup(req.account_id, req.id)) };
  }

  async updateAgentGroup(req: agentsV1.UpdateAgentGroupRequest): Promise<agentsV1.UpdateAgentGroupResponse> {
    return { group: toGroup(await this.domain.updateGroup(req.account_id, req.id, parse(req.patch_json))) };
  }

  async deleteAgentGroup(req: agentsV1.DeleteAgentGroupRequest): Promise<agentsV1.DeleteAgentGroupResponse> {
    await this.domain.deleteGroup(req.account_id, req.id);
    return { id: req.id, deleted: true };
  }

  async listAgentGroups(req: agentsV1.ListAgentGroupsRequest): Promise<agentsV1.ListAgentGroupsResponse> {
    const page = await this.domain.listGroups(req.account_id, pageLimit(req.limit), req.after);
    return { data: page.items.map(toGroup), has_more: page.hasMore, next: page.next };
  }

  async listGroupMembers(req: agentsV1.ListGroupMembersRequest): Promise<agentsV1.ListGroupMembersResponse> {
    return { members_json: JSON.stringify(await this.domain.groupMembers(req.account_id, req.id)) };
  }

  async checkAgentWrite(req: agentsV1.CheckAgentWriteRequest): Promise<agentsV1.CheckAgentWriteResponse> {
    return { problems: await this.domain.agentWriteProblems(req.account_id, req.id, parse(req.spec_json)) };
  }

  async checkAgentGroupWrite(req: agentsV1.CheckAgentGroupWriteRequest): Promise<agentsV1.CheckAgentGroupWriteResponse> {
    return { problems: await this.domain.groupWriteProblems(req.account_id, req.id, parse(req.spec_json)) };
  }

  listFunctions(): agentsV1.ListFunctionsResponse {
    return {
      data: this.domain.functions.map((f) => ({ name: f.name, description: f.description, parameters_json: JSON.stringify(f.parameters) })),
    };
  }
}
