import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, Length, Matches, Max, Min } from 'class-validator';
import { CONSOLE_SESSION_MAX_SECONDS, CONSOLE_TOKEN_MAX_TTL_SECONDS, CONSOLE_TOKEN_TTL_SECONDS, DEFAULT_SEATS, FLOW_TRANSITION_KINDS, FlowTransitionKind, SEAT_NAME } from '@parley/contracts';
import { IsMetadata } from '../http/validation';

const CALL_STATUSES = ['queued', 'ringing', 'in_progress', 'ended', 'failed'];

export class SeatDto {
  @ApiProperty({ example: 'a', description: 'The seat’s name, as the rendezvous was created with it.' }) name: string;
  @ApiProperty({ description: 'A browser joined with one of this seat’s tokens: no further token is minted for it.' }) taken: boolean;
  @ApiProperty({
    type: 'boolean',
    nullable: true,
    description:
      'When the agent records or transcribes calls (`record_calls`, `transcribe_calls`): whether this seat’s client sent the copy of its ' +
      'microphone it was asked for, known once its browser left. `false`: nothing of this seat is recorded or transcribed. Null until ' +
      'then, and when no copy was asked for.',
  })
  copy: boolean | null;
}

export class CreateCallDto {
  @ApiProperty({ description: 'The agent that takes the call.', example: 'agt_…' })
  @IsString()
  @Length(1, 200)
  agent_id: string;

  @ApiProperty({ description: 'The number to call, E.164.', example: '+15551234567' })
  @IsString()
  @Length(1, 32)
  to: string;

  @ApiPropertyOptional({ description: 'Caller id, E.164; empty uses the carrier default.', example: '+15557654321' })
  @IsOptional()
  @IsString()
  @Length(0, 32)
  from?: string;

