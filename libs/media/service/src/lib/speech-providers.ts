import { ServiceConfig } from '@parley/config';
import { OpenAiCompatibleLlm } from '@parley/llm';
import { serviceLogger } from '@parley/observability';
import {
  DeepgramSpeechToText,
  ElevenLabsTextToSpeech,
  LocalTextToSpeech,
  OpenAiSpeechToText,
  OpenAiTextToSpeech,
  SpeechToText,
  TextToSpeech,
} from '@parley/speech';
import { EngineProviders, LineCache, vadFactory, VadKind } from '@parley/voice-engine';

/**
 * The providers this deployment offers, in STT_PROVIDERS / TTS_PROVIDERS order (the engine's fallback order
 * after a language entry's first choice). A named provider without credentials is left out, with a warning at
 * boot; `local` (the offline voice) needs none, so standalone mode always speaks. Fixed lines (greetings, prompts,
 * menus) are synthesized ahead into one cache for the worker's calls (LINE_CACHE_BYTES). Each call's VAD is VAD's
 * kind; Silero's model is loaded here, at boot, so a model that cannot load is logged before the first call.
 */
export function speechProviders(config: ServiceConfig): EngineProviders {
  const log = serviceLogger('media-worker');
  const openaiKey = config.OPENAI_SPEECH_API_KEY ?? config.LLM_API_KEY;
  const openaiBase = config.OPENAI_SPEECH_BASE_URL ?? config.LLM_BASE_URL;
  const sttByName: Record<string, () => SpeechToText | undefined> = {
    deepgram: () => (config.DEEPGRAM_API_KEY ? new DeepgramSpeechToText({ apiKey: config.DEEPGRAM_API_KEY, baseUrl: config.DEEPGRAM_BASE_URL }) : undefined),
    openai: () => (openaiKey ? new OpenAiSpeechToText({ apiKey: openaiKey, baseURL: openaiBase }) : undefined),
  };
  const ttsByName: Record<string, () => TextToSpeech | undefined> = {
    local: () => new LocalTextToSpeech({ workers: config.LOCAL_TTS_WORKERS }),
    elevenlabs: () => (config.ELEVENLABS_API_KEY ? new ElevenLabsTextToSpeech({ apiKey: config.ELEVENLABS_API_KEY, baseUrl: config.ELEVENLABS_BASE_URL }) : undefined),
    openai: () => (openaiKey ? new OpenAiTextToSpeech({ apiKey: openaiKey, baseUrl: openaiBase }) : undefined),
  };
  const build = <P>(names: string, table: Record<string, () => P | undefined>, kind: string): P[] =>
    names.split(',').flatMap((name) => {
      const provider = table[name]?.();
      if (!provider) log.warn({ provider: name }, `${kind} provider not available (unknown, or no credentials configured)`);
      return provider ? [provider] : [];
    });
  return {
    stt: build(config.STT_PROVIDERS, sttByName, 'speech recognition'),
    tts: build(config.TTS_PROVIDERS, ttsByName, 'speech synthesis'),
    llm: new OpenAiCompatibleLlm({ name: 'openai', baseURL: config.LLM_BASE_URL, apiKey: config.LLM_API_KEY, timeoutMs: 20_000, maxRetries: 0 }),
    lines: new LineCache(),
    vad: vadFactory(config.VAD as VadKind, { error: (message, fields) => log.error(fields ?? {}, message), warn: (message, fields) => log.warn(fields ?? {}, message) }),
  };
}
