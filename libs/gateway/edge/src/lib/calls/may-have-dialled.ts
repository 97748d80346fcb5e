import { AppError } from '@parley/rpc';

/**
 * A 503 without `retry_after_seconds` is not a refusal before dialling (those carry it): the calls service may
 * have dialled before its answer was lost. Say so, and how to find the call, instead of "retry shortly".
 */
export function mayHaveDialled(error: unknown): unknown {
  if (!(error instanceof AppError) || error.code !== 'service_unavailable' || error.extra?.['retry_after_seconds'] !== undefined) return error;
  return new AppError(
    'service_unavailable',
    'The calls service did not confirm the call in time; it may have been placed. Retry with the same Idempotency-Key to get it ' +
      '(it is never dialled twice); without a key, look for it in GET /v1/calls before retrying.',
  );
}
