import {
  AGENT_MODES,
  type AgentInput,
  type AgentDocument,
  type ApiKeyHint,
  type ApiKeyInput,
  AUTONOMY_LEVELS,
  type Capabilities,
  CAPTURE_TYPES,
  CONDITION_OPERATORS,
  type ConversationSettings,
  EDGE_TYPES,
  type EffectiveConfig,
  EXPRESSION_LOGIC,
  EXTRACTION_TYPES,
  type ExtractionField,
  type Flow,
  type FlowCondition,
  type FlowEdge,
  type FlowExpression,
  type FlowNode,
  type FlowRouting,
  HTTP_METHODS,
  INHERITABLE_FIELDS,
  type InheritableField,
  LANGUAGE_DETECTION,
  type LanguageEntry,
  NODE_TYPES,
  PARAMETER_LOCATIONS,
  PARAMETER_TYPES,
  type PostCall,
  type CsatSurveySettings,
  type ToolCalendar,
  type ToolConfigInput,
  type ToolConfigOutput,
  TOOL_KINDS,
  type ToolParameter,
  type ToolRequest,
  type ToolTransfer,
  VARIABLE_TYPES,
  VOICEMAIL_ACTIONS,
} from '@parley/contracts';
import { ApiProperty, ApiPropertyOptional, ApiPropertyOptions, ApiSchema, OmitType, PartialType, PickType } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import {
  IsFlag,
  IsIntBetween,
  IsMetadata,
  IsNested,
  IsNestedList,
  IsNumberBetween,
  IsOneOf,
  IsOneOfList,
  IsStringMap,
  IsText,
  IsTextList,
  IsUrlOrEmpty,
  IsZeroOrBetween,
  MapLimits,
  mapSchema,
  textListSchema,
  METADATA_LIMITS,
  Optional,
} from '../http/validators';
import { notYetActedOn } from '../http/openapi-decorators';
import { SuccessDto } from './success.dto';

/*
 * The agent model at the gateway: each class implements the contract's type (@parley/contracts), so the compiler
 * proves they agree, and adds what is HTTP's: validation and documentation. Request bodies are checked for SHAPE only
 * (types, enums, ranges, lengths, nested blocks and unknown fields by path). Rules that relate fields to each other
 * or to the deployment (silence hangup longer than the prompt, flow graph integrity, unique language codes, voice_id
 * on later languages, configured provider names, tool name collisions, placeholders, kind-vs-block) belong to the
 * agents service. Fields calls do not act on yet are marked with notYetActedOn.
 */

export { INHERITABLE_FIELDS, type InheritableField };

export const TURN_ROLES = ['user', 'assistant'] as const;

/** Ids of other objects, model names, function names. */
const REF = 200;
const PROVIDER = 50;
const LANGUAGE_CODE = 64;
const NODE_ID = 100;
const TOOL_NAME = /^[A-Za-z0-9_-]+$/;
const TOOL_NAME_HINT = 'letters, digits, _ and - only';

const PER_PROVIDER: MapLimits = { maxEntries: 50, keyMaxLength: PROVIDER, valueMaxLength: REF };
const PER_LANGUAGE_LINE: MapLimits = { maxEntries: 50, keyMaxLength: LANGUAGE_CODE, valueMaxLength: 2000 };
const PER_LANGUAGE_MESSAGE: MapLimits = { maxEntries: 50, keyMaxLength: LANGUAGE_CODE, valueMaxLength: 500 };
const HEADERS: MapLimits = { maxEntries: 50, keyMaxLength: 200, valueMaxLength: 4000 };
const VARIABLES: MapLimits = { maxEntries: 200, keyMaxLength: 200, values: VARIABLE_TYPES };
const CAPTURES: MapLimits = { maxEntries: 50, keyMaxLength: 64, values: CAPTURE_TYPES };

const metadataSchema = mapSchema(METADATA_LIMITS, 'String keys to string values, returned on read.');

/** OpenAPI for "any JSON value" (a combinator without `nullable` keeps @nestjs/swagger from adding a type). */
export const ANY_JSON: ApiPropertyOptions = {
  oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'array', items: {} }, { type: 'object' }, { type: 'null' }],
};

// ---------------------------------------------------------------------------------------------------------------
// Languages
// ---------------------------------------------------------------------------------------------------------------

export class LanguageEntryDto implements LanguageEntry {
  @ApiProperty({
    description:
      'BCP-47 tag or a language name; `hi`, `hi-IN`, `hi_IN` and a language name all normalize to the same region tag. ' +
      'One entry per language.',
    example: 'en-US',
    minLength: 1,
    maxLength: LANGUAGE_CODE,
  })
  @IsText(LANGUAGE_CODE, { min: 1 })
  code: string;

  @ApiPropertyOptional({ description: 'Spoken exactly as written when a call opens in this language.', maxLength: 2000 })
  @Optional()
  @IsText(2000)
  greeting?: string;

  @ApiPropertyOptional({
    description: 'Asked of a quiet caller. Empty: the built-in line where one exists, otherwise the model produces one short sentence.',
    maxLength: 500,
  })
  @Optional()
  @IsText(500)
  silence_prompt?: string;

  @ApiPropertyOptional({
    description: 'Recognizer tried first; read for the opening language; must be one the deployment configured.',
    maxLength: PROVIDER,
  })
  @Optional()
  @IsText(PROVIDER)
  stt_provider?: string;

  @ApiPropertyOptional({ description: 'Synthesizer tried first; must be one the deployment configured.', maxLength: PROVIDER })
  @Optional()
  @IsText(PROVIDER)
  tts_provider?: string;

  @ApiPropertyOptional({
    description:
      "Instructions while in this language; the only place instructions live. The first entry's is the agent's prompt; " +
      'empty on a later entry derives one from it plus an instruction to speak that language.',
    maxLength: 20000,
  })
  @Optional()
  @IsText(20000)
  system_prompt?: string;

