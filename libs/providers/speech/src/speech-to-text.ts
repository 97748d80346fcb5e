import { SpeechError } from './speech-error';

/**
 * Streaming speech recognition as the voice engine uses it: one stream per caller turn or per call, fed PCM16 mono
 * (20 ms frames, longer pieces while the caller is quiet), answering with transcripts. Streaming vendors (Deepgram live) transcribe as audio
 * arrives; request/response vendors (OpenAI-compatible transcription) buffer and transcribe on `finalize()`.
 */
export interface SttOptions {
  /** BCP 47 language of the caller, e.g. `en-US`. */
  language: string;
  /** Sample rate of the PCM written, e.g. 8000 for a phone line. */
  sampleRate: number;
  /** Vendor model, when the agent names one. */
  model?: string;
}

export type SttEvent =
  /** Interim words, may still change. */
  | { type: 'partial'; text: string }
  /**
   * Settled words of one stretch of speech. `endOfTurn` when the vendor also judged the caller's turn over
   * (Deepgram `speech_final` / `UtteranceEnd`; always true after `finalize()`).
   */
  | { type: 'final'; text: string; endOfTurn: boolean; language?: string };

export interface SttStreamHandlers {
  onTranscript(event: SttEvent): void;
  /** The stream failed and is closed; the engine may fall back to another provider. */
  onError(error: SpeechError): void;
}

export interface SttStream {
  /** PCM16 mono at the stream's sample rate, of any length: the next audio after what was written before. */
  write(pcm: Int16Array): void;
  /** The caller's turn is over (the engine's VAD says so): settle and report what was said. */
  finalize(): void;
  /** Ends the stream; no event follows. */
  close(): Promise<void>;
}

export interface SpeechToText {
  /** The provider's name as deployments and language entries name it (`deepgram`, `openai`, …). */
  readonly name: string;
  /** Opens a recognition stream; rejects with a SpeechError when the vendor cannot be reached. */
  open(options: SttOptions, handlers: SttStreamHandlers): Promise<SttStream>;
}
