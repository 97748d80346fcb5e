import { FakeLlm, LlmError } from '@parley/llm';
import {
  analysePostCall,
  coerceValue,
  ExtractionField,
  parseJsonObject,
  PostCallError,
  PostCallSettings,
  renderTranscript,
  TranscriptTurn,
} from './post-call';

const transcript: TranscriptTurn[] = [
  { role: 'assistant', text: 'Thanks for calling Acme Dental, how can I help?' },
  { role: 'user', text: 'Hi, this is Dana Reyes.\nI need to move my cleaning to Friday.' },
  { role: 'assistant', text: 'Done: Friday at 10:00. Anything else?' },
  { role: 'user', text: 'No, thanks.' },
];

const fields: ExtractionField[] = [
  { name: 'caller_name', description: 'Full name the caller gives', type: 'string' },
  { name: 'party_size', description: 'How many people the booking is for', type: 'number' },
  { name: 'rescheduled', description: 'Whether an appointment was moved', type: 'boolean' },
  { name: 'intent', description: 'Why the caller called', type: 'enum', options: ['booking', 'Reschedule', 'cancel', 'unclear'] },
];

const settings = (over: Partial<PostCallSettings> = {}): PostCallSettings => ({
  summary: true,
  model: 'gpt-4o-mini',
  extraction: fields,
  ...over,
});

const answer = (body: unknown) => JSON.stringify(body);

