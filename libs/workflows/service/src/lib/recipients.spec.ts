import { FieldProblem, WorkflowSpec } from '@parley/contracts';
import {
  dedupeKey,
  MAX_PAGE_PROBLEMS,
  normalizeNumber,
  normalizeRecipient,
  parseRecipientsPage,
  RecipientsPageOptions,
  RecipientsPageResult,
} from './recipients';

const spec: WorkflowSpec = {
  name: 'Renewals',
  agent_id: 'agt_1',
  timezone: 'America/New_York',
  recipient_variables: [
    { name: 'first_name', type: 'string', required: true },
    { name: 'balance', type: 'number', required: false },
    { name: 'vip', type: 'boolean', required: false },
  ],
};
const options: RecipientsPageOptions = { maxPerPage: 1000 };

const okOf = (result: RecipientsPageResult) => {
  if ('problems' in result) throw new Error(`unexpected problems: ${JSON.stringify(result.problems)}`);
  return result;
};
const problemsOf = (result: RecipientsPageResult): FieldProblem[] => {
  if (!('problems' in result)) throw new Error(`expected problems, got ${JSON.stringify(result)}`);
  return result.problems;
};
const json = (items: unknown, opts = options, s = spec) => parseRecipientsPage({ recipients_json: JSON.stringify(items) }, s, opts);
const csv = (text: string, opts = options, s = spec) => parseRecipientsPage({ recipients_csv: text }, s, opts);

describe('normalizeNumber', () => {
  it.each([
    ['+14155552671', '+14155552671'],
    ['+1 (415) 555-2671', '+14155552671'],
    ['+1 415.555.2671', '+14155552671'],
    ['  +44 20 7183 8750 ', '+442071838750'],
    ['+49 151 23456789', '+4915123456789'],
  ])('writes %j as %s', (text, e164) => {
    expect(normalizeNumber(text)).toBe(e164);
  });

  it.each([
    ['a number without a + country code', '4155552671'],
    ['a number with the 00 international prefix', '0044 20 7183 8750'],
    ['too few digits', '+1 415 555'],
    ['an extension', '+1 415 555 2671 ext. 5'],
    ['text around a number', 'call +1 415 555 2671'],
    ['letters', '+1 800 FLOWERS'],
    ['a number no plan allocates', '+15550100000'],
    ['an empty string', ''],
  ])('refuses %s', (_, text) => {
    expect(normalizeNumber(text)).toBeUndefined();
  });

  it('takes fictional numbers of the right length when asked only for possible ones', () => {
    expect(normalizeNumber('+1 555 010 0000', 'possible')).toBe('+15550100000');
    expect(normalizeNumber('+1 555 010', 'possible')).toBeUndefined();
  });
});

describe('dedupeKey', () => {
  it('is the E.164 number, so every way of writing a number dedupes to one', () => {
    expect(dedupeKey(normalizeNumber('+1 (415) 555-2671') as string)).toBe(dedupeKey(normalizeNumber('+14155552671') as string));
    expect(dedupeKey('+14155552671')).toBe('+14155552671');
  });
});

describe('normalizeRecipient', () => {
  it('fills the workflow time zone and keeps variables and metadata', () => {
    expect(normalizeRecipient({ to: '+14155552671', variables: { first_name: 'Ada' }, metadata: { crm: '7' } }, spec)).toEqual({
      recipient: { to: '+14155552671', timezone: 'America/New_York', variables: { first_name: 'Ada' }, metadata: { crm: '7' } },
    });
  });

  it('falls back to UTC when neither the recipient nor the workflow names a zone', () => {
    const result = normalizeRecipient({ to: '+14155552671', variables: { first_name: 'Ada' } }, { ...spec, timezone: undefined });
    expect(result).toMatchObject({ recipient: { timezone: 'UTC' } });
  });
});

