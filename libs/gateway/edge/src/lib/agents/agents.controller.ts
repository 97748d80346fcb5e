import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { agentsV1 } from '@parley/contracts';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Principal } from '../auth/api-keys.repository';
import { Operation } from '../http/operation';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import { AgentDto, AgentListDto, CreateAgentDto, DeletedAgentDto, UpdateAgentDto } from './agent.dto';
import { AgentsClient } from './agents.client';

function present(a: agentsV1.Agent | undefined): AgentDto {
  if (!a) throw new Error('agents service answered without an agent');
  return {
    id: a.id,
    object: 'agent',
    name: a.name,
    description: a.description,
    languages: a.languages.map((l) => ({ code: l.code })),
    metadata: a.metadata,
    created_at: a.created_at,
    updated_at: a.updated_at,
  };
}

function toInput(dto: Partial<CreateAgentDto>): agentsV1.AgentInput {
  return {
    name: dto.name,
    description: dto.description,
    languages: dto.languages && { entries: dto.languages.map((l) => ({ code: l.code })) },
    metadata: dto.metadata && { entries: dto.metadata },
  };
}

@ApiTags('Agents')
@Controller('v1/agents')
export class AgentsController {
  constructor(
    private readonly agents: AgentsClient,
    private readonly cursors: CursorCodec,
  ) {}

  @Get()
  @Operation({ summary: 'List agents, newest first', permission: 'agents:read', list: true })
  @ApiOkResponse({ type: AgentListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<AgentDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('agents', who.accountId, c));
    const page = await this.agents.call('listAgents', (s, md) => s.listAgents({ account_id: who.accountId, limit, after }, md));
    return {
      object: 'list',
      data: page.data.map(present),
      has_more: page.has_more,
      ...(page.has_more && page.next ? { next_cursor: this.cursors.encode('agents', who.accountId, page.next) } : {}),
    };
  }

  @Post()
  @Operation({
    summary: 'Create an agent',
    permission: 'agents:create',
    idempotent: true,
    problems: ['validation_error', 'payload_too_large', 'unsupported_media_type', 'idempotency_conflict'],
  })
  @ApiCreatedResponse({ type: AgentDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: CreateAgentDto): Promise<AgentDto> {
    const res = await this.agents.call('createAgent', (s, md) =>
      s.createAgent({ account_id: who.accountId, agent: toInput(body) }, md),
    );
    return present(res.agent);
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve an agent', permission: 'agents:read', problems: ['not_found'] })
  @ApiOkResponse({ type: AgentDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<AgentDto> {
    const res = await this.agents.call('getAgent', (s, md) => s.getAgent({ account_id: who.accountId, id }, md));
    return present(res.agent);
  }

  @Patch(':id')
  @Operation({
    summary: 'Update an agent: scalars merge, lists and blocks are replaced whole',
    permission: 'agents:write',
    problems: ['not_found', 'validation_error', 'payload_too_large', 'unsupported_media_type'],
  })
  @ApiOkResponse({ type: AgentDto })
  async update(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: UpdateAgentDto): Promise<AgentDto> {
    const res = await this.agents.call('updateAgent', (s, md) =>
      s.updateAgent({ account_id: who.accountId, id, patch: toInput(body) }, md),
    );
    return present(res.agent);
  }

  @Delete(':id')
  @HttpCode(200)
  @Operation({ summary: 'Delete an agent (soft: calls keep referencing it)', permission: 'agents:create', problems: ['not_found'] })
  @ApiOkResponse({ type: DeletedAgentDto })
  async remove(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedAgentDto> {
    const res = await this.agents.call('deleteAgent', (s, md) => s.deleteAgent({ account_id: who.accountId, id }, md));
    return { id: res.id, object: 'agent', deleted: true };
  }
}
