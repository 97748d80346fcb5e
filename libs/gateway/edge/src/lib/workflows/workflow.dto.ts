import {
  type CallingWindow,
  RECIPIENT_STATES,
  type RecipientInput,
  type RecipientVariable,
  RETRYABLE_OUTCOMES,
  type RetryableOutcome,
  type RetryRule,
  RUN_STATUSES,
  type RunCounts,
  VARIABLE_TYPES,
  WEEKDAYS,
  type Weekday,
  type WorkflowSpec,
} from '@parley/contracts';
import { ApiProperty, ApiPropertyOptional, IntersectionType, OmitType, PartialType, PickType } from '@nestjs/swagger';
import { isWellFormedId } from '@parley/persistence';
import { Matches } from 'class-validator';
import { SuccessDto } from '../agents/success.dto';
import {
  IsFlag,
  IsIntBetween,
  IsMetadata,
  IsNested,
  IsNestedList,
  IsOneOf,
  IsOneOfList,
  IsStringMap,
  IsText,
  IsTextList,
  MapLimits,
  mapSchema,
  METADATA_LIMITS,
  Optional,
  Satisfies,
  textListSchema,
} from '../http/validators';

/*
 * The workflow model at the gateway: each class implements the contract's type (@parley/contracts, workflows.ts), so
 * the compiler proves they agree, and adds what is HTTP's: validation and documentation. Bodies are checked for SHAPE
 * only (types, enums, formats, ranges, lengths, unknown fields by path); rules relating fields to each other or to the
 * account (the agent exists, end after start, the time zone is known, concurrency within the account's ceiling) belong
 * to the workflows service, which answers them as 422 `validation_error` with the same problem shape.
 */

export const WORKFLOW_NAME_MAX = 200;
export const WORKFLOW_DESCRIPTION_MAX = 2000;
export const CONCURRENCY_MAX = 1000;
export const RETRIES_MAX = 10;
export const WAIT_SECONDS_MIN = 60;
export const WAIT_SECONDS_MAX = 604_800;
/** Recipients one request may add (inline or CSV rows). */
export const RECIPIENTS_PER_PAGE = 1000;
export const HOLIDAYS_MAX = 366;
export const RECIPIENT_VARIABLES_MAX = 100;
const TIMEZONE_MAX = 64;
const VARIABLE_NAME_MAX = 40;
/**
 * A recipient's fields are bounded loosely here: a number the service cannot call, a zone it does not know and
 * variables past its limits suppress that recipient (with the reason) rather than refuse the page.
 */
const RECIPIENT_TEXT_MAX = 200;

/** `HH:MM`, 24 h. */
const CLOCK = /^([01]\d|2[0-3]):[0-5]\d$/;
/** `YYYY-MM-DD`. */
const DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
/** E.164: `+`, then up to 15 digits. */
const E164 = /^\+[1-9]\d{1,14}$/;
/** A recipient variable's name: letters, digits, underscores, not starting with a digit. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** RFC 3339 date-time with a four-digit year (as the calls list filters read it). */
export const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const VARIABLES: MapLimits = { maxEntries: 1000, keyMaxLength: RECIPIENT_TEXT_MAX, valueMaxLength: 10_000 };

const metadataSchema = mapSchema(METADATA_LIMITS, 'String keys to string values, returned on read.');
const variablesSchema = mapSchema(
  VARIABLES,
  "Values for the agent's `{{variables}}` on this recipient's calls. More than 50, a value over 500 characters, a missing required " +
    'variable or a value not of its declared type suppresses the recipient (`invalid_variables`).',
);

const isTimeZone = (value: unknown): boolean => {
  if (typeof value !== 'string' || !value) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
};

/** An RFC 3339 date-time naming a day the calendar has (Date.parse alone takes February 30th). */
export function isRfc3339Time(value: unknown): boolean {
  if (typeof value !== 'string' || !RFC3339.test(value) || Number.isNaN(Date.parse(value))) return false;
  const [y, m, d] = value.slice(0, 10).split('-').map(Number);
  return m >= 1 && m <= 12 && d >= 1 && new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d;
}

// ---------------------------------------------------------------------------------------------------------------
// Workflow
// ---------------------------------------------------------------------------------------------------------------

