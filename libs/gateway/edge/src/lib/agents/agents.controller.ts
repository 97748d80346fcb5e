import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseInterceptors } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiQuery, ApiTags } from '@nestjs/swagger';
import { agentsV1, readAgent } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { NoBody } from '../http/no-body';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import {
  AgentDto,
  AgentInputDto,
  AgentListDto,
  AgentPatchDto,
  DeletedAgentDto,
  PostCallTestInputDto,
  PostCallTestResultDto,
} from './agent.dto';
import { AgentsClient } from './agents.client';
import { AgentRuleProblemsInterceptor } from './rule-problems.interceptor';
import { ResourceId } from '../http/resource-id';
import { callListFilter } from '../calls/calls.controller';
import { noSuchProject, ProjectsService } from '../projects/projects.service';

/** The public agent: the stored document (secrets redacted) plus id, object, the effective block and times. */
export function presentAgent(a: agentsV1.Agent | undefined): AgentDto {
  if (!a) throw new Error('agents service answered without an agent');
  const { spec, effective } = readAgent(a);
  return { id: a.id, object: 'agent', project_id: a.project_id, ...spec, effective, created_at: a.created_at, updated_at: a.updated_at };
}

@ApiTags('Agents')
@ResourceId('agt', 'agent')
@Controller('v1/agents')
export class AgentsController {
  constructor(
    private readonly agents: AgentsClient,
    private readonly cursors: CursorCodec,
    private readonly projects: ProjectsService,
  ) {}

  @Get()
  @Operation({ summary: 'List agents, newest first', project: 'list', permission: 'agents:read', list: true, query: ['project_id'] })
  @ApiQuery({
    name: 'project_id',
    required: false,
    description: 'Only the agents of this project. A value that is not a project id (`prj_…`) is refused with 400 `invalid_request`.',
    schema: { type: 'string', pattern: '^prj_[0-9A-Za-z]{22}$' },
  })
  @ApiOkResponse({ type: AgentListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<AgentDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('agents', who.accountId, c));
    const project = callListFilter(query, 'project_id');
    const page = await this.agents.call('listAgents', (s, md) => s.listAgents({ account_id: who.accountId, limit, after, project_id: project }, md));
    return {
      object: 'list',
      data: page.data.map(presentAgent),
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode('agents', who.accountId, page.next) } : {}),
    };
  }

  @Post()
  @Operation({
    summary: 'Create an agent',
    project: 'body_project', permission: 'agents:create',
    idempotent: true,
    problems: ['validation_error', 'plan_limit_reached', 'payload_too_large', 'unsupported_media_type', 'idempotency_conflict'],
  })
  @ApiCreatedResponse({ type: AgentDto })
  @UseInterceptors(AgentRuleProblemsInterceptor)
  async create(@CurrentPrincipal() who: Principal, @Body() body: AgentInputDto): Promise<AgentDto> {
    const { project_id: projectId, ...spec } = body;
    // Created under the project's share lock: its max_agents holds still and it cannot be deleted meanwhile.
    const res = await this.projects.within(who.accountId, projectId, noSuchProject('project_id'), (project) =>
      this.agents.call('createAgent', (s, md) =>
        s.createAgent({ account_id: who.accountId, spec_json: JSON.stringify(spec), project_id: project.id, max_agents: project.max_agents ?? 0 }, md),
      ),
    );
    return presentAgent(res.agent);
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve an agent, with its effective configuration', project: { param: 'id', object: 'agent' }, permission: 'agents:read', problems: ['not_found'] })
  @ApiOkResponse({ type: AgentDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<AgentDto> {
    return presentAgent(await this.agents.getAgent(who.accountId, id));
  }

  @Patch(':id')
  @Operation({
    summary: 'Update an agent: scalars merge, lists and blocks are replaced whole',
    description: 'Send `flow: {}` to remove the flow. Credentials omitted from a tool keep their stored values.',
    project: { param: 'id', object: 'agent' }, permission: 'agents:write',
    problems: ['not_found', 'validation_error', 'payload_too_large', 'unsupported_media_type'],
  })
  @ApiOkResponse({ type: AgentDto })
  @UseInterceptors(AgentRuleProblemsInterceptor)
  async update(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: AgentPatchDto): Promise<AgentDto> {
    const res = await this.agents.call('updateAgent', (s, md) =>
      s.updateAgent({ account_id: who.accountId, id, patch_json: JSON.stringify(body) }, md),
    );
    return presentAgent(res.agent);
  }

  @Delete(':id')
  @HttpCode(200)
  @Operation({
    summary: 'Delete an agent',
    description: 'Soft delete: the agent leaves lists and reads (404), calls keep referencing it, and restore brings it back.',
    project: { param: 'id', object: 'agent' }, permission: 'agents:create',
    problems: ['not_found'],
  })
  @ApiOkResponse({ type: DeletedAgentDto })
  @NoBody()
  async remove(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedAgentDto> {
    const res = await this.agents.call('deleteAgent', (s, md) => s.deleteAgent({ account_id: who.accountId, id }, md));
    return { id: res.id, object: 'agent', deleted: true };
  }

  @Post(':id/restore')
  @HttpCode(200)
  @Operation({
    summary: 'Restore a deleted agent',
    description:
      'No body. Returns the agent; restoring an agent that is not deleted returns it unchanged. The agent counts against its project’s ' +
      '`max_agents` again (402 `plan_limit_reached` at the ceiling); an agent whose project was deleted is not restored (409 `conflict`).',
    project: { param: 'id', object: 'agent' }, permission: 'agents:create',
    idempotent: true,
    problems: ['not_found', 'conflict', 'plan_limit_reached'],
  })
  @ApiOkResponse({ type: AgentDto })
  @NoBody()
  async restore(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<AgentDto> {
    // Counted against its project's max_agents, read under the project's share lock as for a create.
    const { project_id: projectId } = await this.agents.call('getAgentProject', (s, md) => s.getAgentProject({ account_id: who.accountId, id }, md));
    const gone = () => new AppError('conflict', `The agent's project (${projectId}) was deleted; it cannot be restored.`);
    const res = await this.projects.within(who.accountId, projectId, gone, (project) =>
      this.agents.call('restoreAgent', (s, md) => s.restoreAgent({ account_id: who.accountId, id, max_agents: project.max_agents ?? 0 }, md)),
    );
    return presentAgent(res.agent);
  }

  @Post(':id/post_call/test')
  @HttpCode(200)
  @Operation({
    summary: "Run the agent's post-call analysis on a transcript",
    description: 'Nothing is stored. Uses the agent’s post_call settings and the deployment’s language model.',
    project: { param: 'id', object: 'agent' }, permission: 'agents:write',
    problems: ['not_found', 'validation_error'],
  })
  @ApiOkResponse({ type: PostCallTestResultDto })
  async testPostCall(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: PostCallTestInputDto): Promise<PostCallTestResultDto> {
    const res = await this.agents.call('testPostCall', (s, md) =>
      s.testPostCall({ account_id: who.accountId, id, transcript: body.transcript.map((t) => ({ role: t.role, text: t.text })) }, md),
    );
    return { object: 'post_call_test', ...JSON.parse(res.result_json) };
  }
}
