import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsOptional, IsString, Length, MaxLength, ValidateNested } from 'class-validator';
import { IsMetadata } from '../http/validation';

export class LanguageEntryDto {
  @ApiProperty({ description: 'BCP-47 tag or a language name.', example: 'en-US', minLength: 1, maxLength: 64 })
  @IsString()
  @Length(1, 64)
  code: string;
}

const metadataSchema = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 500 },
  maxProperties: 50,
  description: 'String keys to string values, returned on read.',
} as const;

export class CreateAgentDto {
  @ApiProperty({ description: 'Human label.', minLength: 1, maxLength: 200, example: 'Front desk' })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiPropertyOptional({ description: 'What the agent is for.', maxLength: 2000 })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiProperty({ type: [LanguageEntryDto], description: 'Every language spoken; the first is the one calls open in.', minItems: 1 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @ValidateNested({ each: true })
  @Type(() => LanguageEntryDto)
  languages: LanguageEntryDto[];

  @ApiPropertyOptional(metadataSchema)
  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

/** PATCH: scalars merge; lists and nested blocks are replaced whole. */
export class UpdateAgentDto extends PartialType(CreateAgentDto) {}

export class AgentDto {
  @ApiProperty({ example: 'agt_3xQ9…' }) id: string;
  @ApiProperty({ enum: ['agent'] }) object: 'agent';
  @ApiProperty() name: string;
  @ApiProperty() description: string;
  @ApiProperty({ type: [LanguageEntryDto] }) languages: LanguageEntryDto[];
  @ApiProperty(metadataSchema) metadata: Record<string, string>;
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