  @ApiPropertyOptional({ description: 'Values for the agent’s {{variables}} (greeting, prompts, voicemail message).', type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsMetadata()
  variables?: Record<string, string>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

export class CallUsageDto {
  @ApiProperty({ example: 95.42, description: 'The carrier’s answered time (answer to end), seconds; 0 until the call ended.' }) carrier_seconds: number;
  @ApiProperty({ type: 'integer', example: 2, description: 'The carrier’s billed minutes: each started minute of `carrier_seconds` counts.' }) carrier_minutes: number;
  @ApiProperty({ example: 88.3, description: 'Audio sent to speech recognition, seconds.' }) stt_seconds: number;
  @ApiProperty({ type: 'integer', example: 5120, description: 'Prompt tokens of the model’s answers (as the model reported them).' }) llm_input_tokens: number;
  @ApiProperty({ type: 'integer', example: 310, description: 'Completion tokens of the model’s answers.' }) llm_output_tokens: number;
  @ApiProperty({ type: 'integer', example: 1264, description: 'Characters sent to speech synthesis (fixed lines served from the worker’s cache are not sent).' })
  tts_characters: number;
}

export class CallCostBreakdownDto {
  @ApiProperty({ example: 0.028, description: 'Carrier: billed minutes × the carrier’s price per minute (set when the call ends).' }) carrier: number;
  @ApiProperty({ example: 0.0063, description: 'Speech recognition: minutes of audio × the provider’s (model’s) price per minute.' }) stt: number;
  @ApiProperty({ example: 0.0009, description: 'Model: tokens in and out × the model’s prices per million.' }) llm: number;
  @ApiProperty({ example: 0.0379, description: 'Speech synthesis: characters × the provider’s price per million.' }) tts: number;
}

export class CallCostDto {
  @ApiProperty({ example: 0.0731, description: 'The sum of the breakdown (rounded to 6 decimals; stored exactly).' }) amount: number;
  @ApiProperty({ type: 'string', nullable: true, example: 'USD', description: 'The price table’s currency (ISO 4217); null until a cost was first recorded.' })
  currency: string | null;
  @ApiProperty({ type: CallCostBreakdownDto }) breakdown: CallCostBreakdownDto;
}

export class CallDto {
  @ApiProperty({ example: 'call_…' }) id: string;
  @ApiProperty({ enum: ['call'] }) object: 'call';
  @ApiProperty() agent_id: string;
  @ApiProperty({ example: 'prj_…', description: 'The project the call counts against: its agent’s project (docs/projects.md).' }) project_id: string;
  @ApiProperty({ enum: ['outbound', 'inbound', 'web'] }) direction: string;
  @ApiProperty() to: string;
  @ApiProperty() from: string;
  @ApiProperty({
    enum: CALL_STATUSES,
    description: 'queued → ringing → in_progress → ended; failed is the abnormal end. ended and failed are final.',
  })
  status: string;
  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'How the call finished: completed, hangup, canceled, no_answer, busy, no_media, carrier_error, …',
  })
  end_reason: string | null;
  @ApiProperty({ type: 'string', nullable: true }) failure_reason: string | null;
  @ApiProperty({ type: 'string', nullable: true }) carrier: string | null;
  @ApiProperty({ type: 'string', nullable: true }) carrier_call_id: string | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) variables: Record<string, string>;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) metadata: Record<string, string>;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time', type: 'string', nullable: true }) answered_at: string | null;
  @ApiProperty({ format: 'date-time', type: 'string', nullable: true }) ended_at: string | null;
  @ApiProperty({ description: 'From answer to end; 0 when never answered.' }) duration_seconds: number;
  @ApiProperty() turns: number;
  @ApiProperty() recording_available: boolean;
  @ApiProperty() transcript_available: boolean;
  @ApiProperty({
    type: 'string',
    nullable: true,
    enum: ['human', 'machine', 'unknown'],
    description: 'Who answered an outbound call, per the carrier’s answering-machine detection; null until known.',
  })
  answered_by: string | null;
  @ApiProperty({ type: 'string', nullable: true, description: 'Post-call summary; null until the analysis has run (or when it is off).' })
  summary: string | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'Post-call extracted fields by name; null until the analysis has run.',
  })
  extracted: Record<string, unknown> | null;
  @ApiProperty({
    type: 'boolean',
    nullable: true,
    description:
      "Whether the call met its agent's `post_call.success`: decided at the end from the end reason, or by the post-call analysis " +
      'when an extracted field decides. Null when the agent defines no success, until it is decided, or when its analysis failed.',
  })
  successful: boolean | null;
  @ApiProperty({ type: [SeatDto], nullable: true, description: 'A rendezvous’ two seats (`POST /v1/calls/rendezvous`); null on any other call.' })
  seats: SeatDto[] | null;
  @ApiProperty({
    description:
      'Answered by a person who claims it (`POST /v1/calls/{id}/claim`) rather than by a model: an inbound call to a `simple` agent, or a rendezvous. ' +
      'While it is `ringing` and unclaimed it is on `GET /v1/calls/ringing`.',
  })
  claimable: boolean;
  @ApiProperty({ type: 'string', nullable: true, example: 'alice', description: 'Who claimed it: the console token’s operator, the claim’s `operator`, or `api`; null until claimed.' })
  claimed_by: string | null;
  @ApiProperty({ format: 'date-time', type: 'string', nullable: true, description: 'When it was claimed; null until then.' })
  claimed_at: string | null;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'wfr_…',
    description: 'The workflow run that placed the call (list a run’s calls with `GET /v1/calls?workflow_run_id=`); null when no workflow placed it.',
  })
  workflow_run_id: string | null;
  @ApiProperty({ type: 'string', nullable: true, description: 'The run’s recipient the call was for; null when no workflow placed it.' })
  workflow_recipient_id: string | null;
  @ApiProperty({ type: CallUsageDto, description: 'What the call used so far: recorded while it runs (docs/analytics.md, Usage and cost).' })
  usage: CallUsageDto;
  @ApiProperty({ type: CallCostDto, description: 'What that usage costs by the operator’s price table (`PRICES_FILE`), so far.' })
  cost: CallCostDto;
}

