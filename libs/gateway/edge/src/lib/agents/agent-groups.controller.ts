import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseInterceptors } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { agentsV1 } from '@parley/contracts';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Operation } from '../http/operation';
import { NoBody } from '../http/no-body';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import {
  AgentGroupDto,
  AgentGroupInputDto,
  AgentGroupListDto,
  AgentGroupMembersDto,
  AgentGroupPatchDto,
  DeletedAgentGroupDto,
} from './agent-group.dto';
import { AgentsClient } from './agents.client';
import { AgentRuleProblemsInterceptor } from './rule-problems.interceptor';
import { ResourceId } from '../http/resource-id';

function presentGroup(g: agentsV1.AgentGroup | undefined): AgentGroupDto {
  if (!g) throw new Error('agents service answered without a group');
  return { id: g.id, object: 'agent_group', ...JSON.parse(g.spec_json), created_at: g.created_at, updated_at: g.updated_at };
}

@ApiTags('Agent groups')
@ResourceId('grp', 'agent group')
@Controller('v1/agent_groups')
export class AgentGroupsController {
  constructor(
    private readonly agents: AgentsClient,
    private readonly cursors: CursorCodec,
  ) {}

  @Get()
  @Operation({ summary: 'List agent groups, newest first', permission: 'agents:read', list: true })
  @ApiOkResponse({ type: AgentGroupListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<AgentGroupDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('agent_groups', who.accountId, c));
    const page = await this.agents.call('listAgentGroups', (s, md) => s.listAgentGroups({ account_id: who.accountId, limit, after }, md));
    return {
      object: 'list',
      data: page.data.map(presentGroup),
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode('agent_groups', who.accountId, page.next) } : {}),
    };
  }

  @Post()
  @Operation({ summary: 'Create an agent group', permission: 'agents:write', idempotent: true, problems: ['validation_error', 'idempotency_conflict'] })
  @ApiCreatedResponse({ type: AgentGroupDto })
  @UseInterceptors(AgentRuleProblemsInterceptor)
  async create(@CurrentPrincipal() who: Principal, @Body() body: AgentGroupInputDto): Promise<AgentGroupDto> {
    const res = await this.agents.call('createAgentGroup', (s, md) =>
      s.createAgentGroup({ account_id: who.accountId, spec_json: JSON.stringify(body) }, md),
    );
    return presentGroup(res.group);
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve an agent group', permission: 'agents:read', problems: ['not_found'] })
  @ApiOkResponse({ type: AgentGroupDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<AgentGroupDto> {
    const res = await this.agents.call('getAgentGroup', (s, md) => s.getAgentGroup({ account_id: who.accountId, id }, md));
    return presentGroup(res.group);
  }

  @Patch(':id')
  @Operation({
    summary: 'Update an agent group; members not overriding a changed default take it on their next call',
    permission: 'agents:write',
    problems: ['not_found', 'validation_error'],
  })
  @ApiOkResponse({ type: AgentGroupDto })
  @UseInterceptors(AgentRuleProblemsInterceptor)
  async update(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: AgentGroupPatchDto): Promise<AgentGroupDto> {
    const res = await this.agents.call('updateAgentGroup', (s, md) =>
      s.updateAgentGroup({ account_id: who.accountId, id, patch_json: JSON.stringify(body) }, md),
    );
    return presentGroup(res.group);
  }

  @Delete(':id')
  @HttpCode(200)
  @Operation({
    summary: 'Delete an agent group',
    description: 'Refused with 409 `conflict` while the group has member agents: move or delete them first.',
    permission: 'agents:write',
    problems: ['not_found', 'conflict'],
  })
  @ApiOkResponse({ type: DeletedAgentGroupDto })
  @NoBody()
  async remove(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedAgentGroupDto> {
    const res = await this.agents.call('deleteAgentGroup', (s, md) => s.deleteAgentGroup({ account_id: who.accountId, id }, md));
    return { id: res.id, object: 'agent_group', deleted: true };
  }

  @Get(':id/members')
  @Operation({ summary: "The group's members and the fields where they differ from its defaults", permission: 'agents:read', problems: ['not_found'] })
  @ApiOkResponse({ type: AgentGroupMembersDto })
  async members(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<AgentGroupMembersDto> {
    const res = await this.agents.call('listGroupMembers', (s, md) => s.listGroupMembers({ account_id: who.accountId, id }, md));
    return JSON.parse(res.members_json);
  }
}
