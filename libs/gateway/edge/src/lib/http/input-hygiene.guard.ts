import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { inspectBody, inspectParams, inspectQuery } from './input-hygiene';
import { inspectResourceId, resourceIdShape } from './resource-id';

/**
 * Every route's input, checked once before any pipe transforms it or any service stores it: path ids (unstorable
 * text, and the shape the resource's ids have: see ResourceId), query parameters and the parsed body (see
 * input-hygiene). Runs after authentication, so an unauthenticated caller learns nothing from it.
 */
@Injectable()
export class InputHygieneGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const params = (request.params ?? {}) as Record<string, unknown>;
    const refusal =
      inspectParams(params) ??
      inspectResourceId(params, resourceIdShape(this.reflector, context.getClass())) ??
      inspectQuery((request.query ?? {}) as Record<string, unknown>) ??
      inspectBody(request.body);
    if (refusal) throw refusal;
    return true;
  }
}
