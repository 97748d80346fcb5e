import type { callsV1 } from '@parley/contracts';
import type { LlmProvider, LlmStreamEvent, LlmUsage, StreamRequest } from '@parley/llm';
import type { SpeechChunk, SpeechToText, SttOptions, SttStream, SttStreamHandlers, SynthesisRequest, TextToSpeech } from '@parley/speech';

/** What a usage line counts (UsageItem.kind, parley.calls.v1). */
export type UsageKind = 'stt_ms' | 'llm_input_tokens' | 'llm_output_tokens' | 'tts_characters';

/**
 * One media stream's usage of its vendors, counted where the requests leave: audio written to each recognizer
 * (ms, from the samples and the stream's rate), the tokens each model's streamed answers report (the usage the
 * OpenAI-compatible API sends last), the characters sent to each synthesizer. Running totals per (kind, provider,
 * model), reported as they stand (RecordUsage), so a report sent twice or late changes nothing.
 */
export class UsageMeter {
  private readonly lines = new Map<string, callsV1.UsageItem>();
  /** Samples written per recognizer line, kept exact (ms are derived from them). */
  private readonly samples = new Map<string, { count: number; rate: number }>();

  add(kind: UsageKind, provider: string, model: string, quantity: number): void {
    if (quantity > 0) this.line(kind, provider, model).quantity += quantity;
  }

  /** The running totals (a copy). */
  items(): callsV1.UsageItem[] {
    return [...this.lines.values()].map((l) => ({ ...l }));
  }

  /** Nothing counted yet. */
  get empty(): boolean {
    return this.lines.size === 0;
  }

  /** The recognizer, counting the audio written to each of its streams. */
  stt(provider: SpeechToText): SpeechToText {
    return {
      name: provider.name,
      open: async (options: SttOptions, handlers: SttStreamHandlers): Promise<SttStream> => {
        const stream = await provider.open(options, handlers);
        const count = this.audio(provider.name, options.model ?? '', options.sampleRate);
        return {
          write: (pcm) => {
            count(pcm.length);
            stream.write(pcm);
          },
          finalize: () => stream.finalize(),
          close: () => stream.close(),
        };
      },
    };
  }

  /** The synthesizer, counting the characters of each request sent. */
  tts(provider: TextToSpeech): TextToSpeech {
    return {
      name: provider.name,
      synthesize: (request: SynthesisRequest): AsyncIterable<SpeechChunk> => {
        this.add('tts_characters', provider.name, request.model ?? '', request.text.length);
        return provider.synthesize(request);
      },
    };
  }

  /** The model, counting the tokens its answers report (a streamed answer cut off reports none). */
  llm(provider: LlmProvider): LlmProvider {
    const count = (model: string, usage: LlmUsage | undefined) => {
      if (!usage) return;
      this.add('llm_input_tokens', provider.name, model, usage.inputTokens);
      this.add('llm_output_tokens', provider.name, model, usage.outputTokens);
    };
    return {
      name: provider.name,
      // A flow's intent routing asks for whole answers.
      complete: async (request) => {
        const result = await provider.complete(request);
        count(request.model, result.usage);
        return result;
      },
      async *stream(request: StreamRequest): AsyncGenerator<LlmStreamEvent> {
        for await (const event of provider.stream(request)) {
          if (event.type === 'done') count(request.model, event.usage);
          yield event;
        }
      },
    };
  }

  /** The line of (kind, provider, model), added (last) if new. */
  private line(kind: UsageKind, provider: string, model: string): callsV1.UsageItem {
    const key = `${kind}\u0000${provider}\u0000${model}`;
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = { kind, provider, model, quantity: 0 }));
    return line;
  }

  /**
   * Counts samples written to a recognizer stream. Called per frame, so the totals and the line are looked up once
   * per stream, not per frame.
   */
  private audio(provider: string, model: string, rate: number): (samples: number) => void {
    const key = `${provider}\u0000${model}`;
    let total = this.samples.get(key);
    if (!total) this.samples.set(key, (total = { count: 0, rate }));
    const counted = total;
    let line: callsV1.UsageItem | undefined;
    return (samples) => {
      const before = Math.floor((counted.count * 1000) / counted.rate);
      counted.count += samples;
      const ms = Math.floor((counted.count * 1000) / counted.rate) - before;
      if (ms > 0) (line ??= this.line('stt_ms', provider, model)).quantity += ms;
    };
  }
}
