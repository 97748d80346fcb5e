export type IngestErrorCode = 'unsupported_type' | 'malformed' | 'too_large' | 'empty' | 'fetch_failed';

/**
 * Why a document could not be ingested. `message` is written for the person who gave the document (it is stored
 * as the document's failure reason); `code` is for the caller to map (e.g. too_large → 413, the others → 422).
 */
export class IngestError extends Error {
  override readonly name = 'IngestError';

  constructor(
    readonly code: IngestErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The message of an unknown thrown value, for a reason ("…: <what the library said>"). */
export function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = message.split('\n')[0].trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line || 'unknown error';
}