  @ApiPropertyOptional({
    description:
      'Voice at the first-choice synthesizer. Required on every entry except the first, which may leave it empty for the ' +
      'deployment default.',
    maxLength: REF,
  })
  @Optional()
  @IsText(REF)
  voice_id?: string;

  @ApiPropertyOptional(
    mapSchema(
      PER_PROVIDER,
      'Voice per synthesizer, keyed by provider name; without an entry a fallback synthesizer uses its own default voice.',
    ),
  )
  @Optional()
  @IsStringMap(PER_PROVIDER)
  voices?: Record<string, string>;
}

// ---------------------------------------------------------------------------------------------------------------
// Behaviour blocks
// ---------------------------------------------------------------------------------------------------------------

export class CapabilitiesDto implements Capabilities {
  @ApiPropertyOptional({ description: 'Master switch over the functions in `tools`.' })
  @Optional()
  @IsFlag()
  call_functions?: boolean;

  @ApiPropertyOptional({ description: 'Offer the runtime-executed `end_call` tool.' })
  @Optional()
  @IsFlag()
  end_call?: boolean;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 10,
    default: 3,
    description: 'Tool-call-and-regenerate rounds per turn. 1-10; 0 means 3.',
  })
  @Optional()
  @IsZeroOrBetween(1, 10)
  max_tool_rounds?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 2000,
    description:
      'Knowledge lookup time budget within a turn, in milliseconds: each turn looks the caller’s latest words up in the agent’s knowledge bases ' +
      'while the turn starts, and the answer waits at most this long for the passages. 50-2000; 0 means the deployment setting ' +
      '(`KNOWLEDGE_RETRIEVAL_TIMEOUT_MS`, 250 ms by default). On timeout the turn answers without grounding and the miss is counted ' +
      '(`parley_engine_knowledge_lookups_total{outcome="timeout"}`).',
  })
  @Optional()
  @IsZeroOrBetween(50, 2000)
  retrieval_timeout_ms?: number;

  @ApiPropertyOptional({
    description:
      'On: each turn looks the caller’s latest words up in the agent’s knowledge bases (`knowledge_base_id` and `knowledge_base_ids`) within ' +
      '`retrieval_timeout_ms` and gives the passages found to the model, and the model is offered `search_knowledge_base` to search with its ' +
      'own query. Off: no lookup and no tool. (An `agentic` agent always searches.)',
  })
  @Optional()
  @IsFlag()
  search_knowledge?: boolean;

  @ApiPropertyOptional({ description: 'Offer `transfer_call` (executed against the call itself).' })
  @Optional()
  @IsFlag()
  transfer?: boolean;
}

export class ConversationDto implements ConversationSettings {
  @ApiPropertyOptional(
    textListSchema(
      { maxItems: 50, maxLength: 200 },
      'Extra phrases that interrupt the agent on their own; matched against the whole utterance.',
    ),
  )
  @Optional()
  @IsTextList({ maxItems: 50, maxLength: 200 })
  interrupt_phrases?: string[];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 10,
    default: 2,
    description:
      'Words the caller must say before the agent stops talking. 1-10; 0 means 2. ' +
      'A stop word or a caller who keeps talking interrupts regardless.',
  })
  @Optional()
  @IsZeroOrBetween(1, 10)
  interrupt_words?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 7200,
    description: 'Ends the call after a goodbye once this long, in seconds. 30-7200; 0 leaves it to the carrier limit.',
  })
  @Optional()
  @IsZeroOrBetween(30, 7200)
  max_call_seconds?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: -1,
    maximum: 300,
    default: 20,
    description: 'Quiet time before goodbye and hangup, in seconds. 5-300 and longer than `silence_prompt_seconds`; 0 means 20; -1 never.',
  })
  @Optional()
  @IsZeroOrBetween(5, 300, { never: true })
  silence_hangup_seconds?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: -1,
    maximum: 60,
    default: 8,
    description: 'Quiet time before asking if the caller is there, in seconds. 3-60; 0 means 8; -1 never.',
  })
  @Optional()
  @IsZeroOrBetween(3, 60, { never: true })
  silence_prompt_seconds?: number;

  @ApiPropertyOptional({
    enum: VOICEMAIL_ACTIONS,
    default: 'continue',
    description:
      'Outbound call when an answering machine is reported. `continue`: carry on, the record says voicemail. ' +
      '`hangup`: end at once, say nothing. `message`: say `voicemail_message`, then hang up.',
  })
  @Optional()
  @IsOneOf(VOICEMAIL_ACTIONS)
  voicemail?: (typeof VOICEMAIL_ACTIONS)[number];

  @ApiPropertyOptional({ description: 'Said before hanging up when `voicemail` is `message`; supports `{{variables}}`.', maxLength: 2000 })
  @Optional()
  @IsText(2000)
  voicemail_message?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Conversation flow
// ---------------------------------------------------------------------------------------------------------------

@ApiSchema({ name: 'FlowConditionDto' })
export class ConditionDto implements FlowCondition {
  @ApiProperty({ description: 'Dotted path into the call variables.', minLength: 1, maxLength: REF, example: 'caller.age' })
  @IsText(REF, { min: 1 })
  variable: string;

  @ApiProperty({ enum: CONDITION_OPERATORS, description: 'How `variable` is compared with `value`.' })
  @IsOneOf(CONDITION_OPERATORS)
  operator: (typeof CONDITION_OPERATORS)[number];

  @ApiPropertyOptional({ ...ANY_JSON, description: 'Any JSON value to compare with; unused by `exists` and `not_exists`.' })
  @Allow()
  value?: unknown;
}

