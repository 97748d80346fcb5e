import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { IsIntBetween, IsMetadata, IsNested, IsText, mapSchema, METADATA_LIMITS, Optional } from '../http/validators';
import { NOT_YET_SUPPORTED, PARLEY_STATUS } from '../http/openapi-decorators';
import { Equals, ValidateIf } from 'class-validator';

export const PROJECT_NAME_MAX = 200;
/** The highest ceiling accepted: far above any one deployment's capacity, well inside an int. */
export const PROJECT_CEILING_MAX = 1_000_000;

const METADATA_SCHEMA = mapSchema(METADATA_LIMITS, 'String keys to string values, returned on every read.');

export class ProjectBudgetDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: PROJECT_CEILING_MAX,
    description:
      'The most live calls (queued, ringing, in progress) the project may have. The call after that many is refused with 402 `plan_limit_reached` ' +
      '(`limit`: `max_live_calls`) however it is placed (API, workflow, web call, inbound call); a live call is never cut. Absent: no ceiling.',
  })
  @Optional()
  @IsIntBetween(1, PROJECT_CEILING_MAX)
  max_live_calls?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: PROJECT_CEILING_MAX,
    description: 'The most agents (not deleted) the project may hold; creating one more is refused with 402 `plan_limit_reached` (`limit`: `max_agents`). Absent: no ceiling.',
  })
  @Optional()
  @IsIntBetween(1, PROJECT_CEILING_MAX)
  max_agents?: number;

  @ApiPropertyOptional(
    Object.assign(
      {
        type: 'object' as const,
        additionalProperties: true,
        description:
          'A spending ceiling per period (`{amount, currency, period}`). Not supported yet: any value is refused with 422 `validation_error` until calls’ costs are summed per project.',
      },
      { [PARLEY_STATUS]: NOT_YET_SUPPORTED },
    ),
  )
  // Refused whatever it holds: a ceiling that would not be enforced is never accepted.
  @ValidateIf((_o: object, value: unknown) => value !== undefined)
  @Equals(undefined, { message: '$property is not supported yet: a spending ceiling is not enforced in this release' })
  spend?: unknown;
}

export class ProjectInputDto {
  @ApiProperty({ minLength: 1, maxLength: PROJECT_NAME_MAX, example: 'Support line' })
  @IsText(PROJECT_NAME_MAX, { min: 1 })
  name: string;

  @ApiPropertyOptional(METADATA_SCHEMA)
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ type: ProjectBudgetDto, description: 'The project’s ceilings; sending it replaces the whole block (a ceiling left out is removed).' })
  @Optional()
  @IsNested(() => ProjectBudgetDto)
  budget?: ProjectBudgetDto;
}

/** PATCH: every field optional (absent leaves it alone); `metadata` and `budget` are replaced whole. */
export class ProjectPatchDto extends PartialType(ProjectInputDto, { skipNullProperties: false }) {}

export class ProjectBudgetOutputDto {
  @ApiProperty({ type: 'integer', nullable: true, description: 'Live-call ceiling; null: none.' }) max_live_calls: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Agent ceiling; null: none.' }) max_agents: number | null;
}

export class ProjectDto {
  @ApiProperty({ example: 'prj_…' }) id: string;
  @ApiProperty({ enum: ['project'] }) object: 'project';
  @ApiProperty() name: string;
  @ApiProperty({ description: 'The account’s default project: what is created without naming a project belongs to it; it cannot be deleted.' }) is_default: boolean;
  @ApiProperty(METADATA_SCHEMA) metadata: Record<string, string>;
  @ApiProperty({ type: ProjectBudgetOutputDto }) budget: ProjectBudgetOutputDto;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class ProjectListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [ProjectDto] }) data: ProjectDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional() next_cursor?: string;
}

export class DeletedProjectDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['project'] }) object: 'project';
  @ApiProperty({ enum: [true] }) deleted: true;
}
