import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { CSAT_COMMENT_MAX, CSAT_SCALES } from '@parley/contracts';
import { IsIntBetween, IsOneOf, IsText, Optional } from '../http/validators';

/** The sources a client may name: `keypad` is the agent's own survey's, recorded by the media worker. */
export const API_CSAT_SOURCES = ['api', 'web'] as const;

export class RecordCsatDto {
  @ApiProperty({ example: 'call_4fT9aQ2LmZ8xV1cN0bR7sD', description: 'The call rated (of this account; another account’s call is 404).' })
  @IsText(100, { min: 1 })
  call_id: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: 10, example: 4, description: 'The rating, from 1 to `scale`.' })
  @IsIntBetween(1, 10)
  score: number;

  @ApiPropertyOptional({ type: 'integer', enum: [...CSAT_SCALES], default: 5, example: 5, description: 'The scale the score is on: 1 to 5, or 1 to 10.' })
  @Optional()
  @IsIn([...CSAT_SCALES], { message: `$property must be one of: ${CSAT_SCALES.join(', ')}` })
  scale?: number;

  @ApiPropertyOptional({ maxLength: CSAT_COMMENT_MAX, example: 'Quick and clear.', description: 'What the caller said about it.' })
  @Optional()
  @IsText(CSAT_COMMENT_MAX)
  comment?: string;

  @ApiPropertyOptional({
    enum: API_CSAT_SOURCES,
    default: 'api',
    description: 'Where the rating was collected: `api` (default) or `web` (your own page). `keypad` is reserved for the agent’s end-of-call survey.',
  })
  @Optional()
  @IsOneOf(API_CSAT_SOURCES)
  source?: (typeof API_CSAT_SOURCES)[number];
}

export class CsatRatingDto {
  @ApiProperty({ example: 'csat_7Qm2Vx9LcT4nB8rZ1aK5sD' }) id: string;
  @ApiProperty({ enum: ['csat_rating'] }) object: 'csat_rating';
  @ApiProperty({ example: 'call_4fT9aQ2LmZ8xV1cN0bR7sD' }) call_id: string;
  @ApiProperty({ type: 'integer', example: 4 }) score: number;
  @ApiProperty({ type: 'integer', enum: [...CSAT_SCALES], example: 5 }) scale: number;
  @ApiProperty({ type: 'string', nullable: true, example: 'Quick and clear.' }) comment: string | null;
  @ApiProperty({ enum: ['api', 'web', 'keypad'], example: 'api' }) source: string;
  @ApiProperty({ format: 'date-time', example: '2026-01-05T10:00:00.000Z' }) created_at: string;
}
