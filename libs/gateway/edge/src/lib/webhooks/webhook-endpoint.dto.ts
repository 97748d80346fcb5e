import { ApiProperty, ApiPropertyOptional, OmitType, PartialType } from '@nestjs/swagger';
import { IsFlag, IsIntBetween, IsMetadata, IsText, mapSchema, METADATA_LIMITS, Optional } from '../http/validators';
import { EVENTS_LIMITS, IsEventFilterList, WEBHOOK_EVENT_FILTERS } from './event-filter';

export const WEBHOOK_URL_MAX = 2000;
export const WEBHOOK_DESCRIPTION_MAX = 2000;
/** Longest overlap of a rotated secret: one week. */
export const ROTATION_OVERLAP_MAX = 604_800;
export const ROTATION_OVERLAP_DEFAULT = 86_400;

/** What an endpoint created or declared without these fields gets. */
export const WEBHOOK_ENDPOINT_DEFAULTS = { events: ['*'], description: '', enabled: true, metadata: {} as Record<string, string> };

const METADATA_SCHEMA = mapSchema(METADATA_LIMITS, 'String keys to string values, returned on every read.');

const EVENTS_DESCRIPTION =
  'Event types this endpoint receives: an event type, `*` (all), or a family such as `call.*`. ' +
  `Accepted entries: ${WEBHOOK_EVENT_FILTERS.map((f) => `\`${f}\``).join(', ')}.`;

export class WebhookEndpointInputDto {
  @ApiProperty({
    description:
      'Where deliveries are POSTed. Must be https (plain http only to hosts a development deployment lists in ' +
      'WEBHOOK_ALLOW_HTTP_HOSTS) and resolve to a public address (addresses the deployment allow-lists excepted). ' +
      'Several endpoints may share a URL.',
    minLength: 1,
    maxLength: WEBHOOK_URL_MAX,
    example: 'https://example.com/hooks/parley',
  })
  @IsText(WEBHOOK_URL_MAX, { min: 1 })
  url: string;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...WEBHOOK_EVENT_FILTERS] },
    minItems: EVENTS_LIMITS.minItems,
    maxItems: EVENTS_LIMITS.maxItems,
    uniqueItems: true,
    default: WEBHOOK_ENDPOINT_DEFAULTS.events,
    description: EVENTS_DESCRIPTION,
  })
  @Optional()
  @IsEventFilterList()
  events?: string[];

  @ApiPropertyOptional({ description: 'Free note.', maxLength: WEBHOOK_DESCRIPTION_MAX, default: '' })
  @Optional()
  @IsText(WEBHOOK_DESCRIPTION_MAX)
  description?: string;

  @ApiPropertyOptional({ default: true, description: 'Whether deliveries are sent; a disabled endpoint keeps its secret.' })
  @Optional()
  @IsFlag()
  enabled?: boolean;

  @ApiPropertyOptional(METADATA_SCHEMA)
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;

  @ApiPropertyOptional({
    example: 'prj_…',
    description:
      'Create only: the project the endpoint belongs to (fixed once created; PATCH refuses it); absent: the account’s default project. ' +
      'An endpoint of the default project receives the whole account’s events, one of another project only that project’s (docs/projects.md). ' +
      'Its `max_webhook_endpoints` ceiling applies (402 `plan_limit_reached`).',
  })
  @Optional()
  @IsText(30, { pattern: /^prj_[0-9A-Za-z]{22}$/, patternHint: 'a project id (prj_…)' })
  project_id?: string;
}

/** PATCH: every field optional (absent leaves it alone; `null` is refused); `events` and `metadata` are replaced whole. */
export class WebhookEndpointPatchDto extends PartialType(OmitType(WebhookEndpointInputDto, ['project_id'] as const), { skipNullProperties: false }) {}

export class WebhookEndpointDto {
  @ApiProperty({ example: 'whep_4fT9…' }) id: string;
  @ApiProperty({ enum: ['webhook_endpoint'] }) object: 'webhook_endpoint';
  @ApiProperty({ example: 'prj_…', description: 'The project the endpoint belongs to (docs/projects.md).' }) project_id: string;
  @ApiProperty({ description: 'Where deliveries are POSTed.' }) url: string;
  @ApiProperty({ type: [String], description: 'Event types, `*` or families this endpoint receives.' }) events: string[];
  @ApiProperty({ description: 'Free note.' }) description: string;
  @ApiProperty({ description: 'Whether deliveries are sent.' }) enabled: boolean;
  @ApiProperty(METADATA_SCHEMA) metadata: Record<string, string>;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'Why the endpoint was disabled automatically (after 20 consecutive failed deliveries); null otherwise.',
  })
  disabled_reason: string | null;

  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class CreatedWebhookEndpointDto extends WebhookEndpointDto {
  @ApiProperty({
    description: 'The signing secret (whsec_…); returned only here, redacted on every later read. Keep it.',
    example: 'whsec_Qm1…',
  })
  secret: string;
}

export class WebhookEndpointListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [WebhookEndpointDto] }) data: WebhookEndpointDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}

export class DeletedWebhookEndpointDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['webhook_endpoint'] }) object: 'webhook_endpoint';
  @ApiProperty({ enum: [true] }) deleted: true;
}

export class RotateSecretInputDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: ROTATION_OVERLAP_MAX,
    default: ROTATION_OVERLAP_DEFAULT,
    description: 'Seconds the current secret keeps signing beside the new one (0 retires it at once; at most a week).',
  })
  @Optional()
  @IsIntBetween(0, ROTATION_OVERLAP_MAX)
  overlap_seconds?: number;
}

export class RotatedSecretDto {
  @ApiProperty({ enum: ['webhook_endpoint_secret'] }) object: 'webhook_endpoint_secret';
  @ApiProperty() endpoint_id: string;
  @ApiProperty({ description: 'The new signing secret (whsec_…); shown only here.' }) secret: string;
  @ApiProperty({ format: 'date-time', description: 'Until when the previous secret also signs deliveries.' })
  previous_secret_expires_at: string;
}

export const WEBHOOK_DELIVERY_OUTCOMES = ['succeeded', 'failed', 'aborted', 'cancelled', 'skipped'] as const;
export type WebhookDeliveryOutcome = (typeof WEBHOOK_DELIVERY_OUTCOMES)[number];

export class WebhookDeliveryDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['webhook_delivery'] }) object: 'webhook_delivery';
  @ApiProperty({ description: 'The event delivered (evt_…); the same on every attempt.' }) event_id: string;
  @ApiProperty() event_type: string;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: '1 on the first try, higher on retries; for a cancelled or skipped delivery, the attempts made before it ended (0 when none).',
  })
  attempt: number;

  @ApiProperty({ type: 'integer', nullable: true, description: 'HTTP status received; null when no response arrived.' })
  status_code: number | null;

  @ApiProperty({ type: 'string', nullable: true, description: 'What went wrong; null on success.' })
  error: string | null;

  @ApiProperty({ type: 'integer', description: 'How long the attempt took.' }) duration_ms: number;
  @ApiProperty({ description: 'True when the endpoint answered 2xx in time.' }) succeeded: boolean;
  @ApiProperty({ format: 'date-time' }) created_at: string;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: 'When the next attempt is due; null when none will follow.' })
  next_attempt_at: string | null;

  @ApiProperty({
    description: 'True for a synthetic delivery sent by POST …/test (never retried, never counted towards automatic disabling).',
  })
  test: boolean;

  @ApiProperty({
    enum: WEBHOOK_DELIVERY_OUTCOMES,
    description:
      '`succeeded` or `failed`: an attempt. `aborted`: an attempt abandoned in flight because the endpoint was disabled or deleted ' +
      '(never counted towards automatic disabling). `cancelled`: a delivery that was pending when the endpoint was disabled or deleted; ' +
      'no attempt follows. `skipped`: the event occurred while the endpoint was disabled; nothing was sent.',
  })
  outcome: WebhookDeliveryOutcome;
}

export class WebhookDeliveryListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [WebhookDeliveryDto] }) data: WebhookDeliveryDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}

export class WebhookTestResultDto {
  @ApiProperty({ description: 'True when the endpoint answered 2xx in time.' }) delivered: boolean;
  @ApiProperty({ type: 'integer', description: 'HTTP status received; 0 when no response arrived.' }) response_code: number;
  @ApiPropertyOptional({ description: 'What went wrong; present only when not delivered.' }) error?: string;
}