describe('analysePostCall', () => {
  it('makes one JSON-mode call and returns summary, typed fields and the reported model', async () => {
    const llm = new FakeLlm([
      {
        text: answer({
          summary: 'Dana Reyes moved her cleaning to Friday at 10:00.',
          extracted: { caller_name: 'Dana Reyes', party_size: 1, rescheduled: true, intent: 'reschedule' },
        }),
        model: 'gpt-4o-mini-2024-07-18',
      },
    ]);

    const result = await analysePostCall(llm, settings(), transcript);

    expect(result).toEqual({
      summary: 'Dana Reyes moved her cleaning to Friday at 10:00.',
      extracted: { caller_name: 'Dana Reyes', party_size: 1, rescheduled: true, intent: 'Reschedule' },
      model: 'gpt-4o-mini-2024-07-18',
    });
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]).toMatchObject({ model: 'gpt-4o-mini', json: true, temperature: 0 });
  });

  describe('the prompt', () => {
    it('asks for a short neutral summary and states every field with its type, options and description', async () => {
      const llm = new FakeLlm([answer({ summary: 's', extracted: {} })]);

      await analysePostCall(llm, settings(), transcript);

      const [system, user] = llm.requests[0].messages;
      expect(system.role).toBe('system');
      expect(system.content).toMatch(/short, neutral summary/);
      expect(system.content).toMatch(/JSON object/);
      expect(system.content).toContain('- "caller_name" (string): Full name the caller gives');
      expect(system.content).toContain('- "party_size" (number): How many people the booking is for');
      expect(system.content).toContain('- "rescheduled" (boolean, true or false): Whether an appointment was moved');
      expect(system.content).toContain(
        '- "intent" (one of "booking", "Reschedule", "cancel", "unclear"): Why the caller called',
      );
      expect(system.content).toContain('"summary": "…"');
      expect(system.content).toContain('"extracted": {"caller_name": "…" or null, "party_size": <number> or null');
      expect(user.role).toBe('user');
      expect(user.content).toBe(
        [
          'Transcript:',
          'Agent: Thanks for calling Acme Dental, how can I help?',
          'Caller: Hi, this is Dana Reyes. I need to move my cleaning to Friday.',
          'Agent: Done: Friday at 10:00. Anything else?',
          'Caller: No, thanks.',
        ].join('\n'),
      );
    });

    it('does not ask for a summary when it is off', async () => {
      const llm = new FakeLlm([answer({ extracted: { caller_name: 'Dana' } })]);

      const result = await analysePostCall(llm, settings({ summary: false, extraction: [fields[0]] }), transcript);

      const system = llm.requests[0].messages[0].content;
      expect(system).not.toMatch(/summary/i);
      expect(system).not.toContain('party_size');
      expect(result).toEqual({ summary: null, extracted: { caller_name: 'Dana' }, model: 'gpt-4o-mini' });
    });

    it('asks for the summary only when there are no fields', async () => {
      const llm = new FakeLlm([answer({ summary: 'A short call.' })]);

      const result = await analysePostCall(llm, settings({ extraction: [] }), transcript);

      expect(llm.requests[0].messages[0].content).not.toContain('"extracted"');
      expect(result).toEqual({ summary: 'A short call.', extracted: {}, model: 'gpt-4o-mini' });
    });

    it('passes the AbortSignal to the provider', async () => {
      const llm = new FakeLlm([answer({ summary: 's' })]);
      const controller = new AbortController();

      await analysePostCall(llm, settings({ extraction: [] }), transcript, { signal: controller.signal });

      expect(llm.requests[0].signal).toBe(controller.signal);
    });
  });

  it('does not call the LLM when neither a summary nor a field is requested', async () => {
    const llm = new FakeLlm();

    const result = await analysePostCall(llm, settings({ summary: false, extraction: [] }), transcript);

    expect(result).toEqual({ summary: null, extracted: {}, model: 'gpt-4o-mini' });
    expect(llm.requests).toHaveLength(0);
  });

  it('returns null for missing fields and never includes fields that were not requested', async () => {
    const llm = new FakeLlm([
      answer({ summary: 's', extracted: { caller_name: 'Dana', surprise: 'x', party_size: null }, extra_top: 1 }),
    ]);

    const result = await analysePostCall(llm, settings(), transcript);

    expect(result.extracted).toEqual({ caller_name: 'Dana', party_size: null, rescheduled: null, intent: null });
    expect(Object.keys(result.extracted)).toEqual(['caller_name', 'party_size', 'rescheduled', 'intent']);
  });

  it('reads fields given at the top level when the model leaves out "extracted", and matches keys case-insensitively', async () => {
    const llm = new FakeLlm([answer({ summary: 's', Caller_Name: 'Dana', party_size: '2' })]);

    const result = await analysePostCall(llm, settings(), transcript);

    expect(result.extracted).toMatchObject({ caller_name: 'Dana', party_size: 2 });
  });

  it('drops a summary the model gives when the summary is off, and an empty or non-text summary', async () => {
    const off = new FakeLlm([answer({ summary: 'unwanted', extracted: {} })]);
    const blank = new FakeLlm([answer({ summary: '  ', extracted: {} })]);
    const wrong = new FakeLlm([answer({ summary: { text: 'x' }, extracted: {} })]);

    expect((await analysePostCall(off, settings({ summary: false }), transcript)).summary).toBeNull();
    expect((await analysePostCall(blank, settings(), transcript)).summary).toBeNull();
    expect((await analysePostCall(wrong, settings(), transcript)).summary).toBeNull();
  });

  it('enum values that are not among the options become null', async () => {
    const llm = new FakeLlm([answer({ summary: 's', extracted: { intent: 'complaint' } })]);

    expect((await analysePostCall(llm, settings(), transcript)).extracted['intent']).toBeNull();
  });

  it('reads JSON wrapped in a code fence', async () => {
    const llm = new FakeLlm(['```json\n{"summary": "Fenced.", "extracted": {"party_size": "3"}}\n```']);

    const result = await analysePostCall(llm, settings(), transcript);

    expect(result.summary).toBe('Fenced.');
    expect(result.extracted['party_size']).toBe(3);
    expect(llm.requests).toHaveLength(1);
  });

  it('asks once more after an answer that is not JSON, and uses the second answer', async () => {
    const llm = new FakeLlm([
      'Sure! The caller wanted to reschedule.',
      { text: answer({ summary: 'Second try.', extracted: {} }), model: 'm-2' },
    ]);

    const result = await analysePostCall(llm, settings(), transcript);

    expect(result).toMatchObject({ summary: 'Second try.', model: 'm-2' });
    expect(llm.requests).toHaveLength(2);
    const retry = llm.requests[1].messages;
    expect(retry.slice(0, 2)).toEqual(llm.requests[0].messages);
    expect(retry[2]).toEqual({ role: 'assistant', content: 'Sure! The caller wanted to reschedule.' });
    expect(retry[3].role).toBe('user');
    expect(retry[3].content).toMatch(/not a valid JSON object/);
    expect(llm.requests[1]).toMatchObject({ json: true, model: 'gpt-4o-mini' });
  });

  it('throws PostCallError when the retry is not JSON either', async () => {
    const llm = new FakeLlm(['not json', '["an", "array"]', 'never used']);

    const error = await analysePostCall(llm, settings(), transcript).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PostCallError);
    expect(error).toMatchObject({ name: 'PostCallError', code: 'invalid_json', output: '["an", "array"]' });
    expect(llm.requests).toHaveLength(2);
  });

  it("lets the provider's errors through", async () => {
    const failure = new LlmError('down', { code: 'http', status: 503 });
    const llm = new FakeLlm([failure]);

    await expect(analysePostCall(llm, settings(), transcript)).rejects.toBe(failure);
  });
});

