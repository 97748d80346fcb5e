import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length } from 'class-validator';
import { IsMetadata } from '../http/validation';

const CALL_STATUSES = ['queued', 'ringing', 'in_progress', 'ended', 'failed'];

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
}

export class CallListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [CallDto] }) data: CallDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional() next_cursor?: string;
}

export { CALL_STATUSES };