/** A knowledge-base document an agent's answer was grounded in. */
export class GroundingSourceDto {
  @ApiProperty({ example: 'doc_2b9X4fK1', description: 'The document, one of its knowledge base’s `documents`.' }) document_id: string;
  @ApiProperty({ example: 'kb_7Yq3mP0a', description: 'The knowledge base it is in.' }) knowledge_base_id: string;
  @ApiProperty({ example: 'Opening hours', description: 'The document’s title.' }) title: string;
  @ApiProperty({ example: 0.82, minimum: 0, maximum: 1, description: 'How well its best passage matched the search, 0-1 (higher is better).' }) score: number;
}

export class TurnDto {
  @ApiProperty({ enum: ['user', 'assistant'] }) role: 'user' | 'assistant';
  @ApiProperty({ description: 'What was said; for an interrupted assistant turn, only what the caller heard.' }) text: string;
  @ApiProperty({ type: 'string', nullable: true, example: 'en-US' }) language: string | null;
  @ApiProperty({ description: 'Seconds from the start of the call to the start of the turn.' }) start_seconds: number;
  @ApiProperty({ description: 'Seconds from the start of the call to the end of the turn.' }) end_seconds: number;
  @ApiProperty({ description: 'The caller cut the assistant off.' }) interrupted: boolean;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'patient',
    description: 'Who said it when both sides are people: a rendezvous seat\'s name (each seat is its own speaker). Null on other calls.',
  })
  speaker: string | null;
  @ApiProperty({
    type: [GroundingSourceDto],
    description:
      'The knowledge-base documents the answer was grounded in (the turn’s lookup and any `search_knowledge_base` call), best first; ' +
      'empty (`[]`) on turns without: the caller’s turns, and answers no knowledge base informed.',
  })
  grounding: GroundingSourceDto[];
  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: 820,
    description: 'An assistant turn that answered the caller: milliseconds from the end of the caller’s speech to the agent’s first audio. Null on other turns.',
  })
  response_latency_ms: number | null;
}

/** One move of a call's conversation flow: in the transcript, and on the call's event stream (`call.flow.transitioned`). */
export class FlowTransitionDto {
  @ApiProperty({ enum: ['flow_transition'] }) object: 'flow_transition';
  @ApiProperty() call_id: string;
  @ApiProperty({ example: 'greet', description: 'The node left; empty on the flow’s first entry (`kind` `start`).' }) from: string;
  @ApiProperty({ example: 'collect_payment', description: 'The node entered.' }) to: string;
  @ApiProperty({
    enum: FLOW_TRANSITION_KINDS,
    description: '`start`: the call opened on the flow’s `start` node; otherwise the type of the edge that fired.',
  })
  kind: FlowTransitionKind;
  @ApiProperty({ example: 0, description: 'Position of the edge in the `from` node’s `edges`; -1 on the first entry.' }) edge_index: number;
  @ApiPropertyOptional({ description: 'The edge’s `when`; absent when it has none.' }) when?: string;
  @ApiPropertyOptional({ example: 'payment_received', description: 'The injected event an `event` edge fired on; absent on other kinds.' }) event?: string;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
    description: 'Values the edge captured, also written to the call’s `variables` (as text); absent when none.',
  })
  captured?: Record<string, string | number | boolean>;
  @ApiProperty({ example: 5250, description: 'Milliseconds from the start of the call’s media stream.' }) at_ms: number;
}

export class TranscriptDto {
  @ApiProperty({ enum: ['transcript'] }) object: 'transcript';
  @ApiProperty() call_id: string;
  @ApiProperty({ description: 'Whether the call is over (the transcript is final).' }) final: boolean;
  @ApiProperty({ type: [TurnDto] }) turns: TurnDto[];
  @ApiProperty({
    type: [FlowTransitionDto],
    description: 'The moves of the agent’s conversation flow, in the order they happened; empty when the agent has no flow.',
  })
  flow_transitions: FlowTransitionDto[];
}

