import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { AppError } from '@parley/rpc';
import { ApiKeysRepository, Principal } from './api-keys.repository';
import { Permission, PERMISSION_KEY, ROLE_PERMISSIONS } from './permissions';

const PUBLIC = 'parley:public';
/** Marks a route that needs no API key (health, OpenAPI). */
export const Public = () => SetMetadata(PUBLIC, true);

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

const BEARER = /^Bearer (vsk_[A-Za-z0-9_-]{16,128})$/;
const KEY_IN_QUERY = /(^|[?&])[^=&]*=vsk_|(^|[?&])(api_key|apikey|key|access_token|token)=/i;

/**
 * Authentication and authorisation, in one place for every route. Every route needs `Authorization: Bearer
 * vsk_…` unless marked public, and the permission it declares (403 `permission_denied` naming it otherwise). A key put in the query string is
 * refused outright (it would end up in proxy logs); the URL is never logged with it.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysRepository,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
    if (KEY_IN_QUERY.test(query)) {
      throw new AppError('unauthenticated', 'API keys must be sent in the Authorization header, never in the URL.');
    }
    const header = request.headers.authorization;
    if (!header) throw new AppError('unauthenticated', 'Missing Authorization: Bearer <API key> header.');
    const match = BEARER.exec(header);
    if (!match) throw new AppError('unauthenticated', 'Malformed Authorization header; expected Bearer vsk_….');
    const principal = await this.keys.authenticate(match[1]);
    if (!principal) throw new AppError('unauthenticated', 'The API key is unknown, revoked or expired.');
    request.principal = principal;
    // Fail closed: a route that forgot to declare its permission is refused rather than open.
    const needed = this.reflector.get<Permission | undefined>(PERMISSION_KEY, context.getHandler());
    if (!needed || !ROLE_PERMISSIONS[principal.role].has(needed)) {
      throw new AppError(
        'permission_denied',
        needed ? `This API key's role (${principal.role}) lacks the permission ${needed}.` : 'This route is not available to API keys.',
        undefined,
        needed ? { permission: needed } : undefined,
      );
    }
    return true;
  }
}