@ApiSchema({ name: 'FlowExpressionDto' })
export class ExpressionDto implements FlowExpression {
  @ApiPropertyOptional({
    enum: EXPRESSION_LOGIC,
    default: 'and',
    description: 'Whether all conditions must hold (`and`) or any one (`or`).',
  })
  @Optional()
  @IsOneOf(EXPRESSION_LOGIC)
  logic?: (typeof EXPRESSION_LOGIC)[number];

  // At least one condition is required, but that is a flow rule: the agents service reports it with the flow's
  // other problems, all at once.
  @ApiPropertyOptional({ type: [ConditionDto], maxItems: 20, description: 'The conditions combined by `logic` (at least one).' })
  @Optional()
  @IsNestedList(() => ConditionDto, { maxItems: 20 })
  conditions?: ConditionDto[];
}

@ApiSchema({ name: 'FlowEdgeDto' })
export class EdgeDto implements FlowEdge {
  @ApiProperty({ description: 'Target node id.', minLength: 1, maxLength: NODE_ID })
  @IsText(NODE_ID, { min: 1 })
  to: string;

  @ApiPropertyOptional({
    enum: EDGE_TYPES,
    default: 'intent',
    description:
      "At each caller turn a node's edges are tried in this order: `expression` (by `priority`), then `intent` (one routing " +
      "model call decides from the caller's words), then `always` (the catch-all). `event` fires only when " +
      '`POST /v1/calls/{id}/events` injects the named event. A keypad agent accepts `expression` and `always` only.',
  })
  @Optional()
  @IsOneOf(EDGE_TYPES)
  type?: (typeof EDGE_TYPES)[number];

  @ApiPropertyOptional({ description: 'Condition sentence; read by the router on intent edges, a label elsewhere (and in transitions).', maxLength: 1000 })
  @Optional()
  @IsText(1000)
  when?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: -1_000_000,
    maximum: 1_000_000,
    description: 'Orders edges of the same type; lower fires first.',
  })
  @Optional()
  @IsIntBetween(-1_000_000, 1_000_000)
  priority?: number;

  @ApiPropertyOptional(
    mapSchema(
      CAPTURES,
      'Values extracted when an intent edge fires, name to JSON type; stored as call variables (as text: `2500`, `true`) and ' +
        'reported typed in the transition; all are required for the edge to fire (until then the node asks for what is missing).',
    ),
  )
  @Optional()
  @IsStringMap(CAPTURES)
  capture?: Record<string, (typeof CAPTURE_TYPES)[number]>;

  @ApiPropertyOptional({
    description:
      'Injected event an `event` edge waits for. An event injected before the flow reaches the node is kept and fires on arrival, once.',
    maxLength: 100,
  })
  @Optional()
  @IsText(100)
  event?: string;

  @ApiPropertyOptional({ type: ExpressionDto, description: 'What an `expression` edge evaluates.' })
  @Optional()
  @IsNested(() => ExpressionDto)
  expression?: ExpressionDto;
}

@ApiSchema({ name: 'FlowNodeDto' })
export class NodeDto implements FlowNode {
  @ApiProperty({ description: 'Unique node name.', minLength: 1, maxLength: NODE_ID, example: 'greet' })
  @IsText(NODE_ID, { min: 1 })
  id: string;

  @ApiPropertyOptional({
    enum: NODE_TYPES,
    default: 'llm',
    description:
      '`llm`: the model answers under the agent prompt plus the node prompt. `static`: says a fixed line with no model; a static ' +
      'node without edges ends the call (`completed`) once said. `router`: never speaks and moves on in the same turn. ' +
      'A keypad agent reads every node as a menu.',
  })
  @Optional()
  @IsOneOf(NODE_TYPES)
  type?: (typeof NODE_TYPES)[number];

  @ApiPropertyOptional({ description: 'Node purpose; read by the router as objective when there is no prompt.', maxLength: 2000 })
  @Optional()
  @IsText(2000)
  description?: string;

  @ApiPropertyOptional({ description: "Instructions appended to the agent's system prompt while on this node.", maxLength: 20000 })
  @Optional()
  @IsText(20000)
  prompt?: string;

  @ApiPropertyOptional({ description: 'Line a static node says exactly, with `{{variables}}` filled.', maxLength: 2000 })
  @Optional()
  @IsText(2000)
  say?: string;

  @ApiPropertyOptional(mapSchema(PER_LANGUAGE_LINE, 'The `say` line per language code.'))
  @Optional()
  @IsStringMap(PER_LANGUAGE_LINE)
  say_in?: Record<string, string>;

  @ApiPropertyOptional(mapSchema(PER_LANGUAGE_LINE, 'One example reply per language code, appended to the prompt.'))
  @Optional()
  @IsStringMap(PER_LANGUAGE_LINE)
  examples?: Record<string, string>;

  @ApiPropertyOptional({ description: 'Forces the model to call this tool on the node until it has run once per visit.', maxLength: REF })
  @Optional()
  @IsText(REF)
  tool?: string;

  @ApiPropertyOptional(
    textListSchema(
      { maxItems: 50, maxLength: REF },
      "Tools visible on the node. Absent: all of the agent's; empty: none (`record_opt_out` stays: an opt-out is honoured on every node).",
    ),
  )
  @Optional()
  @IsTextList({ maxItems: 50, maxLength: REF })
  tools?: string[];

  @ApiPropertyOptional(
    textListSchema(
      { maxItems: 20, maxLength: REF },
      "Knowledge bases searched on this node's turns, overriding the agent's (each must be one of the agent's). Absent: the agent's; " +
        'empty: no grounding on this node (no lookup, and `search_knowledge_base` is not offered).',
    ),
  )
  @Optional()
  @IsTextList({ maxItems: 20, maxLength: REF })
  knowledge_base_ids?: string[];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 300,
    default: 0,
    description:
      'Re-prompt after this much silence on the node, in seconds (a static node says its line again, an llm node asks again); ' +
      "0 never. The call's own silence prompt and hang-up keep counting.",
  })
  @Optional()
  @IsIntBetween(0, 300)
  repeat_after_silence_seconds?: number;

  @ApiPropertyOptional({ type: [EdgeDto], maxItems: 50, description: 'Outgoing edges.' })
  @Optional()
  @IsNestedList(() => EdgeDto, { maxItems: 50 })
  edges?: EdgeDto[];
}

