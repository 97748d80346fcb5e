import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { FastifyServerOptions } from 'fastify';
import { GatewayConfig } from '@parley/config';
import { acceptRequestId, httpRequestDuration, runWithRequestId } from '@parley/observability';
import { AppError } from '@parley/rpc';
import { RateLimiter } from '../edge/rate-limit';
import { DOCUMENTS_ROUTE } from '../knowledge/knowledge-bases.controller';
import { RECIPIENTS_BODY_LIMIT_BYTES, RECIPIENTS_ROUTE, RUNS_ROUTE } from '../workflows/workflows.controller';
import { CommonHeaders, registerCommonHeaders } from './common-headers';
import { parseAllowedOrigins } from './cors';
import { frameworkErrorOptions } from './framework-errors';
import { lingerBeforeClose } from './linger';
import { buildOpenApiDocument, openApiYaml } from './openapi';

const JSON_TYPE = /^application\/([a-z.+-]*\+)?json\s*(;|$)/i;
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;
/**
 * Carrier webhooks (outside /v1) arrive form-encoded, as carriers send them (Nest's Fastify adapter parses that
 * type); everything else is JSON only.
 */
const FORM_PATHS = '/carriers/';

export function gatewayAdapterOptions(config: GatewayConfig): FastifyServerOptions {
  return {
    bodyLimit: config.BODY_LIMIT_BYTES,
    // A caller's well-formed X-Request-Id is kept (to trace across their systems); otherwise a new req_ id.
    genReqId: (req) => acceptRequestId(req.headers['x-request-id']),
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true },
    ...frameworkErrorOptions,
  };
}

/** Fastify-level behaviour every route shares: common headers, metrics, the OpenAPI document. */
export function configureGatewayHttp(app: NestFastifyApplication, config: GatewayConfig): void {
  const fastify = app.getHttpAdapter().getInstance();
  // A document comes whole in its JSON body (a file base64-encoded): that route takes up to its own limit, the
  // document's bytes checked exactly by the route once decoded. Routes are registered after this, at init.
  const documentBodyLimit = Math.max(config.BODY_LIMIT_BYTES, Math.ceil((config.KNOWLEDGE_MAX_DOCUMENT_BYTES * 4) / 3) + 64 * 1024);
  fastify.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (route.url === DOCUMENTS_ROUTE && methods.includes('POST')) route.bodyLimit = documentBodyLimit;
    // A page of up to 1000 workflow recipients (inline or CSV) has its own limit too.
    if ((route.url === RUNS_ROUTE || route.url === RECIPIENTS_ROUTE) && methods.includes('POST')) {
      route.bodyLimit = Math.max(config.BODY_LIMIT_BYTES, RECIPIENTS_BODY_LIMIT_BYTES);
    }
  });
  registerCommonHeaders(fastify, new CommonHeaders(app.get(RateLimiter), parseAllowedOrigins(config.CORS_ALLOWED_ORIGINS)));
  lingerBeforeClose(fastify.server);
  // Callback-style hooks: an async hook costs a promise per request on every route.
  fastify.addHook('onRequest', (request, reply, done) => {
    // Bodies are JSON only; refuse anything else before it is read (Fastify alone would parse it as text).
    const hasBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
    const type = request.headers['content-type'] ?? '';
    if (hasBody && !JSON_TYPE.test(type) && !(request.url.startsWith(FORM_PATHS) && FORM_TYPE.test(type))) {
      done(new AppError('unsupported_media_type', 'Send the body as application/json.'));
      return;
    }
    done();
  });
  // The route (guards, controller, its gRPC hops and logs) runs in the request's context: everything started
  // synchronously from done(), including the promises it creates, carries the request id.
  fastify.addHook('preHandler', (request, _reply, done) => runWithRequestId(String(request.id), done));
  fastify.addHook('onResponse', (request, reply, done) => {
    httpRequestDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });

  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  let yaml: string | undefined;
  const doc = () => (document ??= buildOpenApiDocument(app));
  fastify.get('/openapi.json', async (_req, reply) => reply.header('content-type', 'application/json').send(doc()));
  fastify.get('/openapi.yaml', async (_req, reply) => reply.header('content-type', 'application/yaml').send((yaml ??= openApiYaml(doc()))));
}
