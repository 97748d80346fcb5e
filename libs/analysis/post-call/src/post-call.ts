import type { ChatMessage, CompletionRequest, LlmProvider, LlmUsage } from '@parley/llm';

/** One field to fill from the transcript (an agent's `post_call.extraction[]`). */
export interface ExtractionField {
  /** Storage key on the call record. */
  name: string;
  /** What to look for: the only instruction the model gets for this field besides the transcript. */
  description: string;
  type: 'string' | 'number' | 'boolean' | 'enum';
  /** Allowed values of an `enum` field. */
  options?: string[];
}

/** An agent's `post_call` block. `model` is passed to the provider as is (resolve an empty one beforehand). */
export interface PostCallSettings {
  summary: boolean;
  model: string;
  extraction: ExtractionField[];
}

export interface TranscriptTurn {
  role: 'user' | 'assistant';
  text: string;
}

export type ExtractedValue = string | number | boolean | null;

/** What `call.analysed` carries: `summary`, `extracted`, `model`. */
export interface PostCallResult {
  /** Null when the summary is off (or the model gave none). */
  summary: string | null;
  /** Exactly the requested fields, each coerced to its type or null. */
  extracted: Record<string, ExtractedValue>;
  /** The model the provider reported (the requested one when nothing had to be asked). */
  model: string;
}

/** The model's answer could not be read as a JSON object, even after one retry. */
export class PostCallError extends Error {
  override readonly name = 'PostCallError';
  readonly code = 'invalid_json' as const;
  /** The model's last answer (first 2,000 characters), for the logs. */
  readonly output: string;

  constructor(message: string, output: string) {
    super(message);
    this.output = output.slice(0, 2_000);
  }
}

const CORRECTION = 'Your previous answer was not a valid JSON object. Answer again with only the JSON object, nothing else.';

/**
 * The post-call pass: one JSON-mode completion asking for a short neutral summary (when `settings.summary`) and the
 * extraction fields, read back robustly (code fences stripped; an unreadable answer is asked for once more, then
 * fails with PostCallError) and coerced to each field's type. Provider failures surface as the provider's
 * LlmError. With no summary and no fields there is nothing to ask and the LLM is not called.
 */
export async function analysePostCall(
  llm: LlmProvider,
  settings: PostCallSettings,
  transcript: TranscriptTurn[],
  options: { signal?: AbortSignal; onUsage?: (usage: LlmUsage) => void } = {},
): Promise<PostCallResult> {
  const fields = settings.extraction;
  if (!settings.summary && fields.length === 0) {
    return { summary: null, extracted: {}, model: settings.model };
  }

  const messages: ChatMessage[] = [
    { role: 'system', content: buildSystemPrompt(settings) },
    { role: 'user', content: renderTranscript(transcript) },
  ];
  const request = (msgs: ChatMessage[]): CompletionRequest => ({
    model: settings.model,
    messages: msgs,
    temperature: 0,
    json: true,
    ...(options.signal ? { signal: options.signal } : {}),
  });

  // Each answer's tokens, as the provider reported them (the call's usage and cost).
  const ask = async (msgs: ChatMessage[]) => {
    const result = await llm.complete(request(msgs));
    if (result.usage) options.onUsage?.(result.usage);
    return result;
  };
  let answer = await ask(messages);
  let parsed = parseJsonObject(answer.text);
  if (parsed === undefined) {
    const retryMessages: ChatMessage[] = [
      ...messages,
      { role: 'assistant', content: answer.text },
      { role: 'user', content: CORRECTION },
    ];
    answer = await ask(retryMessages);
    parsed = parseJsonObject(answer.text);
    if (parsed === undefined) {
      throw new PostCallError(
        `post-call analysis: model ${answer.model} did not answer with a JSON object (asked twice)`,
        answer.text,
      );
    }
  }

  const source = isRecord(parsed['extracted']) ? parsed['extracted'] : parsed;
  const extracted: Record<string, ExtractedValue> = {};
  for (const field of fields) {
    extracted[field.name] = coerceValue(field, lookup(source, field.name));
  }
  return {
    summary: settings.summary ? coerceSummary(parsed['summary']) : null,
    extracted,
    model: answer.model,
  };
}