@ApiSchema({ name: 'FlowRoutingDto' })
export class RoutingDto implements FlowRouting {
  @ApiPropertyOptional({ description: 'Model override for routing between intent edges.', maxLength: REF })
  @Optional()
  @IsText(REF)
  model?: string;

  @ApiPropertyOptional({ description: 'Replaces the built-in routing instructions.', maxLength: 5000 })
  @Optional()
  @IsText(5000)
  instructions?: string;
}

export class FlowDto implements Flow {
  @ApiPropertyOptional({ description: 'Id of the node a call opens on.', maxLength: NODE_ID })
  @Optional()
  @IsText(NODE_ID)
  start?: string;

  @ApiPropertyOptional({ type: [NodeDto], maxItems: 200, description: 'The nodes.' })
  @Optional()
  @IsNestedList(() => NodeDto, { maxItems: 200 })
  nodes?: NodeDto[];

  @ApiPropertyOptional({ type: RoutingDto, description: 'How the router chooses between intent edges (conversation agents only).' })
  @Optional()
  @IsNested(() => RoutingDto)
  routing?: RoutingDto;

  @ApiPropertyOptional(
    mapSchema(
      VARIABLES,
      'Declares the type of each variable an expression compares, keyed by dotted path; ' +
        'numeric variables must be declared or comparison is textual.',
    ),
  )
  @Optional()
  @IsStringMap(VARIABLES)
  variables?: Record<string, (typeof VARIABLE_TYPES)[number]>;
}

// ---------------------------------------------------------------------------------------------------------------
// Post-call analysis
// ---------------------------------------------------------------------------------------------------------------

export class ExtractionFieldDto implements ExtractionField {
  @ApiProperty({
    description: 'Storage key on the call: letters, digits, underscores; stable once live.',
    pattern: '^[A-Za-z0-9_]{1,64}$',
    example: 'callback_time',
  })
  @IsText(64, { min: 1, pattern: /^[A-Za-z0-9_]+$/, patternHint: 'letters, digits and underscores only' })
  name: string;

  @ApiProperty({
    description: 'What to look for; the only instruction given besides the transcript.',
    minLength: 1,
    maxLength: 1000,
  })
  @IsText(1000, { min: 1 })
  description: string;

  @ApiPropertyOptional({ enum: EXTRACTION_TYPES, default: 'string', description: 'Type of the extracted value.' })
  @Optional()
  @IsOneOf(EXTRACTION_TYPES)
  type?: (typeof EXTRACTION_TYPES)[number];

  @ApiPropertyOptional(
    textListSchema(
      { maxItems: 50, maxLength: REF },
      'Allowed values of an `enum` field; an `unclear` option is advised over leaving it empty.',
    ),
  )
  @Optional()
  @IsTextList({ maxItems: 50, maxLength: REF })
  options?: string[];
}

export class PostCallDto implements PostCall {
  @ApiPropertyOptional({
    default: true,
    description: 'Write a short neutral summary to the call record. On unless the block is sent with it off.',
  })
  @Optional()
  @IsFlag()
  summary?: boolean;

  @ApiPropertyOptional({ description: "Model for the post-call pass; empty uses the deployment's post-call default.", maxLength: REF })
  @Optional()
  @IsText(REF)
  model?: string;

  @ApiPropertyOptional({
    type: [ExtractionFieldDto],
    maxItems: 40,
    description: 'Fields filled from the transcript and written onto the call under `name`.',
  })
  @Optional()
  @IsNestedList(() => ExtractionFieldDto, { maxItems: 40 })
  extraction?: ExtractionFieldDto[];

  @ApiPropertyOptional({
    type: SuccessDto,
    description:
      "What counts as a successful call, as a workflow's `success`: the call's `successful` (and `call.analysed`'s) is decided at its end " +
      'from the end reason, or by the analysis when `extracted_field` (one of `extraction`) decides. Absent: the agent defines none and ' +
      'its calls say `successful: null`.',
  })
  @Optional()
  @IsNested(() => SuccessDto)
  success?: SuccessDto;
}

export class CsatSurveyDto implements CsatSurveySettings {
  @ApiProperty({
    description:
      'Ask for a rating from 1 to 5 on the keypad when the agent ends the call (its `end_call`, a flow’s last line; never when the ' +
      'caller hangs up), and record it (`csat.received`, source `keypad`). Only `conversation` agents run it: on another mode it is refused.',
  })
  @IsFlag()
  enabled: boolean;

  @ApiPropertyOptional({
    maxLength: 500,
    description: 'Said to ask for the rating; supports `{{variables}}`. Empty: "Before you go: how satisfied were you with this call, from 1 to 5? Press a key."',
  })
  @Optional()
  @IsText(500)
  prompt?: string;

  @ApiPropertyOptional({ maxLength: 500, description: 'Said once the rating was taken, before hanging up. Empty: "Thank you for your rating. Goodbye."' })
  @Optional()
  @IsText(500)
  thanks?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 30, default: 5, description: 'Seconds to wait for a key after the prompt; 0 means 5.' })
  @Optional()
  @IsIntBetween(0, 30)
  timeout_seconds?: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Tool configs
// ---------------------------------------------------------------------------------------------------------------