export class RecordingUrlDto {
  @ApiProperty({ enum: ['recording_url'] }) object: 'recording_url';
  @ApiProperty() call_id: string;
  @ApiProperty({ description: 'Plays without an API key until expires_at (for an <audio> element or a CRM link).' }) url: string;
  @ApiProperty({ format: 'date-time' }) expires_at: string;
  @ApiProperty({ example: 'audio/wav' }) content_type: string;
  @ApiProperty() duration_seconds: number;
}

export class InjectCallEventDto {
  @ApiProperty({ description: 'The event name a flow edge waits for.', example: 'payment_received', pattern: '^[A-Za-z0-9_.:-]{1,100}$' })
  @IsString()
  @Matches(/^[A-Za-z0-9_.:-]{1,100}$/, { message: 'must be 1-100 letters, digits, _ . : or -' })
  name: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Any JSON object, handed to the conversation.' })
  @IsOptional()
  @IsObject()
  payload?: Record<string, unknown>;
}

export class CallEventDto {
  @ApiProperty({ enum: ['call_event'] }) object: 'call_event';
  @ApiProperty({ example: 'cev_…' }) id: string;
  @ApiProperty() call_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) payload: Record<string, unknown>;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({
    description:
      'Whether the running conversation received it. False means the conversation has not taken it yet: an event for a call whose media ' +
      'has not started is kept and handed to the conversation when it starts (likewise one the worker could not be reached for: the ' +
      'call’s next media stream gets it). The event is on the call’s event stream either way.',
  })
  delivered: boolean;
}

export class CallListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [CallDto] }) data: CallDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional() next_cursor?: string;
}

export { CALL_STATUSES };

