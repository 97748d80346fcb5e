/**
 * Why a speech provider failed, for the engine's fallback decision: `http` (an error status, see `status`),
 * `timeout`, `aborted` (the caller's AbortSignal: barge-in or hang-up; never a reason to fall back),
 * `connection` (unreachable or dropped), `invalid_response` (an answer it could not use).
 */
export type SpeechErrorCode = 'http' | 'timeout' | 'aborted' | 'connection' | 'invalid_response';

/** Every failure of a SpeechToText or TextToSpeech surfaces as this error. */
export class SpeechError extends Error {
  override readonly name = 'SpeechError';
  readonly code: SpeechErrorCode;
  /** The provider's name (`deepgram`, `elevenlabs`, …). */
  readonly provider: string;
  readonly status: number | undefined;

  constructor(message: string, options: { code: SpeechErrorCode; provider: string; status?: number; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.provider = options.provider;
    this.status = options.status;
  }
}
