import { SpeechChunk, SpeechError, SynthesisRequest, TextToSpeech } from '@parley/speech';
import { Clock } from './clock';
import { engineMetrics } from './metrics';

/** A chunk as the fallback chain gives it: which provider produced it. */
export interface ServedChunk extends SpeechChunk {
  provider: string;
}

export interface TtsFallbackOptions {
  clock: Clock;
  /** Voice per provider for the providers after the first (the request's voiceId is the first one's). */
  voices: Record<string, string>;
  /** Give up on a provider that has produced no audio after this long and try the next. */
  firstAudioTimeoutMs: number;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

/**
 * Synthesis over an ordered list of providers, itself a TextToSpeech: a provider that fails, or stays silent past
 * the first-audio timeout, before producing any audio hands the sentence to the next. Once audio has flowed, a
 * failure is thrown as is (no other voice finishes a sentence begun). When every provider fails the stream ends
 * without audio.
 */
export class FallbackTextToSpeech implements TextToSpeech {
  readonly name: string;

  constructor(
    private readonly providers: TextToSpeech[],
    private readonly options: TtsFallbackOptions,
  ) {
    this.name = providers[0]?.name ?? 'none';
  }

  async *synthesize(request: SynthesisRequest): AsyncIterable<ServedChunk> {
    const { clock, firstAudioTimeoutMs: timeoutMs } = this.options;
    const signal = request.signal;
    for (let i = 0; i < this.providers.length && !signal.aborted; i++) {
      const tts = this.providers[i];
      const attempt = new AbortController();
      const abort = () => attempt.abort();
      signal.addEventListener('abort', abort);
      const started = clock.now();
      let produced = false;
      const timer = clock.setTimeout(() => !produced && attempt.abort(), timeoutMs);
      try {
        const voiceId = i === 0 ? request.voiceId : (this.options.voices[tts.name] ?? '');
        for await (const chunk of tts.synthesize({ ...request, voiceId, signal: attempt.signal })) {
          if (attempt.signal.aborted) break;
          if (!chunk.pcm.length) continue;
          if (!produced) engineMetrics.stageLatency.observe({ stage: 'tts_first_audio' }, (clock.now() - started) / 1000);
          produced = true;
          yield { pcm: chunk.pcm, sampleRate: chunk.sampleRate, provider: tts.name };
        }
        if (!attempt.signal.aborted || signal.aborted || produced) return;
        throw new SpeechError(`no audio within ${timeoutMs} ms`, { code: 'timeout', provider: tts.name });
      } catch (error) {
        if (signal.aborted) return;
        // A voice that failed mid-sentence: what played stays played, the rest of the sentence is lost.
        if (produced) throw error;
        const next = this.providers[i + 1];
        this.options.log?.('synthesizer failed', { provider: tts.name, err: String(error) });
        if (next) engineMetrics.fallbacks.inc({ kind: 'tts', from: tts.name, to: next.name });
      } finally {
        clock.clearTimeout(timer);
        signal.removeEventListener('abort', abort);
      }
    }
  }
}
