import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiBody } from '@nestjs/swagger';
import { FastifyRequest } from 'fastify';
import { AppError } from '@parley/rpc';

/**
 * Refuses any body but none or `{}` on an operation that declares none: the contract refuses unknown fields
 * everywhere, and a route that ignored them would act on a request its caller meant differently. Runs as a
 * guard, so the refusal comes before the handler (and before idempotency replays): nothing happens.
 */
@Injectable()
export class NoBodyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const body = context.switchToHttp().getRequest<FastifyRequest>().body;
    if (body === undefined) return true;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      throw new AppError('invalid_request', 'This operation takes no body; send none or {}.');
    }
    const fields = Object.keys(body);
    if (!fields.length) return true;
    throw new AppError(
      'invalid_request',
      `This operation takes no body; unknown field${fields.length > 1 ? 's' : ''}: ${fields.join(', ')}.`,
      fields.map((field) => ({ field, message: 'is not a known field' })),
    );
  }
}

/** Declares an operation without a body: enforced by NoBodyGuard, published as an optional empty object. */
export function NoBody() {
  return applyDecorators(
    UseGuards(NoBodyGuard),
    ApiBody({
      required: false,
      description: 'No body. Send none or `{}`; anything else is 400 `invalid_request` and nothing happens.',
      schema: { type: 'object', additionalProperties: false, maxProperties: 0 },
    }),
  );
}