describe('coerceValue', () => {
  const field = (type: ExtractionField['type'], options?: string[]): ExtractionField => ({
    name: 'f',
    description: 'd',
    type,
    ...(options ? { options } : {}),
  });

  it.each<[ExtractionField['type'], unknown, unknown]>([
    // string
    ['string', 'Dana', 'Dana'],
    ['string', '  padded  ', 'padded'],
    ['string', '', null],
    ['string', 42, '42'],
    ['string', false, 'false'],
    ['string', { a: 1 }, null],
    ['string', ['a'], null],
    ['string', 'null', null],
    ['string', null, null],
    ['string', undefined, null],
    // number
    ['number', 3, 3],
    ['number', -2.5, -2.5],
    ['number', 0, 0],
    ['number', '42', 42],
    ['number', ' 7.5 ', 7.5],
    ['number', '-3', -3],
    ['number', '1e3', 1000],
    ['number', '1,250.50', 1250.5],
    ['number', 'twelve', null],
    ['number', '12 people', null],
    ['number', '0x10', null],
    ['number', '', null],
    ['number', true, null],
    ['number', null, null],
    ['number', undefined, null],
    // boolean
    ['boolean', true, true],
    ['boolean', false, false],
    ['boolean', 'true', true],
    ['boolean', 'FALSE', false],
    ['boolean', 'yes', true],
    ['boolean', ' No ', false],
    ['boolean', 'maybe', null],
    ['boolean', 1, null],
    ['boolean', null, null],
    ['boolean', undefined, null],
  ])('%s from %p is %p', (type, value, expected) => {
    expect(coerceValue(field(type), value)).toBe(expected);
  });

  it.each<[unknown, unknown]>([
    ['booking', 'booking'],
    ['BOOKING', 'booking'],
    [' reschedule ', 'Reschedule'],
    ['Unclear', 'unclear'],
    ['refund', null],
    ['', null],
    [3, null],
    [null, null],
    [undefined, null],
  ])('enum from %p is %p', (value, expected) => {
    expect(coerceValue(field('enum', ['booking', 'Reschedule', 'unclear']), value)).toBe(expected);
  });

  it('enum matches numbers and booleans given as values of string options', () => {
    expect(coerceValue(field('enum', ['1', '2', '3']), 2)).toBe('2');
    expect(coerceValue(field('enum', ['true', 'false']), true)).toBe('true');
  });

  it('enum without options is always null', () => {
    expect(coerceValue(field('enum'), 'anything')).toBeNull();
  });
});

describe('parseJsonObject', () => {
  it.each<[string, unknown]>([
    ['{"a":1}', { a: 1 }],
    ['  {"a":1}\n', { a: 1 }],
    ['```json\n{"a":1}\n```', { a: 1 }],
    ['```\n{"a":1}\n```', { a: 1 }],
    ['Here you go:\n```json\n{"a":1}\n```\nHope that helps.', { a: 1 }],
    ['Result: {"a": {"b": 2}} — done', { a: { b: 2 } }],
    ['[1,2]', undefined],
    ['null', undefined],
    ['{"a":', undefined],
    ['', undefined],
  ])('%p → %p', (text, expected) => {
    expect(parseJsonObject(text)).toEqual(expected);
  });
});

describe('renderTranscript', () => {
  it('labels turns Caller/Agent, one line each, and skips empty turns', () => {
    expect(
      renderTranscript([
        { role: 'user', text: 'Hello\n  there' },
        { role: 'assistant', text: '   ' },
        { role: 'assistant', text: 'Hi!' },
      ]),
    ).toBe('Transcript:\nCaller: Hello there\nAgent: Hi!');
  });

  it('says so when nothing was said', () => {
    expect(renderTranscript([])).toBe('Transcript:\n(nothing was said)');
  });
});
