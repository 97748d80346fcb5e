import { decodePosition, Position } from '@parley/persistence';
import { AppError } from './app-error';

/** The page size a list RPC serves: 1-100, default 20 (the gateway has already refused anything else). */
export function pageLimit(limit: number): number {
  return Math.min(Math.max(limit || 20, 1), 100);
}

/** The keyset position a list RPC resumes after; a malformed one is the caller's bad cursor (422). */
export function pagePosition(after: string): Position | undefined {
  try {
    return decodePosition(after);
  } catch {
    throw AppError.validation([{ field: 'starting_after', message: 'is not a valid cursor' }]);
  }
}