/** The system prompt: the task, the fields (name, type, description) and the exact JSON shape to answer with. */
export function buildSystemPrompt(settings: PostCallSettings): string {
  const fields = settings.extraction;
  const lines: string[] = [
    'You analyse the transcript of a finished phone call between a caller and an AI voice agent.',
    'Answer with a single JSON object and nothing else.',
    '',
  ];
  if (settings.summary) {
    lines.push(
      '"summary": a short, neutral summary of the call in two or three sentences: why the caller called, what was',
      'done or agreed, and any follow-up. State facts from the transcript only; no opinions, no speculation.',
      '',
    );
  }
  if (fields.length > 0) {
    lines.push(
      '"extracted": an object with exactly these keys. For each, the description says what to look for. Use null when',
      'the transcript does not give the value.',
    );
    for (const field of fields) lines.push(`- ${JSON.stringify(field.name)} (${describeType(field)}): ${field.description}`);
    lines.push('');
  }
  lines.push('Shape of the answer:', answerShape(settings));
  return lines.join('\n');
}

/** The transcript as `Caller:` / `Agent:` lines, one per turn. */
export function renderTranscript(transcript: TranscriptTurn[]): string {
  const lines = transcript
    .map((turn) => ({ who: turn.role === 'user' ? 'Caller' : 'Agent', text: turn.text.replace(/\s+/g, ' ').trim() }))
    .filter((turn) => turn.text.length > 0)
    .map((turn) => `${turn.who}: ${turn.text}`);
  return ['Transcript:', ...(lines.length > 0 ? lines : ['(nothing was said)'])].join('\n');
}

function describeType(field: ExtractionField): string {
  switch (field.type) {
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean, true or false';
    case 'enum':
      return `one of ${(field.options ?? []).map((o) => JSON.stringify(o)).join(', ')}`;
    default:
      return 'string';
  }
}

function answerShape(settings: PostCallSettings): string {
  const parts: string[] = [];
  if (settings.summary) parts.push('"summary": "…"');
  if (settings.extraction.length > 0) {
    const placeholders: Record<ExtractionField['type'], string> = {
      string: '"…" or null',
      number: '<number> or null',
      boolean: 'true, false or null',
      enum: '<one of the options> or null',
    };
    const inner = settings.extraction.map((f) => `${JSON.stringify(f.name)}: ${placeholders[f.type] ?? placeholders.string}`);
    parts.push(`"extracted": {${inner.join(', ')}}`);
  }
  return `{${parts.join(', ')}}`;
}

/**
 * The first JSON object in a model's answer: code fences stripped, and when text surrounds the object, the span
 * from the first `{` to the last `}`. Undefined when there is none.
 */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  const candidates: string[] = [];
  const trimmed = text.trim();
  const fenced = /```[a-zA-Z0-9_-]*[ \t]*\r?\n?([\s\S]*?)\r?\n?[ \t]*```/.exec(trimmed);
  if (fenced) candidates.push(fenced[1].trim());
  candidates.push(trimmed);
  const first = trimmed.indexOf('{');
  const last = trimmed.lastIndexOf('}');
  if (first >= 0 && last > first) candidates.push(trimmed.slice(first, last + 1));

  for (const candidate of candidates) {
    try {
      const value: unknown = JSON.parse(candidate);
      if (isRecord(value)) return value;
    } catch {
      // next candidate
    }
  }
  return undefined;
}

/** Reads one value as the field's type; anything that does not fit becomes null. */
export function coerceValue(field: ExtractionField, value: unknown): ExtractedValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' && /^\s*null\s*$/i.test(value)) return null;
  switch (field.type) {
    case 'number':
      return toNumber(value);
    case 'boolean':
      return toBoolean(value);
    case 'enum':
      return toOption(value, field.options ?? []);
    default:
      return toText(value);
  }
}

function toText(value: unknown): string | null {
  if (typeof value === 'string') {
    const text = value.trim();
    return text.length > 0 ? text : null;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return null;
}

const PLAIN_NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;
const GROUPED_NUMBER = /^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$/;

function toNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (PLAIN_NUMBER.test(text)) return Number(text);
  if (GROUPED_NUMBER.test(text)) return Number(text.replace(/,/g, ''));
  return null;
}

function toBoolean(value: unknown): boolean | null {
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'string') return null;
  switch (value.trim().toLowerCase()) {
    case 'true':
    case 'yes':
      return true;
    case 'false':
    case 'no':
      return false;
    default:
      return null;
  }
}

function toOption(value: unknown, options: string[]): string | null {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return null;
  const wanted = String(value).trim().toLowerCase();
  return options.find((option) => option.trim().toLowerCase() === wanted) ?? null;
}

function coerceSummary(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  return text.length > 0 ? text : null;
}

function lookup(source: Record<string, unknown>, name: string): unknown {
  if (Object.prototype.hasOwnProperty.call(source, name)) return source[name];
  const lower = name.toLowerCase();
  const key = Object.keys(source).find((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : source[key];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