export class CallingWindowDto implements CallingWindow {
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...WEEKDAYS] },
    maxItems: WEEKDAYS.length,
    uniqueItems: true,
    default: ['mon', 'tue', 'wed', 'thu', 'fri'],
    description: "Days a recipient may be called, in the recipient's time zone.",
  })
  @Optional()
  @IsOneOfList(WEEKDAYS)
  days?: Weekday[];

  @ApiPropertyOptional({ pattern: CLOCK.source, default: '09:00', example: '09:00', description: 'Local opening time, `HH:MM` (24 h).' })
  @Optional()
  @IsText(5, { pattern: CLOCK, patternHint: 'a time of day HH:MM (24 h)' })
  start?: string;

  @ApiPropertyOptional({
    pattern: CLOCK.source,
    default: '17:00',
    example: '17:00',
    description: 'Local closing time, `HH:MM` (24 h), after `start`. No call starts at or after it.',
  })
  @Optional()
  @IsText(5, { pattern: CLOCK, patternHint: 'a time of day HH:MM (24 h)' })
  end?: string;

  @ApiPropertyOptional({
    ...textListSchema({ maxItems: HOLIDAYS_MAX, maxLength: 10 }, 'Local dates (`YYYY-MM-DD`) on which nobody is called.'),
    example: ['2026-12-25'],
  })
  @Optional()
  @IsTextList({ maxItems: HOLIDAYS_MAX, maxLength: 10 })
  @Matches(DATE, { each: true, message: '$property items must each be a date YYYY-MM-DD' })
  holidays?: string[];
}

export class RetryRuleDto implements RetryRule {
  @ApiProperty({ type: 'integer', minimum: 0, maximum: RETRIES_MAX, example: 2, description: 'Further attempts after this outcome.' })
  @IsIntBetween(0, RETRIES_MAX)
  retries: number;

  @ApiProperty({
    type: 'integer',
    minimum: WAIT_SECONDS_MIN,
    maximum: WAIT_SECONDS_MAX,
    example: 3600,
    description: 'Seconds from the end of the call to the next attempt; the calling window still applies.',
  })
  @IsIntBetween(WAIT_SECONDS_MIN, WAIT_SECONDS_MAX)
  wait_seconds: number;
}

const RETRY_DESCRIPTION = (outcome: string) => `When a call ends ${outcome}. Absent: not retried.`;

export class RetryPolicyDto implements Partial<Record<RetryableOutcome, RetryRule>> {
  @ApiPropertyOptional({ type: RetryRuleDto, description: RETRY_DESCRIPTION('busy') })
  @Optional()
  @IsNested(() => RetryRuleDto)
  busy?: RetryRuleDto;

  @ApiPropertyOptional({ type: RetryRuleDto, description: RETRY_DESCRIPTION('unanswered') })
  @Optional()
  @IsNested(() => RetryRuleDto)
  no_answer?: RetryRuleDto;

  @ApiPropertyOptional({ type: RetryRuleDto, description: RETRY_DESCRIPTION('on an answering machine') })
  @Optional()
  @IsNested(() => RetryRuleDto)
  voicemail?: RetryRuleDto;

  @ApiPropertyOptional({ type: RetryRuleDto, description: RETRY_DESCRIPTION('on a carrier or media failure') })
  @Optional()
  @IsNested(() => RetryRuleDto)
  carrier_error?: RetryRuleDto;
}

export class RecipientVariableDto implements RecipientVariable {
  @ApiProperty({ minLength: 1, maxLength: VARIABLE_NAME_MAX, pattern: IDENTIFIER.source, example: 'first_name', description: 'The variable, as `{{name}}` in the agent.' })
  @IsText(VARIABLE_NAME_MAX, { min: 1, pattern: IDENTIFIER, patternHint: 'letters, digits and underscores, not starting with a digit' })
  name: string;

  @ApiPropertyOptional({ enum: VARIABLE_TYPES, default: 'string', description: "How the recipient's value is read." })
  @Optional()
  @IsOneOf(VARIABLE_TYPES)
  type?: RecipientVariable['type'];

  @ApiPropertyOptional({ default: false, description: 'A recipient without it is suppressed (`invalid_variables`).' })
  @Optional()
  @IsFlag()
  required?: boolean;
}

