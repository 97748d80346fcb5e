/**
 * Streaming speech synthesis as the voice engine uses it: one request per sentence, audio back in chunks
 * as the vendor produces it, cancelled at once through the AbortSignal (barge-in).
 */
export interface SynthesisRequest {
  text: string;
  /** BCP 47 language of the text, e.g. `en-US`. */
  language: string;
  /** The vendor's voice id; empty = the provider's default voice for the language. */
  voiceId?: string;
  /** Vendor model, when the agent names one. */
  model?: string;
  /** 0.25-4, 1 = normal. */
  speed?: number;
  /** 0.25-4, 1 = normal (providers without pitch control ignore it). */
  pitch?: number;
  signal: AbortSignal;
}

/** A chunk of synthesized audio: PCM16 mono at `sampleRate`. */
export interface SpeechChunk {
  pcm: Int16Array;
  sampleRate: number;
}

export interface TextToSpeech {
  /** The provider's name as deployments and language entries name it (`elevenlabs`, `openai`, `local`, …). */
  readonly name: string;
  /**
   * Audio for `text`, chunk by chunk. Throws a SpeechError (`aborted` once the signal fires; the iterator then
   * stops at once and the vendor request is cancelled).
   */
  synthesize(request: SynthesisRequest): AsyncIterable<SpeechChunk>;
}
