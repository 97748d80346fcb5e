import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { ApiExtension, ApiHeader, ApiOperation, ApiQuery } from '@nestjs/swagger';
import { ProblemCode } from '@parley/contracts';
import { Public } from '../auth/auth.guard';
import { Permission, RequirePermission } from '../auth/permissions';
import { describeScope, ProjectScope, ProjectScoped } from '../auth/project-scope';
import { IDEMPOTENCY_FORWARDED, IdempotencyInterceptor } from '../edge/idempotency.interceptor';
import { ApiProblems } from './openapi-decorators';

export const QUERY_KEY = 'parley:query';

export interface OperationOptions {
  summary: string;
  description?: string;
  /** The permission the route needs, or `public` for routes that take no API key. */
  permission: Permission | 'public';
  /** Problem codes this route can answer besides the common ones. */
  problems?: ProblemCode[];
  /**
   * POST with side effects: honours Idempotency-Key. `forwarded`: the handler also hands the key to the owning
   * service, which answers a repeated key with what the first run made, so an interrupted request may run again.
   */
  idempotent?: boolean | 'forwarded';
  /** A list route: accepts `limit` and `starting_after` (plus `query`). */
  list?: boolean;
  /** Query parameters the route accepts; any other is refused with 400. */
  query?: string[];
  /**
   * How a key scoped to a project reaches this route (ProjectScope); absent: the route is account-wide and such a
   * key is refused (403).
   */
  project?: ProjectScope;
}

const LIST_QUERY = [
  ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } }),
  ApiQuery({
    name: 'starting_after',
    required: false,
    schema: { type: 'string' },
    description: 'The `next_cursor` of the previous page.',
  }),
];

/**
 * Declares a public operation once: its permission (enforced by AuthGuard and published as `x-permission`),
 * idempotency, accepted query parameters and every problem response, so code and OpenAPI cannot drift apart.
 */
export function Operation(options: OperationOptions) {
  const isPublic = options.permission === 'public';
  if (options.project === 'list' && !options.query?.includes('project_id')) {
    throw new Error(`${options.summary}: a route scoped as a list must accept the project_id query parameter`);
  }
  const scope = describeScope(options.project);
  const description = [
    options.description,
    isPublic ? 'No API key needed.' : `Requires the \`${options.permission}\` permission.`,
    isPublic ? undefined : scope.sentence,
    options.idempotent ? 'Honours `Idempotency-Key` for 24 hours.' : undefined,
  ]
    .filter(Boolean)
    .join('\n\n');
  return applyDecorators(
    isPublic ? Public() : RequirePermission(options.permission as Permission),
    ApiOperation({ summary: options.summary, description }),
    ...(isPublic ? [] : [ApiExtension('x-permission', options.permission), ApiExtension('x-project-scope', scope.extension)]),
    ...(options.project ? [ProjectScoped(options.project)] : []),
    SetMetadata(QUERY_KEY, [...(options.list ? ['limit', 'starting_after'] : []), ...(options.query ?? [])]),
    ...(options.list ? LIST_QUERY : []),
    ...(options.idempotent
      ? [
          // Only on these routes, not globally: every other request skips the layer entirely.
          UseInterceptors(IdempotencyInterceptor),
          SetMetadata(IDEMPOTENCY_FORWARDED, options.idempotent === 'forwarded'),
          ApiHeader({
            name: 'Idempotency-Key',
            required: false,
            description: 'Replays the first success for 24 hours when the same key and body are sent again; a refusal (4xx) is not kept.',
            schema: { type: 'string', maxLength: 255 },
          }),
        ]
      : []),
    ...(isPublic
      ? []
      : [
          ApiProblems(
            ...(options.problems ?? []),
            ...(options.list ? (['validation_error'] as const) : []),
            // Every route that honours a key can answer it (another body, still running, interrupted).
            ...(options.idempotent ? (['idempotency_conflict'] as const) : []),
            'permission_denied',
          ),
        ]),
  );
}
