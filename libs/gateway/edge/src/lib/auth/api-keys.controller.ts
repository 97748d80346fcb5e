import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsDateString, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { ROLES, Role } from '@parley/config';
import { AppError } from '@parley/rpc';
import { Operation } from '../http/operation';
import { CursorCodec, ListEnvelope, parseListQuery } from '../http/pagination';
import { ApiKeyRecord, ApiKeysRepository, Principal } from './api-keys.repository';
import { ROLE_RANK } from './permissions';
import { CurrentPrincipal } from './principal.decorator';
import { ResourceId } from '../http/resource-id';
import { NoBody } from '../http/no-body';
import { noSuchProject, ProjectsService } from '../projects/projects.service';

/**
 * Why a key cannot be scoped to the default project: its webhook endpoints receive every project's events, so such a
 * key would read the other projects' calls through an endpoint it creates.
 */
const DEFAULT_NOT_SCOPABLE = 'is the default project, whose webhook endpoints receive every project’s events: a key cannot be scoped to it';

export class CreateApiKeyDto {
  @ApiPropertyOptional({ description: 'A label for the key.', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ enum: ROLES, default: 'member', description: 'At most the role of the key making the request.' })
  @IsOptional()
  @IsIn(ROLES)
  role?: Role;

  @ApiPropertyOptional({ format: 'date-time', description: 'When the key stops working; omit for never.' })
  @IsOptional()
  @IsDateString({ strict: true })
  expires_at?: string;

  @ApiPropertyOptional({
    pattern: '^prj_[0-9A-Za-z]{22}$',
    description:
      'Scopes the key to this project of the account (not the default project): it reaches only that project’s agents, calls, webhook ' +
      'endpoints and analytics, and account-wide routes refuse it (403). Omit for an account-wide key.',
  })
  @IsOptional()
  @IsString()
  project_id?: string;
}

export class ApiKeyDto {
  @ApiProperty({ example: 'key_7Yb…' }) id: string;
  @ApiProperty({ enum: ['api_key'] }) object: 'api_key';
  @ApiProperty() name: string;
  @ApiProperty({ enum: ROLES }) role: Role;
  @ApiProperty({ description: 'Last four characters of the secret.' }) hint: string;
  @ApiProperty({ type: 'string', nullable: true, description: 'The project the key is scoped to; null: account-wide.' }) project_id: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time', type: 'string', nullable: true }) expires_at: string | null;
  @ApiProperty({ format: 'date-time', type: 'string', nullable: true }) last_used_at: string | null;
}

export class CreatedApiKeyDto extends ApiKeyDto {
  @ApiProperty({ description: 'The key itself (vsk_…); shown only in this response.' }) secret: string;
}

export class ApiKeyListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [ApiKeyDto] }) data: ApiKeyDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional() next_cursor?: string;
}

export class DeletedApiKeyDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['api_key'] }) object: 'api_key';
  @ApiProperty({ enum: [true] }) deleted: true;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function present(k: ApiKeyRecord): ApiKeyDto {
  return {
    id: k.id,
    object: 'api_key',
    name: k.name,
    role: k.role,
    hint: k.hint,
    project_id: k.project_id,
    created_at: new Date(k.created_at).toISOString(),
    expires_at: iso(k.expires_at),
    last_used_at: iso(k.last_used_at),
  };
}

@ApiTags('API keys')
@ResourceId('key', 'API key')
@Controller('v1/api_keys')
export class ApiKeysController {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly cursors: CursorCodec,
    private readonly projects: ProjectsService,
  ) {}

  @Get()
  @Operation({ summary: 'List API keys (secrets are never shown again)', permission: 'keys:read', list: true })
  @ApiOkResponse({ type: ApiKeyListDto })
  async list(@CurrentPrincipal() who: Principal, @Query() query: Record<string, unknown>): Promise<ListEnvelope<ApiKeyDto>> {
    const { limit, after } = parseListQuery(query, (c) => this.cursors.decode('api_keys', who.accountId, c));
    const [iso, id] = after ? after.split('|') : [];
    const page = await this.keys.list(who.accountId, limit, after ? { createdAt: new Date(iso), id } : undefined);
    const last = page.items.at(-1);
    return {
      object: 'list',
      data: page.items.map(present),
      has_more: page.hasMore,
      ...(page.hasMore && last
        ? { next_cursor: this.cursors.encode('api_keys', who.accountId, `${new Date(last.created_at).toISOString()}|${last.id}`) }
        : {}),
    };
  }

  @Post()
  @Operation({
    summary: 'Issue an API key; its secret is in this response only',
    description: 'With `project_id`, the key is scoped to that project (docs/projects.md); a project the account does not have, or its default project, is 422 on `project_id`.',
    permission: 'keys:write',
    idempotent: true,
    problems: ['validation_error'],
  })
  @ApiCreatedResponse({ type: CreatedApiKeyDto })
  async create(@CurrentPrincipal() who: Principal, @Body() body: CreateApiKeyDto): Promise<CreatedApiKeyDto> {
    const role = body.role ?? 'member';
    if (ROLE_RANK[role] > ROLE_RANK[who.role]) {
      throw AppError.validation([{ field: 'role', message: `a ${who.role} key cannot issue ${role} keys` }]);
    }
    const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) {
      throw AppError.validation([{ field: 'expires_at', message: 'must be in the future' }]);
    }
    const input = { name: body.name ?? '', role, expiresAt };
    const created = body.project_id
      ? // Under the project's share lock: it cannot be deleted while the key is issued (a project with scoped keys is not deleted).
        await this.projects.within(who.accountId, body.project_id, noSuchProject('project_id'), (project) => {
          if (project.is_default) throw AppError.validation([{ field: 'project_id', message: DEFAULT_NOT_SCOPABLE }]);
          return this.keys.create(who.accountId, { ...input, projectId: project.id });
        })
      : await this.keys.create(who.accountId, { ...input, projectId: null });
    return { ...present(created), secret: created.secret };
  }

  @Delete(':id')
  @HttpCode(200)
  @Operation({ summary: 'Revoke an API key: it stops working at once', permission: 'keys:write', problems: ['not_found'] })
  @ApiOkResponse({ type: DeletedApiKeyDto })
  @NoBody()
  async revoke(@CurrentPrincipal() who: Principal, @Param('id') id: string): Promise<DeletedApiKeyDto> {
    if (!(await this.keys.revoke(who.accountId, id))) throw AppError.notFound('API key');
    return { id, object: 'api_key', deleted: true };
  }
}
