import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
import { inspectBody, inspectParams, inspectQuery } from './input-hygiene';

/**
 * Every route's input, checked once before any pipe transforms it or any service stores it: path ids, query
 * parameters and the parsed body (see input-hygiene). Runs after authentication, so an unauthenticated caller learns
 * nothing from it.
 */
@Injectable()
export class InputHygieneGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const refusal =
      inspectParams((request.params ?? {}) as Record<string, unknown>) ??
      inspectQuery((request.query ?? {}) as Record<string, unknown>) ??
      inspectBody(request.body);
    if (refusal) throw refusal;
    return true;
  }
}
