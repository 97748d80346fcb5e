import { status as GrpcStatus } from '@grpc/grpc-js';
import { FieldProblem, PROBLEMS, ProblemCode } from '@parley/contracts';
import { isDatabaseUnavailable } from '@parley/persistence';

/** Seconds a client is told to wait (`Retry-After`) while the database is unreachable. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * An error with a stable public code. Services throw it; it crosses gRPC as a status plus a JSON detail and the
 * gateway renders it as problem+json, so the caller sees the same code whichever service raised it.
 */
export class AppError extends Error {
  constructor(
    readonly code: ProblemCode,
    message: string,
    readonly errors?: FieldProblem[],
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }

  static notFound(what = 'object'): AppError {
    return new AppError('not_found', `No such ${what}.`);
  }

  static validation(errors: FieldProblem[]): AppError {
    return new AppError('validation_error', 'The request body has invalid fields.', errors);
  }

  get status(): number {
    return PROBLEMS[this.code].status;
  }

  /**
   * Any failure as the caller should see it: an AppError as is; the database unreachable (an outage, whichever
   * query met it) as 503 `service_unavailable` with `retry_after_seconds`; anything else `internal_error`.
   */
  static from(error: unknown): AppError {
    if (error instanceof AppError) return error;
    if (isDatabaseUnavailable(error)) {
      return new AppError('service_unavailable', 'The database is unreachable; retry shortly.', undefined, { retry_after_seconds: DATABASE_RETRY_AFTER_SECONDS });
    }
    return new AppError('internal_error', 'Internal error.');
  }
}

const GRPC_BY_CODE: Record<ProblemCode, GrpcStatus> = {
  unauthenticated: GrpcStatus.UNAUTHENTICATED,
  permission_denied: GrpcStatus.PERMISSION_DENIED,
  not_found: GrpcStatus.NOT_FOUND,
  invalid_request: GrpcStatus.INVALID_ARGUMENT,
  validation_error: GrpcStatus.INVALID_ARGUMENT,
  conflict: GrpcStatus.FAILED_PRECONDITION,
  idempotency_conflict: GrpcStatus.ABORTED,
  payload_too_large: GrpcStatus.INVALID_ARGUMENT,
  uri_too_long: GrpcStatus.INVALID_ARGUMENT,
  request_timeout: GrpcStatus.INVALID_ARGUMENT,
  headers_too_large: GrpcStatus.INVALID_ARGUMENT,
  unsupported_media_type: GrpcStatus.INVALID_ARGUMENT,
  rate_limited: GrpcStatus.RESOURCE_EXHAUSTED,
  plan_limit_reached: GrpcStatus.RESOURCE_EXHAUSTED,
  not_implemented: GrpcStatus.UNIMPLEMENTED,
  internal_error: GrpcStatus.INTERNAL,
  service_unavailable: GrpcStatus.UNAVAILABLE,
};

interface WireError {
  code: ProblemCode;
  message: string;
  errors?: FieldProblem[];
  extra?: Record<string, unknown>;
}

export function toGrpcError(error: unknown): { code: GrpcStatus; details: string } {
  const app = AppError.from(error);
  const wire: WireError = { code: app.code, message: app.message, errors: app.errors, extra: app.extra };
  return { code: GRPC_BY_CODE[app.code], details: JSON.stringify(wire) };
}

/**
 * Turns a failed gRPC call back into an AppError: our own services send a JSON detail; transport failures
 * (peer down, deadline passed) become `service_unavailable`.
 */
export function fromGrpcError(error: unknown, target: string): AppError {
  const e = error as { code?: number; details?: string };
  const wire = ourWireError(e?.details);
  if (e?.code === GrpcStatus.UNAVAILABLE || e?.code === GrpcStatus.DEADLINE_EXCEEDED || e?.code === GrpcStatus.CANCELLED) {
    // A service's own refusal that says when to retry (its database is down, it is at capacity) keeps its words
    // and advice; any other UNAVAILABLE is the peer itself being unreachable.
    if (wire?.code === 'service_unavailable' && wire.extra?.['retry_after_seconds'] !== undefined) return new AppError(wire.code, wire.message, wire.errors, wire.extra);
    return new AppError('service_unavailable', `The ${target} service is temporarily unavailable; retry shortly.`);
  }
  return wire ? new AppError(wire.code, wire.message, wire.errors, wire.extra) : new AppError('internal_error', 'Internal error.');
}

function ourWireError(details: string | undefined): WireError | undefined {
  try {
    const wire = JSON.parse(details ?? '') as WireError;
    if (wire && typeof wire.code === 'string' && Object.hasOwn(PROBLEMS, wire.code)) return wire;
  } catch {
    // not one of ours
  }
  return undefined;
}

export function grpcStatusName(code: number | undefined): string {
  return (code !== undefined && GrpcStatus[code]) || 'UNKNOWN';
}