export class WorkflowInputDto implements WorkflowSpec {
  @ApiProperty({ minLength: 1, maxLength: WORKFLOW_NAME_MAX, example: 'Appointment reminders' })
  @IsText(WORKFLOW_NAME_MAX, { min: 1 })
  name: string;

  @ApiPropertyOptional({ maxLength: WORKFLOW_DESCRIPTION_MAX, example: 'Reminds patients of tomorrow’s appointment.' })
  @Optional()
  @IsText(WORKFLOW_DESCRIPTION_MAX)
  description?: string;

  @ApiProperty({ example: 'agt_4fT9aQ2LmZ8xV1cN0bR7sD', description: 'The agent that places the calls (`agt_…`).' })
  @IsText(200, { min: 1 })
  @Satisfies('isAgentId', (v) => typeof v === 'string' && isWellFormedId('agt', v), '$property must be an agent id (agt_…)')
  agent_id: string;

  @ApiPropertyOptional({ pattern: E164.source, example: '+15557654321', description: "Caller id, E.164. Absent: the deployment's." })
  @Optional()
  @IsText(16, { pattern: E164, patternHint: 'an E.164 number such as +15557654321' })
  from?: string;

  @ApiPropertyOptional({ maxLength: TIMEZONE_MAX, default: 'UTC', example: 'America/New_York', description: 'IANA time zone of recipients that name none.' })
  @Optional()
  @IsText(TIMEZONE_MAX, { min: 1 })
  @Satisfies('isTimeZone', isTimeZone, '$property must be an IANA time zone such as Europe/Paris')
  timezone?: string;

  @ApiPropertyOptional({ type: CallingWindowDto, description: "When recipients may be called, in each recipient's time zone." })
  @Optional()
  @IsNested(() => CallingWindowDto)
  calling_window?: CallingWindowDto;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: CONCURRENCY_MAX,
    default: 5,
    description: "Calls of one run live at once; never above the account's live-call ceiling less the room kept for inbound calls.",
  })
  @Optional()
  @IsIntBetween(1, CONCURRENCY_MAX)
  concurrency?: number;

  @ApiPropertyOptional({ type: RetryPolicyDto, description: `Retries by outcome (${RETRYABLE_OUTCOMES.join(', ')}). Absent: no retries.` })
  @Optional()
  @IsNested(() => RetryPolicyDto)
  retry?: RetryPolicyDto;

  @ApiPropertyOptional({
    type: [RecipientVariableDto],
    maxItems: RECIPIENT_VARIABLES_MAX,
    description: 'The variables each recipient carries (the recipient schema).',
  })
  @Optional()
  @IsNestedList(() => RecipientVariableDto, { maxItems: RECIPIENT_VARIABLES_MAX })
  recipient_variables?: RecipientVariableDto[];

  @ApiPropertyOptional({
    type: SuccessDto,
    description: "What counts as a successful call; with `extracted_field`, the recipient's outcome waits for the call's analysis.",
  })
  @Optional()
  @IsNested(() => SuccessDto)
  success?: SuccessDto;

  @ApiPropertyOptional({ ...metadataSchema, example: { team: 'clinic' } })
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

/**
 * PATCH: every field optional; scalars merge, blocks and lists replace whole. `null` clears an optional field (back to
 * its default); `name` and `agent_id` cannot be cleared.
 */
export class WorkflowPatchDto
  extends IntersectionType(
    PartialType(PickType(WorkflowInputDto, ['name', 'agent_id'] as const), { skipNullProperties: false }),
    PartialType(OmitType(WorkflowInputDto, ['name', 'agent_id'] as const)),
  )
  implements Partial<Record<keyof WorkflowSpec, unknown>> {}

export class WorkflowDto extends WorkflowInputDto {
  @ApiProperty({ example: 'wf_4fT9aQ2LmZ8xV1cN0bR7sD' }) id: string;
  @ApiProperty({ enum: ['workflow'] }) object: 'workflow';
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) updated_at: string;
}

export class WorkflowListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [WorkflowDto] }) data: WorkflowDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}

export class DeletedWorkflowDto {
  @ApiProperty({ example: 'wf_4fT9aQ2LmZ8xV1cN0bR7sD' }) id: string;
  @ApiProperty({ enum: ['workflow'] }) object: 'workflow';
  @ApiProperty({ enum: [true] }) deleted: true;
}

