import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
import { Principal } from './api-keys.repository';

/** The authenticated caller; set by AuthGuard on every non-public route. */
export const CurrentPrincipal = createParamDecorator(
  (_: unknown, context: ExecutionContext): Principal => context.switchToHttp().getRequest<FastifyRequest>().principal!,
);