export class ApiKeyInputDto implements ApiKeyInput {
  @ApiProperty({ description: 'The credential; sealed on write, read back only as a hint.', minLength: 1, maxLength: 500, writeOnly: true })
  @IsText(500, { min: 1 })
  value: string;
}

@ApiSchema({ name: 'ToolCalendarDto' })
export class CalendarDto implements ToolCalendar {
  @ApiPropertyOptional({ description: 'Calendar provider.', maxLength: PROVIDER })
  @Optional()
  @IsText(PROVIDER)
  provider?: string;

  @ApiPropertyOptional({ type: ApiKeyInputDto, description: "The provider's API key. Omitted on update keeps the stored key." })
  @Optional()
  @IsNested(() => ApiKeyInputDto)
  api_key?: ApiKeyInputDto;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: 'The bookable event; carries length and schedule.' })
  @Optional()
  @IsIntBetween(1)
  event_type_id?: number;

  @ApiPropertyOptional({ description: 'Display only.', maxLength: REF })
  @Optional()
  @IsText(REF)
  event_type_slug?: string;

  @ApiPropertyOptional({ description: 'Display only.', maxLength: REF })
  @Optional()
  @IsText(REF)
  event_type_title?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 1440,
    description: 'Overrides the event length, in minutes; meaningful only on an event that offers a choice.',
  })
  @Optional()
  @IsIntBetween(1, 1440)
  duration_minutes?: number;

  @ApiPropertyOptional({
    description: "IANA zone of the caller; empty uses the agent's.",
    maxLength: LANGUAGE_CODE,
    example: 'Europe/Paris',
  })
  @Optional()
  @IsText(LANGUAGE_CODE)
  timezone?: string;
}

@ApiSchema({ name: 'ToolTransferDto' })
export class TransferDto implements ToolTransfer {
  @ApiProperty({
    description: 'E.164 number or `sip:` URI; fixed, never chosen by the model.',
    minLength: 1,
    maxLength: REF,
    example: '+14155550100',
  })
  @IsText(REF, { min: 1 })
  destination: string;

  @ApiPropertyOptional({
    maxLength: 2000,
    description: 'Absolute URL posted the transfer details before the call moves; waited on at most 3 seconds. Empty: none.',
  })
  @Optional()
  @IsUrlOrEmpty(2000)
  webhook_url?: string;
}

@ApiSchema({ name: 'ToolParameterDto' })
export class ParameterDto implements ToolParameter {
  @ApiProperty({ description: 'Argument name: letters, digits, `_`, `-`.', pattern: '^[A-Za-z0-9_-]{1,64}$' })
  @IsText(64, { min: 1, pattern: TOOL_NAME, patternHint: TOOL_NAME_HINT })
  name: string;

  @ApiProperty({ enum: PARAMETER_TYPES, description: 'JSON type of the argument.' })
  @IsOneOf(PARAMETER_TYPES)
  type: (typeof PARAMETER_TYPES)[number];

  @ApiPropertyOptional({ description: 'What the model is told about the argument.', maxLength: 1000 })
  @Optional()
  @IsText(1000)
  description?: string;

  @ApiPropertyOptional({ default: false, description: 'Whether the model must supply it.' })
  @Optional()
  @IsFlag()
  required?: boolean;

  @ApiPropertyOptional(textListSchema({ maxItems: 50, maxLength: REF }, 'Values a string argument is restricted to.'))
  @Optional()
  @IsTextList({ maxItems: 50, maxLength: REF })
  enum?: string[];

  @ApiPropertyOptional({ enum: PARAMETER_LOCATIONS, default: 'body', description: 'Where the argument is sent.' })
  @Optional()
  @IsOneOf(PARAMETER_LOCATIONS)
  in?: (typeof PARAMETER_LOCATIONS)[number];
}

@ApiSchema({ name: 'ToolRequestDto' })
export class RequestDto implements ToolRequest {
  @ApiProperty({
    description:
      'https (http on an internal endpoint); may carry `{{parameter}}` placeholders filled from path arguments, percent-escaped.',
    minLength: 1,
    maxLength: 2000,
    example: 'https://api.example.com/orders/{{order_id}}',
  })
  @IsText(2000, { min: 1 })
  url: string;

  @ApiPropertyOptional({ enum: HTTP_METHODS, default: 'POST', description: 'HTTP method of the request.' })
  @Optional()
  @IsOneOf(HTTP_METHODS)
  method?: (typeof HTTP_METHODS)[number];

  @ApiPropertyOptional(mapSchema(HEADERS, 'Sent as is and readable; secrets belong in `secret_header_values`.'))
  @Optional()
  @IsStringMap(HEADERS)
  headers?: Record<string, string>;

  @ApiPropertyOptional({
    ...mapSchema(
      HEADERS,
      'Headers sealed on write and never read back (see `secret_header_names`); present replaces all, absent leaves them alone.',
    ),
    writeOnly: true,
  })
  @Optional()
  @IsStringMap(HEADERS)
  secret_header_values?: Record<string, string>;

  @ApiPropertyOptional({
    description: 'Raw body with `{{parameter}}` placeholders; empty sends body parameters as a JSON object.',
    maxLength: 20000,
  })
  @Optional()
  @IsText(20000)
  body_template?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 30, default: 8, description: 'Seconds to wait for the answer.' })
  @Optional()
  @IsIntBetween(1, 30)
  timeout_seconds?: number;

  @ApiPropertyOptional({
    type: [ParameterDto],
    maxItems: 50,
    description: 'The arguments the model may pass. The argument schema is closed: an argument not listed is refused.',
  })
  @Optional()
  @IsNestedList(() => ParameterDto, { maxItems: 50 })
  parameters?: ParameterDto[];
}

export class ToolConfigDto implements ToolConfigInput {
  @ApiProperty({ enum: TOOL_KINDS, description: 'Decides which block (`calendar`, `transfer`, `request`) applies.' })
  @IsOneOf(TOOL_KINDS)
  kind: (typeof TOOL_KINDS)[number];