// ---------------------------------------------------------------------------------------------------------------
// Runs and recipients
// ---------------------------------------------------------------------------------------------------------------

export class RecipientInputDto implements RecipientInput {
  @ApiProperty({
    minLength: 1,
    maxLength: RECIPIENT_TEXT_MAX,
    example: '+15551234567',
    description: 'The number to call, E.164. An invalid number is suppressed (`invalid_number`), not refused.',
  })
  @IsText(RECIPIENT_TEXT_MAX, { min: 1 })
  to: string;

  @ApiPropertyOptional({
    maxLength: RECIPIENT_TEXT_MAX,
    example: 'Europe/Paris',
    description: "IANA time zone; absent: the workflow's. An unknown zone is suppressed (`invalid_timezone`), not refused.",
  })
  @Optional()
  @IsText(RECIPIENT_TEXT_MAX, { min: 1 })
  timezone?: string;

  @ApiPropertyOptional({ ...variablesSchema, example: { first_name: 'Ada' } })
  @Optional()
  @IsStringMap(VARIABLES)
  variables?: Record<string, string>;

  @ApiPropertyOptional({ ...metadataSchema, example: { crm_id: '42' } })
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

const RECIPIENTS_DESCRIPTION = `At most ${RECIPIENTS_PER_PAGE} per request; give \`recipients\` or \`recipients_csv\`, not both.`;
const CSV_DESCRIPTION =
  'The recipients as CSV text: a header row naming `to`, optionally `timezone`, and the recipient variables (every ' +
  `other column); then one row per recipient, at most ${RECIPIENTS_PER_PAGE}. RFC 4180 quoting.`;

export class StartRunDto {
  @ApiPropertyOptional({ type: [RecipientInputDto], maxItems: RECIPIENTS_PER_PAGE, description: RECIPIENTS_DESCRIPTION })
  @Optional()
  @IsNestedList(() => RecipientInputDto, { maxItems: RECIPIENTS_PER_PAGE })
  recipients?: RecipientInputDto[];

  @ApiPropertyOptional({ example: 'to,timezone,first_name\n+15551234567,America/New_York,Ada\n', description: CSV_DESCRIPTION })
  @Optional()
  @IsText(Number.MAX_SAFE_INTEGER, { min: 1 })
  recipients_csv?: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2026-01-06T09:00:00Z', description: 'When dialling may begin (RFC 3339). Absent: now.' })
  @Optional()
  @IsText(40, { pattern: RFC3339, patternHint: 'an RFC 3339 date-time' })
  @Satisfies('isTime', isRfc3339Time, '$property must be an RFC 3339 date-time')
  start_at?: string;

  @ApiPropertyOptional({
    default: true,
    description:
      'False: more pages of recipients follow through `POST /v1/workflows/{id}/runs/{run_id}/recipients` (the last says ' +
      '`complete`); the run cannot complete before. Only then may this request carry no recipients.',
  })
  @Optional()
  @IsFlag()
  recipients_complete?: boolean;

  @ApiPropertyOptional({ ...metadataSchema, example: { campaign: 'january' } })
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

export class AddRecipientsDto {
  @ApiPropertyOptional({ type: [RecipientInputDto], maxItems: RECIPIENTS_PER_PAGE, description: RECIPIENTS_DESCRIPTION })
  @Optional()
  @IsNestedList(() => RecipientInputDto, { maxItems: RECIPIENTS_PER_PAGE })
  recipients?: RecipientInputDto[];

  @ApiPropertyOptional({ example: 'to,first_name\n+15551234567,Ada\n', description: CSV_DESCRIPTION })
  @Optional()
  @IsText(Number.MAX_SAFE_INTEGER, { min: 1 })
  recipients_csv?: string;

