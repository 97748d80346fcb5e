import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import { FastifyReply, FastifyRequest } from 'fastify';
import { FieldProblem, PROBLEM_TYPE_BASE, PROBLEMS, ProblemCode } from '@parley/contracts';
import { httpProblems, serviceLogger } from '@parley/observability';
import { AppError } from '@parley/rpc';
import { ReplayedResponse } from '../edge/replayed-response';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  request_id: string;
  errors?: FieldProblem[];
  retry_after_seconds?: number;
}

const log = serviceLogger('gateway');

const CODE_BY_STATUS: Record<number, ProblemCode> = {
  400: 'invalid_request',
  401: 'unauthenticated',
  403: 'permission_denied',
  404: 'not_found',
  405: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'validation_error',
  429: 'rate_limited',
  501: 'not_implemented',
  503: 'service_unavailable',
};

/** Errors raised by Fastify itself while reading the request, before any handler runs. */
function fromFastify(error: { code?: string; statusCode?: number; message?: string }): AppError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is larger than the accepted size.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', 'Content-Type must be application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_request', 'The body is empty but Content-Type says JSON.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('invalid_request', 'Content-Length does not match the body.');
    case 'FST_ERR_BAD_URL':
      return new AppError('invalid_request', 'The path is not valid percent-encoded UTF-8.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError('uri_too_long', 'A path segment is longer than any identifier.');
  }
  if (error.statusCode === 400 && /JSON/i.test(error.message ?? '')) {
    return new AppError('invalid_request', 'The body is not valid JSON.');
  }
  return undefined;
}

/** What an error is answered as; pure, so a caller may ask before the answer is written (and logged). */
export function asAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const code = CODE_BY_STATUS[status] ?? (status >= 500 ? 'internal_error' : 'invalid_request');
    return new AppError(code, status === 404 ? 'No such route.' : error.message);
  }
  const e = (error ?? {}) as { code?: string; statusCode?: number; message?: string };
  return fromFastify(e) ?? AppError.from(error);
}

export function toProblem(error: unknown, requestId: string): Problem {
  const app = asAppError(error);
  if (app.code === 'internal_error' && !(error instanceof AppError) && !(error instanceof HttpException)) {
    log.error({ err: error }, 'unhandled error');
  }
  const { status, title } = PROBLEMS[app.code];
  return {
    type: `${PROBLEM_TYPE_BASE}/${app.code}`,
    title,
    status,
    detail: app.message,
    code: app.code,
    request_id: requestId,
    ...(app.errors ? { errors: app.errors } : {}),
    ...(app.extra ?? {}),
  };
}

export function sendProblem(reply: FastifyReply, request: FastifyRequest, error: unknown): void {
  const problem = toProblem(error, String(request.id));
  httpProblems.inc({ route: request.routeOptions?.url ?? 'unmatched', status: String(problem.status), code: problem.code });
  if (problem.retry_after_seconds !== undefined) reply.header('retry-after', String(problem.retry_after_seconds));
  void reply.status(problem.status).header('content-type', 'application/problem+json').send(problem);
}

/**
 * Every failure leaves the gateway as application/problem+json (RFC 9457) with a stable code. A replayed
 * idempotent response is written exactly as first sent.
 */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    if (exception instanceof ReplayedResponse) {
      void reply
        .status(exception.status)
        .header('idempotency-replayed', 'true')
        .header('content-type', 'application/json; charset=utf-8')
        .send(exception.body);
      return;
    }
    sendProblem(reply, http.getRequest<FastifyRequest>(), exception);
  }
}