  @ApiProperty({
    description: 'Letters, digits, `_`, `-` only. Cannot be `end_call`, `search_knowledge_base`, or the name of a registered function.',
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    example: 'book_visit',
  })
  @IsText(64, { min: 1, pattern: TOOL_NAME, patternHint: TOOL_NAME_HINT })
  name: string;

  @ApiProperty({ description: 'The whole of what the model is told about when to use the tool.', minLength: 1, maxLength: 2000 })
  @IsText(2000, { min: 1 })
  description: string;

  @ApiPropertyOptional(mapSchema(PER_LANGUAGE_MESSAGE, 'Spoken while the tool runs, per language code; falls back to `filler_phrase`.'))
  @Optional()
  @IsStringMap(PER_LANGUAGE_MESSAGE)
  pre_tool_message?: Record<string, string>;

  @ApiPropertyOptional({ type: CalendarDto, description: 'For `calendar_availability` and `book_appointment`.' })
  @Optional()
  @IsNested(() => CalendarDto)
  calendar?: CalendarDto;

  @ApiPropertyOptional({ type: TransferDto, description: 'For `transfer_call`.' })
  @Optional()
  @IsNested(() => TransferDto)
  transfer?: TransferDto;

  @ApiPropertyOptional({ type: RequestDto, description: 'For `custom_function`.' })
  @Optional()
  @IsNested(() => RequestDto)
  request?: RequestDto;
}

// ---------------------------------------------------------------------------------------------------------------
// Agent input
// ---------------------------------------------------------------------------------------------------------------

export class AgentInputDto implements AgentInput {
  @ApiPropertyOptional({
    example: 'prj_…',
    description:
      'Create only: the project the agent belongs to (fixed once created; PATCH refuses it); absent: the account’s default project. ' +
      'Its `max_agents` ceiling applies (402 `plan_limit_reached`).',
  })
  @Optional()
  @IsText(30, { pattern: /^prj_[0-9A-Za-z]{22}$/, patternHint: 'a project id (prj_…)' })
  project_id?: string;

  @ApiProperty({ description: 'Human label.', minLength: 1, maxLength: 200, example: 'Front desk' })
  @IsText(200, { min: 1 })
  name: string;

  @ApiPropertyOptional({ description: 'What the agent is for.', maxLength: 2000 })
  @Optional()
  @IsText(2000)
  description?: string;

  @ApiPropertyOptional({
    enum: AGENT_MODES,
    default: 'conversation',
    description:
      '`conversation`: listens and answers with a model. `keypad`: answers only configured keypresses, no recognizer, no model. ' +
      '`normal`: reads the greeting then puts the caller through to `transfer_number`, no AI. ' +
      '`webrtc`: introduces two browsers, audio runs directly between them (`POST /v1/calls/rendezvous`); a phone call to such an agent gets no conversation.',
  })
  @Optional()
  @IsOneOf(AGENT_MODES)
  mode?: (typeof AGENT_MODES)[number];

  @ApiPropertyOptional(
    notYetActedOn(
      {
        enum: AUTONOMY_LEVELS,
        default: 'agentic',
        description:
          'Meaningful only in `conversation` mode. ' +
          '`agentic`: a model that searches knowledge bases before answering and calls tools in `tools`. ' +
          '`simple`: no model; a person takes the call in a browser. `custom`: a model limited to what `capabilities` switches on.',
      },
      'human operators on outbound calls',
      '`simple` hands inbound phone calls and web calls to a person (they ring until `POST /v1/calls/{id}/claim`); `POST /v1/calls` refuses a `simple` agent (422: outbound calls answered by a person are not built)',
    ),
  )
  @Optional()
  @IsOneOf(AUTONOMY_LEVELS)
  autonomy?: (typeof AUTONOMY_LEVELS)[number];

  @ApiPropertyOptional({
    type: CapabilitiesDto,
    description:
      'Read only when `autonomy` is `custom`; stored and returned whatever the autonomy. Sending it replaces the whole block. ' +
      'Omitted on a `custom` agent: call control only (`end_call` and `transfer` on, the rest off).',
  })
  @Optional()
  @IsNested(() => CapabilitiesDto)
  capabilities?: CapabilitiesDto;

  @ApiPropertyOptional({
    type: ConversationDto,
    description: 'Listening behaviour; sending replaces the whole block; 0 inside means default.',
  })
  @Optional()
  @IsNested(() => ConversationDto)
  conversation?: ConversationDto;

  @ApiPropertyOptional({
    type: CsatSurveyDto,
    description: 'The end-of-call keypad satisfaction survey (conversation agents). Absent: none. Sending replaces the whole block.',
  })
  @Optional()
  @IsNested(() => CsatSurveyDto)
  csat_survey?: CsatSurveyDto;

  @ApiPropertyOptional({ description: 'Spoken while a tool runs.', maxLength: 500 })
  @Optional()
  @IsText(500)
  filler_phrase?: string;

  @ApiPropertyOptional({
    type: FlowDto,
    description:
      'Conversation flow. Send `{}` to remove. Validated in full; all problems reported together under `flow.<path>`. ' +
      'A `conversation` agent follows it at run time (docs/flows.md); a `keypad` agent reads its nodes as menus, keys routed by ' +
      'expression edges on `digit`. Refused on `normal` and `webrtc` agents, which follow none.',
  })
  @Optional()
  @IsNested(() => FlowDto)
  flow?: FlowDto;

