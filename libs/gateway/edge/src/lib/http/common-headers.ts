import { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '@parley/rpc';
import { RateLimitCount, RateLimiter, rateLimitHeaders } from '../edge/rate-limit';
import { decideCors } from './cors';
import { protocolError } from './framework-errors';

declare module 'fastify' {
  interface FastifyInstance {
    commonHeaders: CommonHeaders;
  }
}

export interface CommonHeadersOutcome {
  /** The request is over its rate limit: it answers this instead of reaching its route. */
  refusal?: AppError;
  /** A CORS preflight, answered by the gateway itself. */
  preflight: boolean;
}

/**
 * What every response of the gateway carries, whatever answers it (a route, the 404 handler, a framework error,
 * a protocol error on the socket): X-Request-Id, the route's CORS headers and X-RateLimit-*, the request being
 * counted against its bucket.
 */
export class CommonHeaders {
  constructor(
    readonly limiter: RateLimiter,
    private readonly allowedOrigins: readonly string[],
  ) {}

  async apply(request: FastifyRequest, reply: FastifyReply): Promise<CommonHeadersOutcome> {
    reply.header('x-request-id', String(request.id));
    const origin = request.headers.origin;
    const requestedMethod = request.headers['access-control-request-method'];
    const cors = decideCors(
      { method: request.method, url: request.url, origin, requestedMethod: typeof requestedMethod === 'string' ? requestedMethod : undefined },
      this.allowedOrigins,
    );
    reply.headers(cors.headers);
    const count = await this.limiter.take({ url: request.url, credential: request.headers.authorization, address: request.ip });
    reply.headers(rateLimitHeaders(count));
    return { refusal: count.exceeded ? this.limiter.refusal(count) : undefined, preflight: cors.preflight };
  }

  /** For an error the HTTP parser raised before any request existed: counted against the peer's address. */
  forSocket(address: string): Promise<RateLimitCount> {
    return this.limiter.take({ url: '', address });
  }
}

/**
 * Runs first on every request Fastify routes (matched or not). A callback-style hook: an async hook costs a
 * promise per request on every route.
 */
export function registerCommonHeaders(fastify: FastifyInstance, headers: CommonHeaders): void {
  fastify.decorate('commonHeaders', headers);
  fastify.addHook('onRequest', (request, reply, done) => {
    headers.apply(request, reply).then(({ refusal, preflight }) => {
      const error = refusal ?? protocolError(request);
      if (error) return done(error);
      if (preflight) return void reply.status(204).send();
      done();
    }, done);
  });
}
