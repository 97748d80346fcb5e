import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** A registered function: a name an agent may list in `tools`. */
export class FunctionDto {
  @ApiProperty({ enum: ['function'] }) object: 'function';
  @ApiProperty({ description: 'The name agents list in `tools`.', example: 'lookup_order' }) name: string;
  @ApiProperty({ description: 'What the model is told about the function.' }) description: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'JSON Schema (an object schema) of the arguments the function takes.',
    example: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
  })
  parameters: Record<string, unknown>;
}

export class FunctionListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [FunctionDto] }) data: FunctionDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}
