import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';
import { AppError } from '@parley/rpc';
import { CallsClient } from '../calls/calls.client';
import { ApiKeysRepository, Principal } from './api-keys.repository';
import { Permission, PERMISSION_KEY, ROLE_PERMISSIONS } from './permissions';

const PUBLIC = 'parley:public';
/** Marks a route that needs no API key (health, OpenAPI). */
export const Public = () => SetMetadata(PUBLIC, true);

const CONSOLE = 'parley:console-token';
/**
 * Marks a route an operator console's browser may call with its console token (`Bearer rtk_…`, role `console`)
 * besides an API key; `only`: the console token alone (an API key is refused, 401).
 */
export const ConsoleTokenAllowed = (only: 'only' | 'also' = 'also') => SetMetadata(CONSOLE, only);
/** What a console token may do, whatever the route asks: watch and claim calls. */
const CONSOLE_PERMISSIONS: ReadonlySet<Permission> = new Set<Permission>(['calls:read', 'calls:write']);

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

const BEARER = /^Bearer (vsk_[A-Za-z0-9_-]{16,128})$/;
/** A realtime token (`rtk_` + base64url claims + `.` + MAC): only a console token authenticates an HTTP request. */
const CONSOLE_BEARER = /^Bearer (rtk_[A-Za-z0-9_-]{16,2048}\.[A-Za-z0-9_-]{16,128})$/;
const KEY_IN_QUERY = /(^|[?&])[^=&]*=(vsk|rtk)_|(^|[?&])(api_key|apikey|key|access_token|token)=/i;

/**
 * Authentication and authorisation, in one place for every route. Every route needs `Authorization: Bearer
 * vsk_…` unless marked public, and the permission it declares (403 `permission_denied` naming it otherwise). A key put in the query string is
 * refused outright (it would end up in proxy logs); the URL is never logged with it. Routes marked
 * ConsoleTokenAllowed also take an operator console's token (verified by the calls service, which signs them): a
 * principal of its account holding calls:read and calls:write only, with the console's `operator`.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysRepository,
    private readonly calls: CallsClient,
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
    const consoleRoute = this.reflector.get<'only' | 'also' | undefined>(CONSOLE, context.getHandler());
    const consoleToken = CONSOLE_BEARER.exec(header);
    if (consoleToken) {
      if (!consoleRoute) {
        throw new AppError('unauthenticated', 'A console token (rtk_…) only opens the ringing stream, claims calls and refreshes itself; this route takes an API key.');
      }
      request.principal = await this.consolePrincipal(consoleToken[1], this.reflector.get<Permission | undefined>(PERMISSION_KEY, context.getHandler()));
      return true;
    }
    if (consoleRoute === 'only') {
      throw new AppError('unauthenticated', 'This route takes an operator console’s token (Bearer rtk_…), not an API key; mint one with POST /v1/realtime/tokens.');
    }
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

  private async consolePrincipal(token: string, needed: Permission | undefined): Promise<Principal> {
    const verified = await this.calls.call('verifyConsoleToken', (s, md) => s.verifyConsoleToken({ token }, md));
    if (!needed || !CONSOLE_PERMISSIONS.has(needed)) {
      throw new AppError('permission_denied', `A console token lacks the permission ${needed}.`, undefined, needed ? { permission: needed } : undefined);
    }
    return { accountId: verified.account_id, role: 'member', keyId: '', operator: verified.operator, sessionExpiresAt: new Date(verified.session_expires_at) };
  }
}
