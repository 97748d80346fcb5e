import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { agentsV1 } from '@parley/contracts';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { Principal } from '../auth/api-keys.repository';
import { ApiProblems } from '../http/openapi-decorators';
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
  @ApiOperation({ summary: 'List agents, newest first' })
  @ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } })
  @ApiQuery({ name: 'starting_after', required: false, schema: { type: 'string' }, description: 'The previous page’s next_cursor.' })
  @ApiOkResponse({ type: AgentListDto })
  @ApiProblems('invalid_request', 'validation_error')
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
  @ApiOperation({ summary: 'Create an agent' })
  @ApiCreatedResponse({ type: AgentDto })
  @ApiProblems('invalid_request', 'validation_error', 'payload_too_large', 'unsupported_media_type')
  async create(@CurrentPrincipal() who: Principal, @Body() body: CreateAgentDto): Promise<AgentDto> {
    const res = await this.agents.call('createAgent', (s, md) =>
      s.createAgent({ account_id: who.accountId, agent: toInput(body) }, md),
    );
    return present(res.agent);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Retrieve an agent' })
  @ApiOkResponse({ type: AgentDto })
  @ApiProblems('not_found')
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<AgentDto> {
    const res = await this.agents.call('getAgent', (s, md) => s.getAgent({ account_id: who.accountId, id }, md));
    return present(res.agent);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Update an agent: scalars merge, lists and blocks are replaced whole' })
  @ApiOkResponse({ type: AgentDto })
  @ApiProblems('not_found', 'invalid_request', 'validation_error', 'payload_too_large', 'unsupported_media_type')
  async update(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: UpdateAgentDto): Promise<AgentDto> {
    const res = await this.agents.call('updateAgent', (s, md) =>
      s.updateAgent({ account_id: who.accountId, id, patch: toInput(body) }, md),
    );
    return present(res.agent);
  }

  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Delete an agent (soft: calls keep referencing it)' })
  @ApiOkResponse({ type: DeletedAgentDto })
  @ApiProblems('not_found')
  async remove(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedAgentDto> {
    const res = await this.agents.call('deleteAgent', (s, md) => s.deleteAgent({ account_id: who.accountId, id }, md));
    return { id: res.id, object: 'agent', deleted: true };
  }
}