  @ApiPropertyOptional({ description: 'Agent group the agent belongs to, if any.', maxLength: REF })
  @Optional()
  @IsText(REF)
  group_id?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 60,
    default: 7,
    description: 'Keypad menu wait for a keypress before prompting again, in seconds; 0 means 7.',
  })
  @Optional()
  @IsIntBetween(0, 60)
  keypad_timeout_seconds?: number;

  @ApiPropertyOptional({
    description:
      'A knowledge base of this account that answers are grounded in, searched together with `knowledge_base_ids` on each turn ' +
      '(an `agentic` agent, or `custom` with `capabilities.search_knowledge`). A base deleted later is skipped by the search.',
    maxLength: REF,
  })
  @Optional()
  @IsText(REF)
  knowledge_base_id?: string;

  @ApiPropertyOptional(
    textListSchema(
      { maxItems: 20, maxLength: REF },
      'Knowledge bases of this account that answers are grounded in: each turn of an `agentic` agent (or `custom` with ' +
        '`capabilities.search_knowledge`) searches them, with `knowledge_base_id`, for the caller’s latest words within ' +
        '`capabilities.retrieval_timeout_ms`, and the model may search them with `search_knowledge_base`. A base deleted later is skipped by the search.',
    ),
  )
  @Optional()
  @IsTextList({ maxItems: 20, maxLength: REF })
  knowledge_base_ids?: string[];

  @ApiPropertyOptional({
    enum: LANGUAGE_DETECTION,
    default: 'off',
    description: 'Whether the agent moves to another of its languages when the caller speaks it. Meaningless with one language.',
  })
  @Optional()
  @IsOneOf(LANGUAGE_DETECTION)
  language_detection?: (typeof LANGUAGE_DETECTION)[number];

  @ApiProperty({
    type: [LanguageEntryDto],
    minItems: 1,
    maxItems: 20,
    description:
      'Every language spoken; the first is the one calls open in. No prompt, language, voice or greeting field exists on the agent itself.',
  })
  @IsNestedList(() => LanguageEntryDto, { minItems: 1, maxItems: 20 })
  languages: LanguageEntryDto[];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 10,
    default: 2,
    description: 'Keypad menu silence rounds before goodbye and hangup; 0 means 2.',
  })
  @Optional()
  @IsIntBetween(0, 10)
  max_no_input?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 4000,
    description: 'Reply length cap in tokens, 1-4000; 0 means the deployment default.',
  })
  @Optional()
  @IsZeroOrBetween(1, 4000)
  max_tokens?: number;

  @ApiPropertyOptional({ description: 'The language model to use.', maxLength: REF })
  @Optional()
  @IsText(REF)
  model?: string;

  @ApiPropertyOptional(mapSchema(PER_PROVIDER, 'Model per language provider name; overrides `model` for that provider.'))
  @Optional()
  @IsStringMap(PER_PROVIDER)
  models?: Record<string, string>;

  @ApiPropertyOptional({ description: 'Spoken by a keypad agent when nothing is pressed, before the menu is read again.', maxLength: 500 })
  @Optional()
  @IsText(500)
  no_input?: string;

  @ApiPropertyOptional({
    enum: INHERITABLE_FIELDS,
    isArray: true,
    uniqueItems: true,
    description: "Inheritable fields where this agent's value wins over its group's.",
  })
  @Optional()
  @IsOneOfList(INHERITABLE_FIELDS)
  overrides?: InheritableField[];

  @ApiPropertyOptional({ minimum: 0, maximum: 4, description: "Pitch multiplier 0.25-4; 0 means the deployment's own." })
  @Optional()
  @IsZeroOrBetween(0.25, 4, { integer: false })
  pitch?: number;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: 4,
    description: "Speech speed multiplier 0.25-4; 0 means the deployment's own; applies to whichever voice speaks, in every language.",
  })
  @Optional()
  @IsZeroOrBetween(0.25, 4, { integer: false })
  speed?: number;

  @ApiPropertyOptional({ minimum: 0, maximum: 2, description: 'Sampling temperature 0-2.' })
  @Optional()
  @IsNumberBetween(0, 2)
  temperature?: number;

  @ApiPropertyOptional({
    type: PostCallDto,
    description: 'Post-call analysis. Absent means summary only. Sending replaces the whole block.',
  })
  @Optional()
  @IsNested(() => PostCallDto)
  post_call?: PostCallDto;

  @ApiPropertyOptional({
    description:
      'Whether calls are recorded to audio. For a `webrtc` agent the seats\' clients are asked (`call-start` `copy`) to send a copy of ' +
      'their microphone over the realtime socket, mixed into one recording on the call\'s timeline; a client that sends none yields ' +
      'nothing of its side (its seat shows `copy` false), and a rendezvous where none did has no recording (`recording_available` ' +
      'false; docs/rendezvous.md).',
  })
  @Optional()
  @IsFlag()
  record_calls?: boolean;

  @ApiPropertyOptional({
    default: false,
    description:
      "Transcribe a `webrtc` agent's calls (other modes are always transcribed). " +
      'Needs the clients to send a copy of their microphone over the realtime socket (the embed client does when `call-start` says ' +
      '`copy`); a client that sends nothing yields nothing. Each seat is transcribed by the configured recognizer as its own ' +
      'speaker: turns of role `user` whose `speaker` is the seat\'s name. ' +
      'A `simple` agent (its calls answered by a person) runs no recognizer unless this is on: then a claimed call is transcribed ' +
      'once the operator joined, the caller as `speaker` `caller` (role `user`) and the operator under their name (role `assistant`), ' +
      'each turn shown on the operator\'s page as it is said.',
  })
  @Optional()
  @IsFlag()
  transcribe_calls?: boolean;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 300,
    default: 30,
    description:
      'How long a call rings before nobody has answered, in seconds; 0 means 30. ' +
      'Read by `webrtc` agents (a rendezvous waits for its second seat) and by `simple` agents on an inbound call (it waits for a claim), then the call ends `no_answer`.',
  })
  @Optional()
  @IsIntBetween(0, 300)
  ring_seconds?: number;

  @ApiPropertyOptional({ type: [ToolConfigDto], maxItems: 50, description: 'Tools the agent carries itself; replaces the whole list.' })
  @Optional()
  @IsNestedList(() => ToolConfigDto, { maxItems: 50 })
  tool_configs?: ToolConfigDto[];

  @ApiPropertyOptional(textListSchema({ maxItems: 50, maxLength: REF }, 'Names of registered functions the agent may call.'))
  @Optional()
  @IsTextList({ maxItems: 50, maxLength: REF })
  tools?: string[];

  @ApiPropertyOptional({
    maxLength: 2000,
    description: "Absolute URL that overrides the tenant's webhooks for this agent's events. Empty: none.",
  })
  @Optional()
  @IsUrlOrEmpty(2000)
  webhook_url?: string;

  @ApiPropertyOptional({ description: 'Carrier the agent places and takes calls through.', maxLength: PROVIDER })
  @Optional()
  @IsText(PROVIDER)
  carrier?: string;

  @ApiPropertyOptional({ description: 'Number (or SIP URI) callers are put through to.', maxLength: 64, example: '+14155550100' })
  @Optional()
  @IsText(64)
  transfer_number?: string;

  @ApiPropertyOptional(metadataSchema)
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

