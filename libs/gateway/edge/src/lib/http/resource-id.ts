import { SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { isWellFormedId } from '@parley/persistence';
import { AppError } from '@parley/rpc';

const RESOURCE_ID = 'parley:resource-id';

export interface ResourceIdShape {
  /** The prefix the owning service gives newId (`agt`, `call`). */
  prefix: string;
  /** The resource, as a 404 names it. */
  name: string;
}

/**
 * Declares the shape of the `:id` path parameter of a controller's routes. Every controller with an `:id` route
 * declares it (a test holds every one to it), and InputHygieneGuard answers 404 for an id the owning service could
 * not have given before any service or query sees it.
 */
export const ResourceId = (prefix: string, name: string) => SetMetadata<string, ResourceIdShape>(RESOURCE_ID, { prefix, name });

export function resourceIdShape(reflector: Reflector, controller: object): ResourceIdShape | undefined {
  return reflector.get<ResourceIdShape | undefined>(RESOURCE_ID, controller as never);
}

/** not_found for an `id` parameter that cannot name an object of the resource. */
export function inspectResourceId(params: Record<string, unknown>, shape: ResourceIdShape | undefined): AppError | undefined {
  const id = params['id'];
  return shape && typeof id === 'string' && !isWellFormedId(shape.prefix, id) ? AppError.notFound(shape.name) : undefined;
}
