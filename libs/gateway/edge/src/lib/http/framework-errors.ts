import { STATUS_CODES } from 'node:http';
import { Socket } from 'node:net';
import { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { newRequestId } from '@parley/observability';
import { AppError } from '@parley/rpc';
import { rateLimitHeaders } from '../edge/rate-limit';
import { lingeringClose } from './linger';
import { sendProblem, toProblem } from './problem';

/**
 * HTTP/1.1 requires Host (RFC 9112, section 3.2). Node's own check would answer an empty 400 before Fastify sees
 * the request, so it is switched off (requireHostHeader) and made here, where the answer is a problem.
 */
export function protocolError(request: FastifyRequest): AppError | undefined {
  if (request.raw.httpVersion === '1.1' && !request.headers.host) {
    return new AppError('invalid_request', 'An HTTP/1.1 request must carry a Host header.');
  }
  return undefined;
}

/** Errors of Fastify's router, raised before any hook (bad percent-encoding, an over-long path parameter). */
function onFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  request.server.commonHeaders.apply(request, reply).then(
    ({ refusal }) => sendProblem(reply, request, refusal ?? error),
    (failure: unknown) => sendProblem(reply, request, failure),
  );
}

/** The problem for an error Node's HTTP parser raised (malformed request line or headers, timeouts). */
export function parserProblem(error: NodeJS.ErrnoException): AppError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('headers_too_large', 'The request headers are larger than the server accepts.');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request was not received in time.');
    default:
      return new AppError('invalid_request', 'The request is not valid HTTP/1.1.');
  }
}

/** A complete HTTP/1.1 problem response, written on the socket itself when no request object exists. */
export function rawProblemResponse(error: AppError, requestId: string, headers: Record<string, string>): string {
  const problem = toProblem(error, requestId);
  const body = JSON.stringify(problem);
  const head = [
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}`,
    'content-type: application/problem+json',
    `content-length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${requestId}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'connection: close',
  ];
  return `${head.join('\r\n')}\r\n\r\n${body}`;
}

/** Connections answered for a parser error: Node's parser fails again on each chunk the client still sends. */
const answered = new WeakSet<Socket>();

/**
 * Fastify calls it bound to the instance, for errors Node's HTTP parser raises before Fastify has a request. The
 * answer is followed by a lingering close, so a client still sending its request (a 20 KB URL before a large body)
 * reads the answer instead of a reset.
 */
function onClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer; an answered one is lingering.
  if (error.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
  answered.add(socket);
  const problem = parserProblem(error);
  this.commonHeaders.forSocket(socket.remoteAddress ?? 'unknown').then(
    (count) => {
      if (!socket.writable) return socket.destroy();
      socket.write(rawProblemResponse(problem, newRequestId(), rateLimitHeaders(count)));
      lingeringClose(socket);
    },
    () => socket.destroy(),
  );
}

/** Server options that route every framework and protocol error through the problem writer. */
export const frameworkErrorOptions: Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler'> & { http: { requireHostHeader: boolean } } = {
  frameworkErrors: onFrameworkError,
  clientErrorHandler: onClientError,
  http: { requireHostHeader: false },
};
