import { applyDecorators } from '@nestjs/common';
import { ApiBearerAuth, ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiPropertyOptions, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { PROBLEMS, ProblemCode } from '@parley/contracts';

export class FieldProblemDto {
  @ApiProperty({ example: 'languages[0].code' }) field: string;
  @ApiProperty() message: string;
}

export class ProblemDto {
  @ApiProperty({ description: 'Link to the explanation of the code.' }) type: string;
  @ApiProperty() title: string;
  @ApiProperty() status: number;
  @ApiProperty({ description: 'Human text; wording may change.' }) detail: string;
  @ApiProperty({ enum: Object.keys(PROBLEMS), description: 'Stable machine code.' }) code: string;
  @ApiProperty({ description: 'Matches X-Request-Id.' }) request_id: string;
  @ApiPropertyOptional({ type: [FieldProblemDto] }) errors?: FieldProblemDto[];
  @ApiPropertyOptional() retry_after_seconds?: number;
}

/** Problem responses every authenticated route can give, plus the route's own. */
const COMMON: ProblemCode[] = ['invalid_request', 'unauthenticated', 'rate_limited', 'internal_error', 'service_unavailable'];

export function ApiProblems(...codes: ProblemCode[]) {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of [...new Set([...codes, ...COMMON])]) {
    const status = PROBLEMS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return applyDecorators(
    ApiBearerAuth(),
    ApiExtraModels(ProblemDto),
    ...[...byStatus].map(([status, list]) =>
      ApiResponse({
        status,
        description: list.map((c) => `\`${c}\``).join(' or '),
        content: { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemDto) } } },
      }),
    ),
  );
}

/** The schema extension, and its value, on every field the API accepts but calls do not act on yet. */
export const PARLEY_STATUS = 'x-parley-status';
export const NOT_YET_SUPPORTED = 'not-yet-supported';

/**
 * Documents a field that is validated, stored and returned while calls ignore it (all of it, or the part `ignored`
 * names): the description says so and until what lands, and the schema carries `x-parley-status: not-yet-supported`.
 */
export function notYetActedOn(
  options: ApiPropertyOptions,
  until: string,
  ignored = 'stored and returned, ignored by calls',
): ApiPropertyOptions {
  const documented: ApiPropertyOptions = { ...options, description: `${options.description} Not yet acted on: ${ignored} until ${until} lands.` };
  // @nestjs/swagger copies extension keys into the schema but does not type them.
  return Object.assign(documented, { [PARLEY_STATUS]: NOT_YET_SUPPORTED });
}
