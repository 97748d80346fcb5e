import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsIn, IsObject, IsOptional, IsString, Length, Matches } from 'class-validator';
import { DEFAULT_SEATS, SEAT_NAME } from '@parley/contracts';
import { IsMetadata } from '../http/validation';

const CALL_STATUSES = ['queued', 'ringing', 'in_progress', 'ended', 'failed'];

export class SeatDto {
  @ApiProperty({ example: 'a', description: 'The seat’s name, as the rendezvous was created with it.' }) name: string;
  @ApiProperty({ description: 'A browser joined with one of this seat’s tokens: no further token is minted for it.' }) taken: boolean;
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

export class CallDto {
  @ApiProperty({ example: 'call_…' }) id: string;
  @ApiProperty({ enum: ['call'] }) object: 'call';
  @ApiProperty() agent_id: string;
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
  @ApiProperty({ type: [SeatDto], nullable: true, description: 'A rendezvous’ two seats (`POST /v1/calls/rendezvous`); null on any other call.' })
  seats: SeatDto[] | null;
}

export class TurnDto {
  @ApiProperty({ enum: ['user', 'assistant'] }) role: 'user' | 'assistant';
  @ApiProperty({ description: 'What was said; for an interrupted assistant turn, only what the caller heard.' }) text: string;
  @ApiProperty({ type: 'string', nullable: true, example: 'en-US' }) language: string | null;
  @ApiProperty({ description: 'Seconds from the start of the call to the start of the turn.' }) start_seconds: number;
  @ApiProperty({ description: 'Seconds from the start of the call to the end of the turn.' }) end_seconds: number;
  @ApiProperty({ description: 'The caller cut the assistant off.' }) interrupted: boolean;
}

export class TranscriptDto {
  @ApiProperty({ enum: ['transcript'] }) object: 'transcript';
  @ApiProperty() call_id: string;
  @ApiProperty({ description: 'Whether the call is over (the transcript is final).' }) final: boolean;
  @ApiProperty({ type: [TurnDto] }) turns: TurnDto[];
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
}

export class CallListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [CallDto] }) data: CallDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional() next_cursor?: string;
}

export { CALL_STATUSES };

export class CreateRealtimeTokenDto {
  @ApiProperty({ description: 'The agent the browser talks to: a `conversation` or `keypad` agent.', example: 'agt_…' })
  @IsString()
  @Length(1, 200)
  agent_id: string;

  @ApiPropertyOptional({ description: 'Values for the agent’s {{variables}}.', type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsMetadata()
  variables?: Record<string, string>;

  @ApiPropertyOptional({ description: 'Stored on the call record.', type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

export class CreateRendezvousDto extends CreateRealtimeTokenDto {
  @ApiProperty({ description: 'The agent that introduces the two people: a `webrtc` agent.', example: 'agt_…' })
  @IsString()
  @Length(1, 200)
  override agent_id = '';

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
    description: 'Who joins: `caller`, the person on a web call nobody has joined yet. Operators and listeners on phone calls are not supported yet.',
  })
  @IsOptional()
  @IsIn(['caller'])
  role?: 'caller';
}

export class RealtimeTokenDto {
  @ApiProperty({ enum: ['realtime_token'] }) object: 'realtime_token';
  @ApiProperty({
    description:
      'Give it to one browser: it opens the realtime socket at `url` once, within 60 s (checked at connect), for this call and role only. ' +
      'It carries no secret and is never an API key.',
    example: 'rtk_eyJqdGkiOi….3q2-7w',
  })
  token: string;
  @ApiProperty({ description: 'The realtime socket to open with it (MEDIA_PUBLIC_URL + /realtime).', example: 'wss://media.example.com/realtime' })
  url: string;
  @ApiProperty({ example: 'call_…' }) call_id: string;
  @ApiProperty({ enum: ['caller', 'seat'] }) role: string;
  @ApiPropertyOptional({ description: 'The rendezvous seat this token takes (role `seat`).', example: 'a' }) seat?: string;
  @ApiProperty({ format: 'date-time', description: 'When the window to connect closes.' }) expires_at: string;
  @ApiProperty({ type: () => CallDto, description: 'The call, `queued` until the browser connects.' }) call: CallDto;
}
