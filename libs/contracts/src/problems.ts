/** Every stable error code of the public interface with its HTTP status and title. */
export const PROBLEMS = {
  unauthenticated: { status: 401, title: 'Unauthenticated' },
  permission_denied: { status: 403, title: 'Permission denied' },
  not_found: { status: 404, title: 'Not found' },
  invalid_request: { status: 400, title: 'Invalid request' },
  validation_error: { status: 422, title: 'Validation failed' },
  conflict: { status: 409, title: 'Conflict' },
  idempotency_conflict: { status: 409, title: 'Idempotency conflict' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  uri_too_long: { status: 414, title: 'URI too long' },
  request_timeout: { status: 408, title: 'Request timeout' },
  headers_too_large: { status: 431, title: 'Request header fields too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  rate_limited: { status: 429, title: 'Rate limited' },
  plan_limit_reached: { status: 402, title: 'Plan limit reached' },
  not_implemented: { status: 501, title: 'Not implemented' },
  internal_error: { status: 500, title: 'Internal error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
} as const;

export type ProblemCode = keyof typeof PROBLEMS;

export interface FieldProblem {
  field: string;
  message: string;
}

/** Base of the stable `type` links; each code's page is `${PROBLEM_TYPE_BASE}/<code>`. */
export const PROBLEM_TYPE_BASE = 'https://docs.parley.dev/errors';
