import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { IsIntBetween, IsMetadata, IsNested, IsOneOf, IsText, mapSchema, METADATA_LIMITS, Optional } from '../http/validators';
import { SPEND_PERIODS, SpendPeriod } from '@parley/contracts';

export const PROJECT_NAME_MAX = 200;
/** The highest ceiling accepted: far above any one deployment's capacity, well inside an int. */
export const PROJECT_CEILING_MAX = 1_000_000;
/** An exact decimal, as the price table's (the calls service refuses 0 and a currency calls are not priced in). */
const SPEND_AMOUNT = /^\d{1,12}(\.\d{1,10})?$/;

const METADATA_SCHEMA = mapSchema(METADATA_LIMITS, 'String keys to string values, returned on every read.');

export class ProjectSpendDto {
  @ApiProperty({ example: '250.00', pattern: SPEND_AMOUNT.source, description: 'Exact decimal amount above 0 (up to 12 digits and 10 decimals).' })
  @IsText(23, { min: 1, pattern: SPEND_AMOUNT, patternHint: 'a decimal amount such as "250.00"' })
  amount: string;

  @ApiProperty({ example: 'USD', pattern: '^[A-Z]{3}$', description: 'ISO 4217 code: the currency calls are priced in on this deployment (its price table); another is refused with 422.' })
  @IsText(3, { min: 3, pattern: /^[A-Z]{3}$/, patternHint: 'a three-letter currency code such as USD' })
  currency: string;

  @ApiProperty({ enum: SPEND_PERIODS, description: 'What the spend is counted over: the current UTC calendar day or month.' })
  @IsOneOf(SPEND_PERIODS)
  period: SpendPeriod;
}

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

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: PROJECT_CEILING_MAX,
    description:
      'The most webhook endpoints (not deleted; an agent’s own `webhook_url` endpoint not counted) the project may hold; creating one more is refused ' +
      'with 402 `plan_limit_reached` (`limit`: `max_webhook_endpoints`). Absent: no ceiling.',
  })
  @Optional()
  @IsIntBetween(1, PROJECT_CEILING_MAX)
  max_webhook_endpoints?: number;

  @ApiPropertyOptional({
    type: ProjectSpendDto,
    description:
      'A spending ceiling: new calls are refused with 402 `plan_limit_reached` (`limit`: `spend`) once the project’s calls created in the current ' +
      'period cost `amount` or more (their costs as recorded, live calls’ carrier minutes so far included). Absent: no ceiling.',
  })
  @Optional()
  @IsNested(() => ProjectSpendDto)
  spend?: ProjectSpendDto;
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
  @ApiProperty({ type: 'integer', nullable: true, description: 'Webhook endpoint ceiling; null: none.' }) max_webhook_endpoints: number | null;
  @ApiProperty({ type: ProjectSpendDto, nullable: true, description: 'Spending ceiling; null: none.' }) spend: ProjectSpendDto | null;
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
