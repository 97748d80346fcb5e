import { SpeechError, SpeechToText, SttOptions, SttStream, SttStreamHandlers } from '@parley/speech';
import { engineMetrics } from './metrics';

/**
 * Recognition over an ordered list of providers, itself a SpeechToText: `open` tries each in turn until one opens,
 * and a stream that fails later is replaced by one from the next provider (the caller keeps writing to the same
 * stream). Providers are never retried once left. Rejects only when none could be opened.
 */
export class FallbackSpeechToText implements SpeechToText {
  readonly name: string;

  constructor(
    private readonly providers: SpeechToText[],
    private readonly log?: (message: string, fields?: Record<string, unknown>) => void,
  ) {
    this.name = providers[0]?.name ?? 'none';
  }

  async open(options: SttOptions, handlers: SttStreamHandlers): Promise<SttStream> {
    const stream = new FallbackStream(this.providers, options, handlers, this.log);
    await stream.openNext();
    return stream;
  }
}

class FallbackStream implements SttStream {
  private index = 0;
  private current: SttStream | undefined;
  private closed = false;

  constructor(
    private readonly providers: SpeechToText[],
    private readonly options: SttOptions,
    private readonly handlers: SttStreamHandlers,
    private readonly log?: (message: string, fields?: Record<string, unknown>) => void,
  ) {}

  /** Opens the provider at `index`, or the first after it that opens; throws when none does. */
  async openNext(): Promise<void> {
    let last: unknown;
    for (; this.index < this.providers.length; this.index++) {
      const provider = this.providers[this.index];
      try {
        const stream = await provider.open(this.options, {
          onTranscript: (event) => stream === this.current && !this.closed && this.handlers.onTranscript(event),
          onError: (error) => stream === this.current && void this.failed(provider.name, error),
        });
        if (this.closed) {
          await stream.close().catch(() => undefined);
          return;
        }
        this.current = stream;
        return;
      } catch (error) {
        last = error;
        this.log?.('recognizer failed to open', { provider: provider.name, err: String(error) });
        const next = this.providers[this.index + 1];
        if (next) engineMetrics.fallbacks.inc({ kind: 'stt', from: provider.name, to: next.name });
      }
    }
    throw last instanceof Error ? last : new SpeechError('no recognizer available', { code: 'connection', provider: 'none' });
  }

  private async failed(name: string, error: SpeechError): Promise<void> {
    if (this.closed) return;
    this.log?.('recognizer failed', { provider: name, err: error.message });
    const next = this.providers[this.index + 1];
    if (!next) return this.handlers.onError(error);
    engineMetrics.fallbacks.inc({ kind: 'stt', from: name, to: next.name });
    this.current = undefined;
    this.index++;
    await this.openNext().catch((e) => this.handlers.onError(e instanceof SpeechError ? e : error));
  }

  write(pcm: Int16Array): void {
    this.current?.write(pcm);
  }

  finalize(): void {
    this.current?.finalize();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.current?.close();
  }
}