  @ApiPropertyOptional({
    default: false,
    description: 'This is the last page: the run may complete once its recipients are final. Only then may the request carry no recipients.',
  })
  @Optional()
  @IsFlag()
  complete?: boolean;
}

export class RunCountsDto implements RunCounts {
  @ApiProperty({ type: 'integer', example: 120, description: 'Recipients taken, suppressed ones included.' }) total: number;
  @ApiProperty({ type: 'integer', example: 80, description: 'Waiting for their turn (start time, calling window, a free line).' }) pending: number;
  @ApiProperty({ type: 'integer', example: 5, description: 'Being called (or their call being analysed).' }) in_progress: number;
  @ApiProperty({ type: 'integer', example: 3, description: 'Waiting to be called again.' }) retrying: number;
  @ApiProperty({ type: 'integer', example: 25 }) succeeded: number;
  @ApiProperty({ type: 'integer', example: 4 }) failed: number;
  @ApiProperty({ type: 'integer', example: 3, description: 'Never called: duplicates, invalid numbers, the do-not-call list, missing variables.' })
  suppressed: number;
  @ApiProperty({ type: 'integer', example: 0 }) cancelled: number;
}

export class RunDto {
  @ApiProperty({ example: 'wfr_4fT9aQ2LmZ8xV1cN0bR7sD' }) id: string;
  @ApiProperty({ enum: ['workflow_run'] }) object: 'workflow_run';
  @ApiProperty({ example: 'wf_4fT9aQ2LmZ8xV1cN0bR7sD' }) workflow_id: string;
  @ApiProperty({
    enum: RUN_STATUSES,
    example: 'running',
    description: '`scheduled` until `start_at`, `running`, `paused`; then `completed` (every recipient final, the last page given) or `cancelled`.',
  })
  status: string;
  @ApiProperty({ format: 'date-time', example: '2026-01-06T09:00:00.000Z', description: 'When dialling may begin.' }) start_at: string;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'When it started running; null until then.' }) started_at: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'When it completed or was cancelled; null until then.' })
  completed_at: string | null;
  @ApiProperty({ description: 'False while more pages of recipients are expected.' }) recipients_complete: boolean;
  @ApiProperty({ type: RunCountsDto }) counts: RunCountsDto;
  @ApiProperty({ ...metadataSchema, example: { campaign: 'january' } }) metadata: Record<string, string>;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) updated_at: string;
}

export class PageOutcomeDto {
  @ApiProperty({ type: 'integer', example: 998, description: 'Recipients of this request taken.' }) added: number;
  @ApiProperty({
    type: 'integer',
    example: 2,
    description: 'Recipients of this request suppressed as they arrived (each listed with its reason among the recipients).',
  })
  suppressed: number;
}

export class RunPageDto extends RunDto {
  @ApiProperty({ type: PageOutcomeDto, description: 'What this request did with its recipients.' }) page: PageOutcomeDto;
}

export class RunListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [RunDto] }) data: RunDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}

export const RECIPIENT_OUTCOMES = [...RETRYABLE_OUTCOMES, 'other'] as const;

export class RecipientDto {
  @ApiProperty({ example: 'wfrc_4fT9aQ2LmZ8xV1cN0bR7sD' }) id: string;
  @ApiProperty({ enum: ['workflow_recipient'] }) object: 'workflow_recipient';
  @ApiProperty({ example: 'wfr_4fT9aQ2LmZ8xV1cN0bR7sD' }) run_id: string;
  @ApiProperty({ example: '+15551234567' }) to: string;
  @ApiProperty({ example: 'America/New_York', description: 'The time zone its calling window is read in.' }) timezone: string;
  @ApiProperty({ ...variablesSchema, example: { first_name: 'Ada' } }) variables: Record<string, string>;
  @ApiProperty({ ...metadataSchema, example: { crm_id: '42' } }) metadata: Record<string, string>;
  @ApiProperty({ enum: RECIPIENT_STATES, example: 'succeeded' }) state: string;
  @ApiProperty({ type: 'integer', example: 2, description: 'Calls placed so far.' }) attempts: number;
  @ApiProperty({ type: 'string', enum: RECIPIENT_OUTCOMES, nullable: true, description: "The last call's outcome; null before any call ended." })
  last_outcome: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Why it was suppressed or failed (`do_not_call`, `invalid_number`, `duplicate`, …); null otherwise.' })
  reason: string | null;
  @ApiProperty({ type: [String], example: ['call_4fT9aQ2LmZ8xV1cN0bR7sD'], description: 'Every call placed for it, oldest first.' }) call_ids: string[];
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'When it is next due (pending or retrying); null otherwise.' })
  next_attempt_at: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) updated_at: string;
}

export class RecipientListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [RecipientDto] }) data: RecipientDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}