/** PATCH: every field optional (absent leaves it alone; `null` is refused); scalars merge, lists and blocks replace. */
export class AgentPatchDto extends PartialType(OmitType(AgentInputDto, ['project_id'] as const), { skipNullProperties: false }) implements Partial<AgentInput> {}

/** Names the controller imported before the full agent model; same classes. */
export { AgentInputDto as CreateAgentDto, AgentPatchDto as UpdateAgentDto };

// ---------------------------------------------------------------------------------------------------------------
// Agent output
// ---------------------------------------------------------------------------------------------------------------

export class ApiKeyHintDto implements ApiKeyHint {
  @ApiProperty({ description: 'The last few characters of the stored key.', example: '…x7Qa', readOnly: true })
  hint: string;
}

@ApiSchema({ name: 'ToolCalendarOutputDto' })
export class CalendarOutputDto extends OmitType(CalendarDto, ['api_key'] as const) implements ToolCalendar {
  @ApiPropertyOptional({ type: ApiKeyHintDto, description: 'The stored key, as a hint only.' })
  api_key?: ApiKeyHintDto;
}

@ApiSchema({ name: 'ToolRequestOutputDto' })
export class RequestOutputDto extends OmitType(RequestDto, ['secret_header_values'] as const) implements ToolRequest {
  @ApiPropertyOptional({ type: [String], readOnly: true, description: 'Names of the sealed headers: which credentials the tool carries.' })
  secret_header_names?: string[];
}

export class ToolConfigOutputDto extends OmitType(ToolConfigDto, ['calendar', 'request'] as const) implements ToolConfigOutput {
  @ApiPropertyOptional({ type: CalendarOutputDto, description: 'For `calendar_availability` and `book_appointment`.' })
  calendar?: CalendarOutputDto;

  @ApiPropertyOptional({ type: RequestOutputDto, description: 'For `custom_function`.' })
  request?: RequestOutputDto;
}

/** The inheritable fields as calls use them. */
export class EffectiveConfigDto extends PickType(AgentInputDto, INHERITABLE_FIELDS) implements EffectiveConfig {}

export class AgentDto extends OmitType(AgentInputDto, ['tool_configs', 'project_id'] as const) implements AgentDocument {
  @ApiProperty({ example: 'agt_3xQ9…' }) id: string;
  @ApiProperty({ enum: ['agent'] }) object: 'agent';
  @ApiProperty({ example: 'prj_…', readOnly: true, description: 'The project the agent belongs to, chosen when it was created (docs/projects.md).' })
  project_id: string;

  @ApiPropertyOptional({
    type: [ToolConfigOutputDto],
    description: 'Tools the agent carries itself; credentials come back as `calendar.api_key.hint` and `request.secret_header_names`.',
  })
  tool_configs?: ToolConfigOutputDto[];

  @ApiPropertyOptional({
    type: EffectiveConfigDto,
    readOnly: true,
    description: 'Read-only: the configuration calls use, after group inheritance and defaults.',
  })
  effective?: EffectiveConfigDto;

  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class AgentListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [AgentDto] }) data: AgentDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}

export class DeletedAgentDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['agent'] }) object: 'agent';
  @ApiProperty({ enum: [true] }) deleted: true;
}

// ---------------------------------------------------------------------------------------------------------------
// Post-call test
// ---------------------------------------------------------------------------------------------------------------

@ApiSchema({ name: 'TranscriptTurnDto' })
export class TurnDto {
  @ApiProperty({ enum: TURN_ROLES, description: 'Who spoke: the caller (`user`) or the agent (`assistant`).' })
  @IsOneOf(TURN_ROLES)
  role: (typeof TURN_ROLES)[number];

  @ApiProperty({ description: 'What was said.', maxLength: 10000 })
  @IsText(10000)
  text: string;
}

export class PostCallTestInputDto {
  @ApiProperty({ type: [TurnDto], minItems: 1, maxItems: 2000, description: "A transcript to run the agent's post-call settings over." })
  @IsNestedList(() => TurnDto, { minItems: 1, maxItems: 2000 })
  transcript: TurnDto[];
}

export class PostCallTestResultDto {
  @ApiProperty({ enum: ['post_call_test'] }) object: 'post_call_test';

  @ApiProperty({ type: 'string', nullable: true, description: 'The summary, or null when `post_call.summary` is off.' })
  summary: string | null;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'The extraction fields found, keyed by `name`.',
  })
  extracted: Record<string, unknown>;

  @ApiProperty({ description: 'The model that ran the pass.' }) model: string;
}
