import { DEFAULT_SUCCESS_END_REASONS, type SuccessCriteria } from '@parley/contracts';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNested, IsText, IsTextList, Optional, Satisfies, textListSchema } from '../http/validators';

/*
 * What counts as a successful call, as an agent's `post_call.success` and a workflow's `success` take it (one
 * contract type, libs/contracts success.ts). Shape only: whether the end reasons are known and the field is one the
 * agent extracts is the owning service's check (successCriteriaProblems), a 422 with the same problem shape.
 */

export const END_REASONS_MAX = 20;
const END_REASON_MAX = 64;

export class ExtractedFieldDto {
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'booked', description: "A field of the agent's `post_call.extraction`." })
  @IsText(200, { min: 1 })
  name: string;

  @ApiPropertyOptional({
    oneOf: [{ type: 'string', maxLength: 500 }, { type: 'number' }, { type: 'boolean' }],
    example: true,
    description: 'The value that counts as success (compared as text). Absent: the field present and truthy.',
  })
  @Optional()
  @Satisfies(
    'isScalar',
    (v) => (typeof v === 'string' && v.length <= 500) || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)),
    '$property must be a string (at most 500 characters), a number or a boolean',
  )
  equals?: string | number | boolean;
}

export class SuccessDto implements SuccessCriteria {
  @ApiPropertyOptional({
    ...textListSchema({ maxItems: END_REASONS_MAX, maxLength: END_REASON_MAX }, "The call's end reasons that count as success (at least one)."),
    default: [...DEFAULT_SUCCESS_END_REASONS],
    example: [...DEFAULT_SUCCESS_END_REASONS],
  })
  @Optional()
  @IsTextList({ maxItems: END_REASONS_MAX, maxLength: END_REASON_MAX })
  end_reasons?: string[];

  @ApiPropertyOptional({
    type: ExtractedFieldDto,
    description: "A post-call extracted field that decides success besides the end reason: the verdict then waits for the call's analysis.",
  })
  @Optional()
  @IsNested(() => ExtractedFieldDto)
  extracted_field?: ExtractedFieldDto;
}
