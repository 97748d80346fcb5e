import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { Reflector } from '@nestjs/core';
import { ApiBody } from '@nestjs/swagger';
import { FastifyRequest } from 'fastify';
import { AppError } from '@parley/rpc';

/** Whether the handler reads a body: it has a @Body() parameter. */
function takesBody(context: ExecutionContext): boolean {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), context.getHandler().name) ?? {}) as Record<string, unknown>;
  return Object.keys(args).some((key) => key.startsWith(`${RouteParamtypes.BODY}:`));
}

/**
 * An operation whose handler takes no @Body() takes no body, whatever its method, so a new body-less route cannot
 * forget to refuse one: any body but none or `{}` is 400 `invalid_request` naming the fields. The contract refuses
 * unknown fields everywhere, and a route that ignored them would act on a request its caller meant differently.
 * A global guard, so the refusal comes before the handler (and before idempotency replays): nothing happens.
 */
@Injectable()
export class NoBodyGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http' || takesBody(context)) return true;
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

/** Publishes an operation without a body (enforced for every such handler by NoBodyGuard) as an optional empty object. */
export function NoBody() {
  return ApiBody({
    required: false,
    description: 'No body. Send none or `{}`; anything else is 400 `invalid_request` and nothing happens.',
    schema: { type: 'object', additionalProperties: false, maxProperties: 0 },
  });
}
