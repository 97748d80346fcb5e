import { Controller, Delete, Get, Patch, Post, Put, Type } from '@nestjs/common';
import { ApiExtraModels, ApiParam, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { AppError } from '@parley/rpc';
import { ContractPath } from '../http/openapi';
import { BodyUndefinedYet } from '../http/no-body';
import { ProblemDto } from '../http/openapi-decorators';
import { Operation } from '../http/operation';
import { PLANNED_ROUTES, PlannedRoute } from './planned-routes';

const VERBS = { get: Get, post: Post, put: Put, patch: Patch, delete: Delete };

function plannedController(tag: string, routes: PlannedRoute[]): Type<unknown> {
  class Planned {}
  Object.defineProperty(Planned, 'name', { value: `${tag.replace(/\W/g, '')}Planned` });
  routes.forEach((route, i) => {
    const method = `${route.method}${route.path.replace(/\W+/g, '_')}_${i}`;
    const handler = () => {
      throw new AppError('not_implemented', `${route.method.toUpperCase()} ${route.path} is not available in this release yet.`);
    };
    // The OpenAPI operationId is built from the handler's name.
    Object.defineProperty(handler, 'name', { value: method });
    Object.defineProperty(Planned.prototype, method, { value: handler, writable: true, configurable: true });
    const descriptor = Object.getOwnPropertyDescriptor(Planned.prototype, method)!;
    const decorators: MethodDecorator[] = [
      VERBS[route.method](route.path.replace(/\{(\w+)\}/g, ':$1')),
      ContractPath(route.path),
      BodyUndefinedYet(),
      Operation({
        summary: route.summary,
        description: 'Not implemented in this release: answers 501 `not_implemented` until the resource lands.',
        permission: route.permission,
        list: route.list,
        idempotent: route.idempotent,
      }),
      ...[...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ApiParam({ name, required: true, schema: { type: 'string' } })),
      ApiResponse({
        status: 501,
        description: '`not_implemented`',
        content: { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemDto) } } },
      }),
    ];
    for (const decorate of decorators) decorate(Planned.prototype, method, descriptor);
    Object.defineProperty(Planned.prototype, method, descriptor);
  });
  Controller()(Planned);
  ApiTags(tag)(Planned);
  ApiExtraModels(ProblemDto)(Planned);
  return Planned;
}

/** One controller per tag for the routes not implemented yet. */
export const PLANNED_CONTROLLERS = Object.entries(PLANNED_ROUTES).map(([tag, routes]) => plannedController(tag, routes));
