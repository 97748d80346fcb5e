import { LlmProvider } from '@parley/llm';
import { LanguageSettings } from './agent-settings';

export type BuiltInKind = 'silencePrompt' | 'goodbye';

const ENGLISH: Record<BuiltInKind, string> = {
  silencePrompt: 'Are you still there?',
  goodbye: 'Goodbye.',
};

const ASKS: Record<BuiltInKind, string> = {
  silencePrompt: 'asking a caller who has gone quiet on the phone whether they are still there',
  goodbye: 'saying goodbye to a caller before the call ends',
};

/**
 * The built-in silence prompt and goodbye in the call's language. English ones are written here; for other
 * languages the model writes one short sentence when the conversation starts (or moves to that language), so it is
 * ready, without delay, when needed; until then, or if the model fails, the English line is used.
 */
export class BuiltInLines {
  /** Lines written by the model, by `language:kind`. */
  private readonly lines = new Map<string, string>();
  private readonly preparing = new Set<string>();

  constructor(
    private readonly llm: LlmProvider,
    private readonly model: string,
    /** A line became ready (to be synthesized ahead too). */
    private readonly onReady: (language: LanguageSettings, line: string) => void,
    private readonly log: (message: string, fields?: Record<string, unknown>) => void,
  ) {}

  line(language: LanguageSettings, kind: BuiltInKind): string {
    return this.lines.get(`${language.code}:${kind}`) ?? ENGLISH[kind];
  }

  prepare(language: LanguageSettings): void {
    if (language.code.toLowerCase().startsWith('en')) return;
    for (const kind of ['silencePrompt', 'goodbye'] as const) {
      if (kind === 'silencePrompt' && language.silencePrompt) continue;
      const key = `${language.code}:${kind}`;
      if (this.lines.has(key) || this.preparing.has(key)) continue;
      this.preparing.add(key);
      this.llm
        .complete({
          model: this.model,
          messages: [{ role: 'system', content: `Write one short sentence in the language ${language.code}, ${ASKS[kind]}. Reply with the sentence only.` }],
          maxTokens: 60,
        })
        .then((r) => {
          const line = r.text.trim().split('\n')[0].replace(/^["«“]|["»”]$/g, '').trim();
          if (!line) return;
          this.lines.set(key, line);
          this.onReady(language, line);
        })
        .catch((e) => this.log('built-in line not prepared', { language: language.code, kind, err: String(e) }));
    }
  }
}
