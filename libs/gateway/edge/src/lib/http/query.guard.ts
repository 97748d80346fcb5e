import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { AppError } from '@parley/rpc';
import { QUERY_KEY } from './operation';

/** Refuses (400) query parameters a route does not declare, and parameters given more than once. */
@Injectable()
export class QueryGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const allowed = this.reflector.get<string[] | undefined>(QUERY_KEY, context.getHandler()) ?? [];
    const query = (context.switchToHttp().getRequest<FastifyRequest>().query ?? {}) as Record<string, unknown>;
    const unknown = Object.keys(query).filter((k) => !allowed.includes(k));
    if (unknown.length) {
      throw new AppError('invalid_request', `Unknown query parameter${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.`);
    }
    const repeated = Object.keys(query).filter((k) => Array.isArray(query[k]));
    if (repeated.length) throw new AppError('invalid_request', `Query parameter given more than once: ${repeated.join(', ')}.`);
    return true;
  }
}
