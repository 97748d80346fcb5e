import { ApiProperty, ApiPropertyOptional, PartialType, PickType } from '@nestjs/swagger';
import type { GroupDefaults } from '@parley/contracts';
import { IsMetadata, IsNested, IsOneOf, IsText, mapSchema, METADATA_LIMITS, Optional } from '../http/validators';
import { AgentInputDto, ANY_JSON, INHERITABLE_FIELDS, InheritableField } from './agent.dto';

export const GROUP_COLORS = ['slate', 'red', 'orange', 'amber', 'green', 'teal', 'blue', 'indigo', 'violet', 'pink'] as const;

/**
 * A group's defaults: exactly the inheritable fields (the values of an agent's `overrides`), with the agent's own
 * documentation and validators.
 */
export class GroupDefaultsDto extends PickType(AgentInputDto, INHERITABLE_FIELDS) implements GroupDefaults {}

export class AgentGroupInputDto {
  @ApiProperty({ description: 'Human label.', minLength: 1, maxLength: 200, example: 'Support line' })
  @IsText(200, { min: 1 })
  name: string;

  @ApiPropertyOptional({ description: 'What the group is for.', maxLength: 2000 })
  @Optional()
  @IsText(2000)
  description?: string;

  @ApiPropertyOptional({ enum: GROUP_COLORS, description: 'Display colour; omit for none.' })
  @Optional()
  @IsOneOf(GROUP_COLORS)
  color?: (typeof GROUP_COLORS)[number];

  @ApiPropertyOptional({
    type: GroupDefaultsDto,
    description: 'Fill every inheritable field of a member not listed in its `overrides`. Sending it replaces the whole block.',
  })
  @Optional()
  @IsNested(() => GroupDefaultsDto)
  defaults?: GroupDefaultsDto;

  @ApiPropertyOptional(mapSchema(METADATA_LIMITS, 'String keys to string values, returned on read.'))
  @Optional()
  @IsMetadata()
  metadata?: Record<string, string>;
}

/** PATCH: every field optional (absent leaves it alone; `null` is refused); `defaults` is replaced whole. */
export class AgentGroupPatchDto extends PartialType(AgentGroupInputDto, { skipNullProperties: false }) {}

export class AgentGroupDto extends AgentGroupInputDto {
  @ApiProperty({ example: 'agrp_7Hk2…' }) id: string;
  @ApiProperty({ enum: ['agent_group'] }) object: 'agent_group';
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

export class AgentGroupListDto {
  @ApiProperty({ enum: ['list'] }) object: 'list';
  @ApiProperty({ type: [AgentGroupDto] }) data: AgentGroupDto[];
  @ApiProperty() has_more: boolean;
  @ApiPropertyOptional({ description: 'Pass as starting_after for the next page; absent on the last page.' })
  next_cursor?: string;
}

export class AgentGroupMemberDifferenceDto {
  @ApiProperty({ enum: INHERITABLE_FIELDS, description: 'The inheritable field.' }) field: InheritableField;
  @ApiProperty({ ...ANY_JSON, description: "The member's effective value." }) agent: unknown;
  @ApiProperty({ ...ANY_JSON, description: "The group's default." }) group: unknown;
}

export class AgentGroupMemberDto {
  @ApiProperty() agent_id: string;
  @ApiProperty() name: string;

  @ApiPropertyOptional({ enum: INHERITABLE_FIELDS, isArray: true, description: 'The fields the agent claimed (its `overrides`).' })
  overrides?: InheritableField[];

  @ApiPropertyOptional({
    type: [AgentGroupMemberDifferenceDto],
    description: "Only fields whose values actually differ from the group's defaults.",
  })
  differences?: AgentGroupMemberDifferenceDto[];
}

export class AgentGroupMembersDto {
  @ApiProperty({ enum: ['agent_group_members'] }) object: 'agent_group_members';
  @ApiProperty() group_id: string;
  @ApiProperty({ type: [AgentGroupMemberDto] }) members: AgentGroupMemberDto[];
  @ApiProperty({ type: 'integer', description: 'Members that differ from the group defaults.' }) differing: number;
}

export class DeletedAgentGroupDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['agent_group'] }) object: 'agent_group';
  @ApiProperty({ enum: [true] }) deleted: true;
}