describe('parseRecipientsPage', () => {
  describe('the page', () => {
    it('refuses a page with both a JSON list and CSV', () => {
      expect(problemsOf(parseRecipientsPage({ recipients_json: '[]', recipients_csv: 'to' }, spec, options))).toEqual([
        { field: 'recipients_csv', message: 'give recipients_json or recipients_csv, not both' },
      ]);
    });

    it('refuses a page with neither', () => {
      expect(problemsOf(parseRecipientsPage({}, spec, options))).toEqual([{ field: 'recipients_json', message: 'give recipients_json or recipients_csv' }]);
    });

    it('reads a page with neither as empty when empty pages are allowed', () => {
      expect(okOf(parseRecipientsPage({}, spec, { ...options, allowEmpty: true }))).toEqual({ accepted: [], suppressed: [] });
      expect(problemsOf(parseRecipientsPage({ recipients_json: '[]', recipients_csv: 'to' }, spec, { ...options, allowEmpty: true }))).toHaveLength(1);
    });

    it('accepts an empty list', () => {
      expect(okOf(json([]))).toEqual({ accepted: [], suppressed: [] });
      expect(okOf(csv('to,first_name\n'))).toEqual({ accepted: [], suppressed: [] });
    });

    it('refuses more rows than a page takes, before reading them', () => {
      const rows = [{ to: '+14155552671' }, { to: '+14155552672' }, { bogus: true }];
      expect(problemsOf(json(rows, { maxPerPage: 2 }))).toEqual([
        { field: 'recipients_json', message: 'has 3 recipients, more than the 2 a page takes; send the rest in further pages' },
      ]);
      expect(problemsOf(csv('to\n+14155552671\n+14155552672\n+14155552673\n', { maxPerPage: 2 }))).toEqual([
        { field: 'recipients_csv', message: 'has 3 recipients, more than the 2 a page takes; send the rest in further pages' },
      ]);
      expect(okOf(csv('to,first_name\n+14155552671,A\n+14155552672,B\n', { maxPerPage: 2 })).accepted).toHaveLength(2);
    });
  });

  describe('JSON', () => {
    it('normalizes each recipient', () => {
      const result = okOf(
        json([
          { to: '+1 (415) 555-2671', variables: { first_name: 'Ada', balance: '12.50', vip: 'TRUE' }, metadata: { crm: 'c1' } },
          { to: '+44 20 7183 8750', timezone: 'Europe/London', variables: { first_name: 'Alan' } },
        ]),
      );

      expect(result).toEqual({
        accepted: [
          { to: '+14155552671', timezone: 'America/New_York', variables: { first_name: 'Ada', balance: '12.50', vip: 'true' }, metadata: { crm: 'c1' } },
          { to: '+442071838750', timezone: 'Europe/London', variables: { first_name: 'Alan' }, metadata: {} },
        ],
        suppressed: [],
      });
    });

    it('keeps numbers and booleans given as JSON values as text', () => {
      const result = okOf(json([{ to: '+14155552671', variables: { first_name: 'Ada', balance: 12.5, vip: false } }]));
      expect(result.accepted[0].variables).toEqual({ first_name: 'Ada', balance: '12.5', vip: 'false' });
    });

    it('keeps variables the workflow does not declare', () => {
      const result = okOf(json([{ to: '+14155552671', variables: { first_name: 'Ada', plan: 'gold' } }]));
      expect(result.accepted[0].variables).toEqual({ first_name: 'Ada', plan: 'gold' });
    });

    it('reports malformed JSON with its line and column', () => {
      const [problem] = problemsOf(parseRecipientsPage({ recipients_json: '[\n  {"to": "+14155552671",}\n]' }, spec, options));
      expect(problem.field).toBe('recipients_json');
      expect(problem.message).toMatch(/^is not valid JSON: .*line 2 column 25/);
    });

    it('refuses JSON that is not an array', () => {
      expect(problemsOf(json({ to: '+14155552671' }))).toEqual([{ field: 'recipients_json', message: 'must be a JSON array of recipients' }]);
    });

    it('refuses the page for unknown fields and wrong types, naming each index', () => {
      expect(
        problemsOf(
          json([
            { to: '+14155552671', name: 'Ada' },
            'x',
            { timezone: 5 },
            { to: 14155552671, variables: { a: { b: 1 }, c: null }, metadata: { m: 1 } },
            { to: '+14155552671', variables: ['a'] },
          ]),
        ),
      ).toEqual([
        { field: 'recipients_json[0].name', message: 'is not a known field' },
        { field: 'recipients_json[1]', message: 'must be an object' },
        { field: 'recipients_json[2].to', message: 'is required' },
        { field: 'recipients_json[2].timezone', message: 'must be a string' },
        { field: 'recipients_json[3].to', message: 'must be a string' },
        { field: 'recipients_json[3].variables.a', message: 'must be a string, a number or a boolean' },
        { field: 'recipients_json[3].variables.c', message: 'must be a string, a number or a boolean' },
        { field: 'recipients_json[3].metadata.m', message: 'must be a string' },
        { field: 'recipients_json[4].variables', message: 'must be an object' },
      ]);
    });

    it('lists at most 100 page problems, then how many more', () => {
      const list = problemsOf(json(Array.from({ length: 150 }, () => ({ bogus: 1, to: '+14155552671' }))));
      expect(list).toHaveLength(MAX_PAGE_PROBLEMS + 1);
      expect(list[MAX_PAGE_PROBLEMS]).toEqual({ field: 'recipients_json[100].bogus', message: 'and 50 more problems' });
    });
  });

  describe('CSV', () => {
    it('reads a header row: to, timezone, variables and metadata.* columns', () => {
      const result = okOf(
        csv(['to,timezone,first_name,balance,metadata.crm_id', '+1 (415) 555-2671,Europe/London,Ada,12,c1', '+14155552672,,Grace,,'].join('\n')),
      );

      expect(result.accepted).toEqual([
        { to: '+14155552671', timezone: 'Europe/London', variables: { first_name: 'Ada', balance: '12' }, metadata: { crm_id: 'c1' } },
        { to: '+14155552672', timezone: 'America/New_York', variables: { first_name: 'Grace' }, metadata: {} },
      ]);
    });

    it('handles quoted fields with commas, doubled quotes and line breaks', () => {
      const result = okOf(csv('to,first_name,note\n"+1 415 555 2671","Lovelace, Ada","she said ""hi""\nand left"\n'));
      expect(result.accepted[0].variables).toEqual({ first_name: 'Lovelace, Ada', note: 'she said "hi"\nand left' });
    });

    it('skips a byte-order mark, blank lines and spaces around fields, with CRLF line ends', () => {
      const result = okOf(csv('\uFEFFto , first_name\r\n\r\n  +14155552671 ,  Ada  \r\n\r\n'));
      expect(result.accepted).toEqual([{ to: '+14155552671', timezone: 'America/New_York', variables: { first_name: 'Ada' }, metadata: {} }]);
    });

    it('reads the to and timezone columns whatever their case', () => {
      const result = okOf(csv('To,TimeZone,first_name\n+14155552671,Europe/Paris,Ada\n'));
      expect(result.accepted[0]).toMatchObject({ to: '+14155552671', timezone: 'Europe/Paris' });
    });

    it('refuses CSV without a to column', () => {
      expect(problemsOf(csv('phone,first_name\n+14155552671,Ada\n'))).toEqual([
        { field: 'recipients_csv', message: 'has no `to` column in its header row' },
      ]);
    });

    it('refuses an empty text, unnamed and repeated columns', () => {
      expect(problemsOf(csv(''))).toEqual([{ field: 'recipients_csv', message: 'has no header row' }]);
      expect(problemsOf(csv('to,,first_name,first_name,TO,metadata.\n'))).toEqual([
        { field: 'recipients_csv', message: 'column 2 of the header has no name' },
        { field: 'recipients_csv', message: 'the header repeats the column first_name' },
        { field: 'recipients_csv', message: 'the header repeats the column TO' },
        { field: 'recipients_csv', message: 'column 6 (metadata.) names no metadata key' },
      ]);
    });

    it('reports a row with the wrong number of fields with its line', () => {
      const [problem] = problemsOf(csv('to,first_name\n+14155552671,Ada\n+14155552672,Grace,extra\n'));
      expect(problem).toEqual({ field: 'recipients_csv', message: expect.stringMatching(/^is not valid CSV: .*line 3/) });
    });

    it('reports an unclosed quote with its line', () => {
      const [problem] = problemsOf(csv('to,first_name\n+14155552671,"Ada\n'));
      expect(problem.message).toMatch(/^is not valid CSV: Quote Not Closed.*line 2/);
    });

    it('refuses metadata over its limits, naming the line', () => {
      expect(problemsOf(csv(`to,first_name,metadata.note\n+14155552671,Ada,ok\n+14155552672,Grace,${'x'.repeat(501)}\n`))).toEqual([
        { field: 'recipients_csv', message: 'line 3: metadata.note must be at most 500 characters' },
      ]);
    });
  });

  describe('suppression', () => {
    it('suppresses invalid numbers and keeps the rest', () => {
      const result = okOf(
        json([
          { to: '415 555 2671', variables: { first_name: 'A' } },
          { to: '+14155552671', variables: { first_name: 'B' } },
          { to: '', variables: { first_name: 'C' } },
        ]),
      );

      expect(result.accepted.map((r) => r.to)).toEqual(['+14155552671']);
      expect(result.suppressed).toEqual([
        {
          input: { to: '415 555 2671', variables: { first_name: 'A' } },
          index: 0,
          reason: 'invalid_number',
          message: '"415 555 2671" is not a valid phone number with a + country code',
        },
        { input: { to: '', variables: { first_name: 'C' } }, index: 2, reason: 'invalid_number', message: '"" is not a valid phone number with a + country code' },
      ]);
    });

    it('accepts the dev carrier’s fictional numbers only when the page asks for possible numbers', () => {
      const rows = [{ to: '+15550100000', variables: { first_name: 'A' } }];
      expect(okOf(json(rows)).suppressed.map((s) => s.reason)).toEqual(['invalid_number']);
      expect(okOf(json(rows, { ...options, numberCheck: 'possible' })).accepted.map((r) => r.to)).toEqual(['+15550100000']);
    });

    it('suppresses an unknown time zone', () => {
      const result = okOf(json([{ to: '+14155552671', timezone: 'Mars/Olympus_Mons', variables: { first_name: 'A' } }]));
      expect(result.suppressed).toEqual([expect.objectContaining({ index: 0, reason: 'invalid_timezone', message: '"Mars/Olympus_Mons" is not an IANA time zone' })]);
    });

    it('suppresses a recipient missing a required variable, naming it; an empty value counts as missing', () => {
      const result = okOf(csv('to,first_name\n+14155552671,\n+14155552672,Grace\n'));
      expect(result.accepted.map((r) => r.to)).toEqual(['+14155552672']);
      expect(result.suppressed).toEqual([{ input: { to: '+14155552671' }, index: 0, reason: 'invalid_variables', message: 'variable first_name is required' }]);
    });

    it('suppresses a number or boolean variable whose text does not parse, naming it', () => {
      const result = okOf(
        json([
          { to: '+14155552671', variables: { first_name: 'A', balance: '12,50' } },
          { to: '+14155552672', variables: { first_name: 'B', vip: 'yes' } },
          { to: '+14155552673', variables: { first_name: 'C', balance: '-1.5e3', vip: ' False ' } },
        ]),
      );

      expect(result.suppressed.map((s) => [s.index, s.reason, s.message])).toEqual([
        [0, 'invalid_variables', 'variable balance must be a number, got "12,50"'],
        [1, 'invalid_variables', 'variable vip must be true or false, got "yes"'],
      ]);
      expect(result.accepted[0].variables).toEqual({ first_name: 'C', balance: '-1.5e3', vip: 'false' });
    });

    it('suppresses variables beyond the call limits', () => {
      const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`v${i}`, 'x']));
      const result = okOf(
        json([
          { to: '+14155552671', variables: { first_name: 'x'.repeat(501) } },
          { to: '+14155552672', variables: { first_name: 'A', ...many } },
        ]),
      );
      expect(result.suppressed.map((s) => s.message)).toEqual(['variable first_name is longer than 500 characters', 'has 52 variables, more than 50']);
    });

    it('suppresses later recipients with the same number however it is written, naming the first', () => {
      const result = okOf(
        csv(['to,first_name', '+14155552671,A', '+1 (415) 555-2671,B', '+442071838750,C', '+1-415-555-2671,D'].join('\n')),
      );

      expect(result.accepted.map((r) => [r.to, r.variables['first_name']])).toEqual([
        ['+14155552671', 'A'],
        ['+442071838750', 'C'],
      ]);
      expect(result.suppressed).toEqual([
        { input: { to: '+1 (415) 555-2671', variables: { first_name: 'B' } }, index: 1, reason: 'duplicate', message: '+14155552671 is already recipient 0 of this page' },
        { input: { to: '+1-415-555-2671', variables: { first_name: 'D' } }, index: 3, reason: 'duplicate', message: '+14155552671 is already recipient 0 of this page' },
      ]);
    });

    it('lets a later row of a number through when the first row of it was suppressed for another reason', () => {
      const result = okOf(json([{ to: '+14155552671' }, { to: '+14155552671', variables: { first_name: 'Ada' } }]));
      expect(result.suppressed.map((s) => s.reason)).toEqual(['invalid_variables']);
      expect(result.accepted).toHaveLength(1);
    });

    it('checks the number first, then the time zone, then the variables', () => {
      const result = okOf(json([{ to: 'x', timezone: 'Nowhere/Land' }, { to: '+14155552671', timezone: 'Nowhere/Land' }]));
      expect(result.suppressed.map((s) => s.reason)).toEqual(['invalid_number', 'invalid_timezone']);
    });

    it('accepts any variables when the workflow declares none', () => {
      const result = okOf(json([{ to: '+14155552671', variables: { anything: 'goes' } }], options, { ...spec, recipient_variables: [] }));
      expect(result.accepted[0].variables).toEqual({ anything: 'goes' });
    });
  });
});