/** What a call placed for browsers carries besides its agent. */
export class WebCallInputDto {
  @ApiPropertyOptional({ description: 'Values for the agent’s {{variables}}.', type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsMetadata()
  variables?: Record<string, string>;

  @ApiPropertyOptional({ description: 'Stored on the call record.', type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

/** A console token's `ttl_seconds` (1-59 is refused by the calls service, naming the field). */
const ConsoleTokenTtl = (what: string) =>
  applyDecorators(
    ApiPropertyOptional({
      description: `${what}, 60-${CONSOLE_TOKEN_MAX_TTL_SECONDS}; absent or 0: ${CONSOLE_TOKEN_TTL_SECONDS}. Never past the session’s end; refresh it before it ends (POST /v1/realtime/tokens/refresh).`,
      example: 900,
    }),
    IsOptional(),
    IsInt(),
    Min(0),
    Max(CONSOLE_TOKEN_MAX_TTL_SECONDS),
  );

export class CreateRealtimeTokenDto extends WebCallInputDto {
  @ApiPropertyOptional({
    enum: ['caller', 'console'],
    default: 'caller',
    description:
      '`caller` (the default): places a web call to `agent_id` and mints the token that joins it. `console`: mints an operator console’s token ' +
      '(no call; `operator` required, `agent_id`, `variables` and `metadata` refused).',
  })
  @IsOptional()
  @IsIn(['caller', 'console'])
  role?: 'caller' | 'console';

  @ApiPropertyOptional({ description: 'Role `caller`: the agent the browser talks to, a `conversation` or `keypad` agent. Required then.', example: 'agt_…' })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  agent_id?: string;

  @ApiPropertyOptional({ description: 'Role `console`: who holds the console, recorded as `claimed_by` on the calls it claims. Required then.', example: 'alice', minLength: 1, maxLength: 80 })
  @IsOptional()
  @IsString()
  @Length(1, 80)
  operator?: string;

  @ConsoleTokenTtl('Role `console`: the token’s window in seconds')
  ttl_seconds?: number;
}

export class RefreshConsoleTokenDto {
  @ConsoleTokenTtl('The new token’s window in seconds')
  ttl_seconds?: number;
}

export class ClaimCallDto {
  @ApiPropertyOptional({
    description: 'Who claims, recorded as `claimed_by` (an API key’s claim; absent: `api`). A console token’s claim records its own operator instead.',
    example: 'alice',
    minLength: 1,
    maxLength: 80,
  })
  @IsOptional()
  @IsString()
  @Length(1, 80)
  operator?: string;
}

export class CreateRendezvousDto extends WebCallInputDto {
  @ApiProperty({ description: 'The agent that introduces the two people: a `webrtc` agent.', example: 'agt_…' })
  @IsString()
  @Length(1, 200)
  agent_id: string;

  @ApiPropertyOptional({
    description: 'The two ends’ names, distinct, each 1-40 characters of `a-z`, `0-9`, `_`, `-`.',
    type: [String],
    default: [...DEFAULT_SEATS],
    example: ['agent', 'customer'],
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(2)
  @ArrayMaxSize(2)
  @ArrayUnique()
  @Matches(SEAT_NAME, { each: true, message: 'each seat must be 1-40 characters of a-z, 0-9, _ and -' })
  seats?: string[];
}

export class TakeSeatDto {
  @ApiProperty({ description: 'The seat to take: one of the rendezvous’ `seats`.', example: 'a' })
  @IsString()
  @Length(1, 40)
  seat: string;
}

export class CallTokenDto {
  @ApiPropertyOptional({
    enum: ['caller'],
    default: 'caller',
    description: 'Who joins: `caller`, the person on a web call nobody has joined yet. An operator joins a call with the token its claim answers (`POST /v1/calls/{id}/claim`); listeners are not supported yet.',
  })
  @IsOptional()
  @IsIn(['caller'])
  role?: 'caller';
}

export class RealtimeTokenDto {
  @ApiProperty({ enum: ['realtime_token'] }) object: 'realtime_token';
  @ApiProperty({
    description:
      'A call’s token: give it to one browser; it opens the realtime socket at `url` once, within 60 s (checked at connect), for this call and role only. ' +
      'A console token (role `console`): the operator console’s bearer token for `GET /v1/calls/ringing`, `POST /v1/calls/{id}/claim` and ' +
      '`POST /v1/realtime/tokens/refresh`, usable until `expires_at`. It carries no secret and is never an API key.',
    example: 'rtk_eyJqdGkiOi….3q2-7w',
  })
  token: string;
  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'The realtime socket to open with it (MEDIA_PUBLIC_URL + /realtime); null on a console token.',
    example: 'wss://media.example.com/realtime',
  })
  url: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: 'call_…', description: 'The call it joins; null on a console token.' }) call_id: string | null;
  @ApiProperty({
    enum: ['caller', 'seat', 'operator', 'console'],
    description: '`caller` (a web call), `seat` (one end of a rendezvous), `operator` (the person who claimed a phone call), `console` (an operator console).',
  })
  role: string;
  @ApiPropertyOptional({ description: 'The rendezvous seat this token takes (role `seat`).', example: 'a' }) seat?: string;
  @ApiPropertyOptional({ description: 'Who holds the console (role `console`).', example: 'alice' }) operator?: string;
  @ApiProperty({ format: 'date-time', description: 'A call’s token: when the window to connect closes. A console token: when it stops being accepted.' }) expires_at: string;
  @ApiPropertyOptional({
    format: 'date-time',
    description: `Role \`console\`: the session's absolute end (${CONSOLE_SESSION_MAX_SECONDS / 3600} h after the first mint); no refresh reaches past it.`,
  })
  session_expires_at?: string;
  @ApiProperty({ type: () => CallDto, nullable: true, description: 'The call, `queued` until the browser connects (claimed, for a claim); null on a console token.' })
  call: CallDto | null;
}
