import { status as GrpcStatus } from '@grpc/grpc-js';
import { FieldProblem, PROBLEMS, ProblemCode } from '@parley/contracts';

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
  const app = error instanceof AppError ? error : new AppError('internal_error', 'Internal error.');
  const wire: WireError = { code: app.code, message: app.message, errors: app.errors, extra: app.extra };
  return { code: GRPC_BY_CODE[app.code], details: JSON.stringify(wire) };
}

/**
 * Turns a failed gRPC call back into an AppError: our own services send a JSON detail; transport failures
 * (peer down, deadline passed) become `service_unavailable`.
 */
export function fromGrpcError(error: unknown, target: string): AppError {
  const e = error as { code?: number; details?: string };
  if (e?.code === GrpcStatus.UNAVAILABLE || e?.code === GrpcStatus.DEADLINE_EXCEEDED || e?.code === GrpcStatus.CANCELLED) {
    return new AppError('service_unavailable', `The ${target} service is temporarily unavailable; retry shortly.`);
  }
  try {
    const wire = JSON.parse(e?.details ?? '') as WireError;
    if (wire && typeof wire.code === 'string' && Object.hasOwn(PROBLEMS, wire.code)) {
      return new AppError(wire.code, wire.message, wire.errors, wire.extra);
    }
  } catch {
    // not one of ours
  }
  return new AppError('internal_error', 'Internal error.');
}

export function grpcStatusName(code: number | undefined): string {
  return (code !== undefined && GrpcStatus[code]) || 'UNKNOWN';
}
