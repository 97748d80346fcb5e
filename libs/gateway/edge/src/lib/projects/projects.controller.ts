import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { NoBody } from '../http/no-body';
import { Operation } from '../http/operation';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import { ResourceId } from '../http/resource-id';
import { ProjectBudgetDto, ProjectDto, ProjectInputDto, ProjectListDto, ProjectPatchDto, DeletedProjectDto } from './projects.dto';
import { ProjectFields, ProjectRecord } from './projects.repository';
import { ProjectsService, spendOf } from './projects.service';

export function presentProject(p: ProjectRecord): ProjectDto {
  return {
    id: p.id,
    object: 'project',
    name: p.name,
    is_default: p.is_default,
    metadata: p.metadata,
    budget: { max_live_calls: p.max_live_calls, max_agents: p.max_agents, max_webhook_endpoints: p.max_webhook_endpoints, spend: spendOf(p) },
    created_at: new Date(p.created_at).toISOString(),
    updated_at: new Date(p.updated_at).toISOString(),
  };
}

const ceilings = (budget: ProjectBudgetDto | undefined): Omit<ProjectFields, 'name' | 'metadata'> => ({
  maxLiveCalls: budget?.max_live_calls ?? null,
  maxAgents: budget?.max_agents ?? null,
  maxWebhookEndpoints: budget?.max_webhook_endpoints ?? null,
  spend: budget?.spend ? { amount: budget.spend.amount, currency: budget.spend.currency, period: budget.spend.period } : null,
});

@ApiTags('Projects')
@ResourceId('prj', 'project')
@Controller('v1/projects')
export class ProjectsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly cursors: CursorCodec,
  ) {}

  @Get()
  @Operation({ summary: 'List projects, newest first (the default project included)', project: 'own_project', permission: 'billing:read', list: true })
  @ApiOkResponse({ type: ProjectListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<ProjectDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('projects', who.accountId, c));
    // A key scoped to a project sees that project alone (one page, no cursor).
    if (who.projectId) return { object: 'list', data: [presentProject(await this.projects.get(who.accountId, who.projectId))], has_more: false };
    const [iso, id] = after ? after.split('|') : [];
    const page = await this.projects.list(who.accountId, limit, after ? { createdAt: new Date(iso), id } : undefined);
    const last = page.items.at(-1);
    return {
      object: 'list',
      data: page.items.map(presentProject),
      has_more: page.hasMore,
      ...(page.hasMore && last
        ? { next_cursor: this.cursors.encode('projects', who.accountId, `${new Date(last.created_at).toISOString()}|${last.id}`) }
        : {}),
    };
  }

  @Post()
  @Operation({ summary: 'Create a project with its ceilings', permission: 'billing:write', idempotent: true, problems: ['validation_error'] })
  @ApiCreatedResponse({ type: ProjectDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: ProjectInputDto): Promise<ProjectDto> {
    return presentProject(await this.projects.create(who.accountId, { name: body.name, metadata: body.metadata ?? {}, ...ceilings(body.budget) }));
  }

  @Get(':id')
  @Operation({ summary: 'Retrieve a project', project: { param: 'id', object: 'project' }, permission: 'billing:read', problems: ['not_found'] })
  @ApiOkResponse({ type: ProjectDto })
  async get(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<ProjectDto> {
    return presentProject(await this.projects.get(who.accountId, id));
  }

  @Patch(':id')
  @Operation({
    summary: 'Update a project: name merges, metadata and budget are replaced whole',
    description: 'A lowered ceiling applies to what is created next: live calls and existing agents above it are left alone.',
    permission: 'billing:write',
    problems: ['not_found', 'validation_error'],
  })
  @ApiOkResponse({ type: ProjectDto })
  async update(@CurrentPrincipal() who: Principal, @Param('id') id: string, @Body() body: ProjectPatchDto): Promise<ProjectDto> {
    const project = await this.projects.update(who.accountId, id, (current): ProjectFields => ({
      name: body.name ?? current.name,
      metadata: body.metadata ?? current.metadata,
      ...(body.budget === undefined ? { maxLiveCalls: current.maxLiveCalls, maxAgents: current.maxAgents, maxWebhookEndpoints: current.maxWebhookEndpoints, spend: current.spend } : ceilings(body.budget)),
    }));
    return presentProject(project);
  }

  @Delete(':id')
  @HttpCode(200)
  @Operation({
    summary: 'Delete a project that holds no agents and no webhook endpoints',
    description: 'Refused with 409 `conflict` while the project has agents or webhook endpoints, and for the default project. Its calls keep naming it.',
    permission: 'billing:write',
    problems: ['not_found', 'conflict'],
  })
  @ApiOkResponse({ type: DeletedProjectDto })
  @NoBody()
  async delete(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedProjectDto> {
    await this.projects.delete(who.accountId, id);
    return { id, object: 'project', deleted: true };
  }
}
