import { Operation } from './openapi';
import { Observed } from './send';

/** The classes of failure the fuzzer reports; each is a property every answer must keep. */
export type FailureClass =
  /** A 5xx, except 501 `not_implemented` where the document declares the operation planned. */
  | 'server-error'
  /** A 4xx or 5xx that is not application/problem+json with `code` and the response's own `request_id`. */
  | 'not-a-problem'
  /** An answer without X-Request-Id or one of the three X-RateLimit-* headers. */
  | 'missing-common-headers'
  /** No answer at all: a reset, a timeout, bytes that are not HTTP. */
  | 'no-answer';

export interface Violation {
  klass: FailureClass;
  status?: number;
  code?: string;
  detail: string;
}

function problemOf(body: string): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(body);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Which properties an answer breaks; `operation` is undefined for protocol errors sent over a socket. */
export function violations(observed: Observed, operation?: Operation): Violation[] {
  if (observed.error !== undefined) return [{ klass: 'no-answer', detail: observed.error }];
  const { status, headers, body } = observed;
  const problem = status >= 400 ? problemOf(body) : undefined;
  const code = typeof problem?.['code'] === 'string' ? (problem['code'] as string) : undefined;
  const found: Violation[] = [];
  const planned = status === 501 && code === 'not_implemented' && operation?.declaresNotImplemented;
  if (status >= 500 && !planned) found.push({ klass: 'server-error', status, code, detail: body.slice(0, 300) });
  if (status >= 400) {
    const type = headers['content-type'] ?? '';
    const requestId = headers['x-request-id'];
    const missing = [
      !/^application\/problem\+json/.test(type) && `content-type ${JSON.stringify(type)}`,
      !problem && 'a JSON object body',
      !code && '`code`',
      problem && (typeof problem['request_id'] !== 'string' || problem['request_id'] !== requestId) && '`request_id` equal to X-Request-Id',
    ].filter(Boolean);
    if (missing.length) found.push({ klass: 'not-a-problem', status, code, detail: `lacks ${missing.join(', ')}: ${body.slice(0, 200)}` });
  }
  const absent = [
    !/^req_/.test(headers['x-request-id'] ?? '') && 'x-request-id',
    ...['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].filter((h) => !/^\d+$/.test(headers[h] ?? '')),
  ].filter(Boolean);
  if (absent.length) found.push({ klass: 'missing-common-headers', status, code, detail: `without ${absent.join(', ')}` });
  return found;
}
