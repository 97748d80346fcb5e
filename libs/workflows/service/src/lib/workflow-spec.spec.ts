import { END_REASONS, FieldProblem, WorkflowSpec } from '@parley/contracts';
import { DEFAULT_RETRY, mergeWorkflowPatch, validateWorkflowSpec, WorkflowSpecResult } from './workflow-spec';

const minimal = { name: 'Renewals', agent_id: 'agt_123' };

const specOf = (result: WorkflowSpecResult): WorkflowSpec => {
  if ('problems' in result) throw new Error(`unexpected problems: ${JSON.stringify(result.problems)}`);
  return result.spec;
};
const problemsOf = (result: WorkflowSpecResult): FieldProblem[] => {
  if ('spec' in result) throw new Error('expected problems, got a spec');
  return result.problems;
};
/** The problems of the minimal spec with `extra` on top. */
const problems = (extra: Record<string, unknown>) => problemsOf(validateWorkflowSpec({ ...minimal, ...extra }));
const fieldsOf = (list: FieldProblem[]) => list.map((p) => p.field);
const accepts = (extra: Record<string, unknown>) => specOf(validateWorkflowSpec({ ...minimal, ...extra }));

describe('validateWorkflowSpec', () => {
  describe('defaults', () => {
    it('fills every default on a minimal spec', () => {
      expect(specOf(validateWorkflowSpec(minimal))).toEqual({
        name: 'Renewals',
        agent_id: 'agt_123',
        timezone: 'UTC',
        calling_window: { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00', holidays: [] },
        concurrency: 5,
        retry: {
          busy: { retries: 2, wait_seconds: 600 },
          no_answer: { retries: 2, wait_seconds: 3600 },
          voicemail: { retries: 0, wait_seconds: 3600 },
          carrier_error: { retries: 1, wait_seconds: 300 },
        },
        recipient_variables: [],
        success: { end_reasons: ['completed', 'hangup', 'transferred'] },
        metadata: {},
      });
    });

    it('keeps every given value of a full spec', () => {
      const full: WorkflowSpec = {
        name: 'Renewals',
        description: 'Policy renewals, spring',
        agent_id: 'agt_123',
        from: '+15555550123',
        timezone: 'Europe/London',
        calling_window: { days: ['sat', 'sun'], start: '10:00', end: '12:30', holidays: ['2026-12-26'] },
        concurrency: 1000,
        retry: {
          busy: { retries: 10, wait_seconds: 60 },
          no_answer: { retries: 0, wait_seconds: 604800 },
          voicemail: { retries: 1, wait_seconds: 7200 },
          carrier_error: { retries: 3, wait_seconds: 120 },
        },
        recipient_variables: [
          { name: 'first_name', type: 'string', required: true },
          { name: 'Balance', type: 'number', required: false },
          { name: '_vip', type: 'boolean', required: false },
        ],
        success: { end_reasons: ['completed'], extracted_field: { name: 'renewed', equals: true } },
        metadata: { team: 'sales' },
      };

      expect(specOf(validateWorkflowSpec(full))).toEqual(full);
    });

    it('fills the default rule of each outcome a retry policy leaves out', () => {
      expect(accepts({ retry: { busy: { retries: 5, wait_seconds: 120 } } }).retry).toEqual({ ...DEFAULT_RETRY, busy: { retries: 5, wait_seconds: 120 } });
    });

    it('fills a calling window partly given', () => {
      expect(accepts({ calling_window: { start: '08:00' } }).calling_window).toEqual({
        days: ['mon', 'tue', 'wed', 'thu', 'fri'],
        start: '08:00',
        end: '17:00',
        holidays: [],
      });
    });

    it('fills a recipient variable’s type (string) and required (false)', () => {
      expect(accepts({ recipient_variables: [{ name: 'x' }] }).recipient_variables).toEqual([{ name: 'x', type: 'string', required: false }]);
    });

    it('fills the success end reasons when only an extracted field is given', () => {
      expect(accepts({ success: { extracted_field: { name: 'booked' } } }).success).toEqual({
        end_reasons: ['completed', 'hangup', 'transferred'],
        extracted_field: { name: 'booked' },
      });
    });

    it('reads null as absent for optional fields', () => {
      const spec = accepts({ description: null, from: null, timezone: null, calling_window: null, concurrency: null, retry: null, metadata: null });
      expect(spec).toEqual(specOf(validateWorkflowSpec(minimal)));
    });

    it('does not share the defaults between specs', () => {
      const first = accepts({});
      first.calling_window?.days?.push('sun');
      first.success?.end_reasons?.push('busy');
      (first.retry as Record<string, { retries: number }>)['busy'].retries = 9;

      const second = accepts({});
      expect(second.calling_window?.days).toEqual(['mon', 'tue', 'wed', 'thu', 'fri']);
      expect(second.success?.end_reasons).toEqual(['completed', 'hangup', 'transferred']);
      expect(second.retry?.busy?.retries).toBe(2);
    });
  });

  describe('the body', () => {
    it.each([[null], [[]], ['x'], [5]])('refuses %j as a whole', (body) => {
      expect(problemsOf(validateWorkflowSpec(body))).toEqual([{ field: '', message: 'must be an object' }]);
    });

    it('refuses unknown fields at every level, by path', () => {
      const list = problems({
        colour: 'red',
        calling_window: { days: ['mon'], tz: 'x' },
        retry: { busy: { retries: 1, wait_seconds: 60, jitter: true }, answered: { retries: 1, wait_seconds: 60 } },
        recipient_variables: [{ name: 'a', default: 'x' }],
        success: { end_reasons: ['completed'], extracted_field: { name: 'x', op: 'eq' }, score: 1 },
      });

      expect(list.filter((p) => p.message === 'is not a known field').map((p) => p.field)).toEqual([
        'colour',
        'calling_window.tz',
        'retry.answered',
        'retry.busy.jitter',
        'recipient_variables[0].default',
        'success.score',
        'success.extracted_field.op',
      ]);
    });

    it('reports every problem at once', () => {
      const list = problemsOf(
        validateWorkflowSpec({
          description: 'x'.repeat(1001),
          from: '5551234',
          timezone: 'Nowhere/Land',
          concurrency: 0,
          calling_window: { start: '25:00' },
          retry: { busy: { retries: 11, wait_seconds: 59 } },
          recipient_variables: [{ name: '1st' }],
          success: { end_reasons: [] },
          metadata: { k: 5 },
        }),
      );

      expect(fieldsOf(list)).toEqual([
        'name',
        'description',
        'agent_id',
        'from',
        'timezone',
        'calling_window.start',
        'concurrency',
        'retry.busy.retries',
        'retry.busy.wait_seconds',
        'recipient_variables[0].name',
        'success.end_reasons',
        'metadata.k',
      ]);
    });
  });

  describe('name, description, agent, caller id, time zone', () => {
    it('requires a name of 1-200 characters', () => {
      expect(problemsOf(validateWorkflowSpec({ agent_id: 'agt_1' }))).toEqual([{ field: 'name', message: 'is required' }]);
      expect(problems({ name: '' })).toEqual([{ field: 'name', message: 'must be 1-200 characters' }]);
      expect(problems({ name: 'x'.repeat(201) })).toEqual([{ field: 'name', message: 'must be 1-200 characters' }]);
      expect(problems({ name: 7 })).toEqual([{ field: 'name', message: 'must be a string' }]);
      expect(accepts({ name: 'x'.repeat(200) }).name).toHaveLength(200);
    });

    it('takes a description of at most 1000 characters', () => {
      expect(accepts({ description: 'x'.repeat(1000) }).description).toHaveLength(1000);
      expect(accepts({ description: '' }).description).toBe('');
      expect(problems({ description: 'x'.repeat(1001) })).toEqual([{ field: 'description', message: 'must be at most 1000 characters' }]);
    });

    it('requires an agent id starting agt_', () => {
      expect(problemsOf(validateWorkflowSpec({ name: 'n' }))).toEqual([{ field: 'agent_id', message: 'is required' }]);
      expect(fieldsOf(problems({ agent_id: 'abc_1' }))).toEqual(['agent_id']);
      expect(fieldsOf(problems({ agent_id: 'agt_' }))).toEqual(['agent_id']);
      expect(fieldsOf(problems({ agent_id: 12 }))).toEqual(['agent_id']);
    });

    it('takes an E.164 caller id and refuses anything else', () => {
      expect(accepts({ from: '+442071838750' }).from).toBe('+442071838750');
      expect(accepts({ from: '+15550100000' }).from).toBe('+15550100000');
      for (const from of ['442071838750', '+44 20 7183 8750', '+0123456', '+1234567890123456', 'sip:a@b', 5]) {
        expect(problems({ from })).toEqual([{ field: 'from', message: 'must be an E.164 number, such as +15555550123' }]);
      }
    });

    it('takes an IANA time zone and refuses offsets and unknown names', () => {
      expect(accepts({ timezone: 'America/New_York' }).timezone).toBe('America/New_York');
      for (const timezone of ['+02:00', 'Nowhere/Land', '', 3]) expect(fieldsOf(problems({ timezone }))).toEqual(['timezone']);
    });
  });

  describe('calling window', () => {
    it('refuses a window that is not an object', () => {
      expect(problems({ calling_window: [] })).toEqual([{ field: 'calling_window', message: 'must be an object' }]);
    });

    it('refuses no days, unknown days and repeated days', () => {
      expect(problems({ calling_window: { days: [] } })).toEqual([{ field: 'calling_window.days', message: 'must name at least one day' }]);
      expect(problems({ calling_window: { days: 'mon' } })).toEqual([{ field: 'calling_window.days', message: 'must be an array' }]);
      expect(problems({ calling_window: { days: ['mon', 'monday', 'tue', 'mon'] } })).toEqual([
        { field: 'calling_window.days[1]', message: 'must be one of mon, tue, wed, thu, fri, sat, sun' },
        { field: 'calling_window.days[3]', message: 'repeats mon' },
      ]);
    });

    it('takes start and end as HH:MM from 00:00 to 23:59', () => {
      expect(accepts({ calling_window: { start: '00:00', end: '23:59' } }).calling_window).toMatchObject({ start: '00:00', end: '23:59' });
      for (const start of ['24:00', '9:00', '09:0', '09:60', '0900', 900]) {
        expect(problems({ calling_window: { start } })).toEqual([{ field: 'calling_window.start', message: 'must be HH:MM, from 00:00 to 23:59' }]);
      }
      expect(fieldsOf(problems({ calling_window: { end: '24:00' } }))).toEqual(['calling_window.end']);
    });

    it('requires the end after the start, defaults included', () => {
      expect(problems({ calling_window: { start: '10:00', end: '10:00' } })).toEqual([{ field: 'calling_window.end', message: 'must be after start (10:00)' }]);
      expect(problems({ calling_window: { start: '18:00' } })).toEqual([{ field: 'calling_window.end', message: 'must be after start (18:00)' }]);
      expect(accepts({ calling_window: { start: '10:00', end: '10:01' } }).calling_window?.end).toBe('10:01');
    });

    it('takes holidays as real YYYY-MM-DD dates', () => {
      expect(accepts({ calling_window: { holidays: ['2028-02-29', '2026-12-25'] } }).calling_window?.holidays).toEqual(['2028-02-29', '2026-12-25']);
      expect(problems({ calling_window: { holidays: ['2026-02-29', '2026-13-01', '26-12-25', '2026-12-25T00:00', 20261225] } })).toEqual([
        { field: 'calling_window.holidays[0]', message: 'must be a date, YYYY-MM-DD' },
        { field: 'calling_window.holidays[1]', message: 'must be a date, YYYY-MM-DD' },
        { field: 'calling_window.holidays[2]', message: 'must be a date, YYYY-MM-DD' },
        { field: 'calling_window.holidays[3]', message: 'must be a date, YYYY-MM-DD' },
        { field: 'calling_window.holidays[4]', message: 'must be a date, YYYY-MM-DD' },
      ]);
    });

    it('takes at most 366 holidays', () => {
      const dates = (n: number) => Array.from({ length: n }, (_, i) => new Date(Date.UTC(2026, 0, 1 + i * 2)).toISOString().slice(0, 10));
      expect(accepts({ calling_window: { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], holidays: dates(366) } })).toBeDefined();
      expect(problems({ calling_window: { holidays: dates(367) } })).toEqual([{ field: 'calling_window.holidays', message: 'must have at most 366 dates' }]);
    });

    it('refuses holidays that leave no calling day for more than a year', () => {
      const mondays = (n: number) => Array.from({ length: n }, (_, i) => new Date(Date.UTC(2026, 0, 5 + i * 7)).toISOString().slice(0, 10));
      // 51 blocked Mondays: 364 days between the Monday before and the Monday after; 52: 371.
      expect(accepts({ calling_window: { days: ['mon'], holidays: mondays(51) } })).toBeDefined();
      expect(problems({ calling_window: { days: ['mon'], holidays: mondays(52) } })).toEqual([
        { field: 'calling_window.holidays', message: 'leave no calling day for more than a year' },
      ]);
      // Holidays on days that are not calling days block nothing.
      expect(accepts({ calling_window: { days: ['tue'], holidays: mondays(60) } })).toBeDefined();
    });
  });

  describe('concurrency', () => {
    it('takes an integer from 1 to 1000', () => {
      expect(accepts({ concurrency: 1 }).concurrency).toBe(1);
      expect(accepts({ concurrency: 1000 }).concurrency).toBe(1000);
      for (const concurrency of [0, 1001, 2.5, '5', -1]) {
        expect(problems({ concurrency })).toEqual([{ field: 'concurrency', message: 'must be an integer from 1 to 1000' }]);
      }
    });
  });

  describe('retry', () => {
    it('takes only the retryable outcomes as keys', () => {
      expect(problems({ retry: { completed: { retries: 1, wait_seconds: 60 } } })).toEqual([{ field: 'retry.completed', message: 'is not a known field' }]);
      expect(problems({ retry: [] })).toEqual([{ field: 'retry', message: 'must be an object' }]);
    });

    it('requires retries from 0 to 10 and wait_seconds from 60 to 604800, integers', () => {
      expect(accepts({ retry: { voicemail: { retries: 0, wait_seconds: 60 } } }).retry?.voicemail).toEqual({ retries: 0, wait_seconds: 60 });
      expect(accepts({ retry: { voicemail: { retries: 10, wait_seconds: 604800 } } }).retry?.voicemail).toEqual({ retries: 10, wait_seconds: 604800 });
      expect(problems({ retry: { busy: { retries: -1, wait_seconds: 604801 }, no_answer: { retries: 1.5, wait_seconds: '60' } } })).toEqual([
        { field: 'retry.busy.retries', message: 'must be an integer from 0 to 10' },
        { field: 'retry.busy.wait_seconds', message: 'must be an integer from 60 to 604800' },
        { field: 'retry.no_answer.retries', message: 'must be an integer from 0 to 10' },
        { field: 'retry.no_answer.wait_seconds', message: 'must be an integer from 60 to 604800' },
      ]);
    });

    it('requires both fields of a rule', () => {
      expect(problems({ retry: { carrier_error: {} } })).toEqual([
        { field: 'retry.carrier_error.retries', message: 'is required' },
        { field: 'retry.carrier_error.wait_seconds', message: 'is required' },
      ]);
      expect(problems({ retry: { carrier_error: 3 } })).toEqual([{ field: 'retry.carrier_error', message: 'must be an object' }]);
    });
  });

  describe('recipient variables', () => {
    it('takes names of letters, digits and _ not starting with a digit, up to 40 characters (a call variable key limit)', () => {
      const names = ['a', 'A', '_', 'first_name', 'x'.repeat(40)];
      expect(accepts({ recipient_variables: names.map((name) => ({ name })) }).recipient_variables?.map((v) => v.name)).toEqual(names);
      const bad = ['', '1st', 'first-name', 'first name', 'x'.repeat(41), 'café'];
      expect(problems({ recipient_variables: bad.map((name) => ({ name })) })).toEqual(
        bad.map((_, i) => ({ field: `recipient_variables[${i}].name`, message: 'must be 1-40 letters, digits or _, not starting with a digit' })),
      );
    });

    it('refuses a repeated name, naming the later one', () => {
      expect(problems({ recipient_variables: [{ name: 'a' }, { name: 'b' }, { name: 'a' }] })).toEqual([
        { field: 'recipient_variables[2].name', message: 'repeats a' },
      ]);
    });

    it('requires a name, a known type and a boolean required', () => {
      expect(problems({ recipient_variables: [{ type: 'date', required: 'yes' }] })).toEqual([
        { field: 'recipient_variables[0].name', message: 'is required' },
        { field: 'recipient_variables[0].type', message: 'must be one of string, number, boolean' },
        { field: 'recipient_variables[0].required', message: 'must be true or false' },
      ]);
    });

    it('refuses a list that is not an array of objects', () => {
      expect(problems({ recipient_variables: { name: 'a' } })).toEqual([{ field: 'recipient_variables', message: 'must be an array' }]);
      expect(problems({ recipient_variables: ['a'] })).toEqual([{ field: 'recipient_variables[0]', message: 'must be an object' }]);
    });

    it('takes at most 100 variables', () => {
      const list = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `v${i}` }));
      expect(accepts({ recipient_variables: list(100) }).recipient_variables).toHaveLength(100);
      expect(fieldsOf(problems({ recipient_variables: list(101) }))).toEqual(['recipient_variables']);
    });
  });

  describe('success', () => {
    it('takes every call end reason', () => {
      expect(accepts({ success: { end_reasons: [...END_REASONS] } }).success?.end_reasons).toEqual([...END_REASONS]);
    });

    it('refuses an empty list and unknown end reasons', () => {
      expect(problems({ success: { end_reasons: [] } })).toEqual([{ field: 'success.end_reasons', message: 'must name at least one end reason' }]);
      expect(fieldsOf(problems({ success: { end_reasons: ['completed', 'answered', 3] } }))).toEqual(['success.end_reasons[1]', 'success.end_reasons[2]']);
      expect(problems({ success: { end_reasons: 'completed' } })).toEqual([{ field: 'success.end_reasons', message: 'must be an array' }]);
    });

    it('takes an extracted field with an optional string, number or boolean to equal', () => {
      for (const equals of ['yes', 3, false]) {
        expect(accepts({ success: { extracted_field: { name: 'outcome', equals } } }).success?.extracted_field).toEqual({ name: 'outcome', equals });
      }
      expect(problems({ success: { extracted_field: { name: '' } } })).toEqual([{ field: 'success.extracted_field.name', message: 'must be 1-200 characters' }]);
      expect(problems({ success: { extracted_field: {} } })).toEqual([{ field: 'success.extracted_field.name', message: 'is required' }]);
      expect(problems({ success: { extracted_field: { name: 'x', equals: [1] } } })).toEqual([
        { field: 'success.extracted_field.equals', message: 'must be a string, a number or a boolean' },
      ]);
    });
  });

  describe('metadata', () => {
    it('takes up to 50 string values under keys of 1-40 characters, values up to 500', () => {
      const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
      expect(accepts({ metadata: fifty }).metadata).toEqual(fifty);
      expect(accepts({ metadata: { ['k'.repeat(40)]: 'v'.repeat(500) } }).metadata).toBeDefined();
    });

    it('refuses more than 50 keys, long keys, long values and values that are not strings', () => {
      const fiftyOne = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
      expect(problems({ metadata: fiftyOne })).toEqual([{ field: 'metadata', message: 'must have at most 50 keys' }]);
      expect(problems({ metadata: { ['k'.repeat(41)]: 'v', long: 'v'.repeat(501), n: 1, '': 'v' } })).toEqual([
        { field: `metadata.${'k'.repeat(41)}`, message: 'key must be 1-40 characters' },
        { field: 'metadata.long', message: 'must be at most 500 characters' },
        { field: 'metadata.n', message: 'must be a string' },
        { field: 'metadata.', message: 'key must be 1-40 characters' },
      ]);
      expect(problems({ metadata: ['a'] })).toEqual([{ field: 'metadata', message: 'must be an object of strings' }]);
    });
  });
});

describe('mergeWorkflowPatch', () => {
  const current = specOf(
    validateWorkflowSpec({
      ...minimal,
      description: 'spring',
      from: '+15555550123',
      timezone: 'Europe/London',
      calling_window: { days: ['sat'], start: '10:00', end: '12:00', holidays: ['2026-12-26'] },
      retry: { busy: { retries: 5, wait_seconds: 120 } },
      recipient_variables: [{ name: 'first_name', required: true }, { name: 'plan' }],
      success: { end_reasons: ['completed'], extracted_field: { name: 'renewed' } },
      metadata: { team: 'sales', region: 'eu' },
    }),
  );

  it('merges scalars and leaves the fields it does not name', () => {
    const merged = specOf(mergeWorkflowPatch(current, { name: 'Renewals 2', concurrency: 20 }));
    expect(merged).toEqual({ ...current, name: 'Renewals 2', concurrency: 20 });
  });

  it('replaces the calling window whole: fields the patch leaves out fall back to their defaults', () => {
    const merged = specOf(mergeWorkflowPatch(current, { calling_window: { start: '08:00' } }));
    expect(merged.calling_window).toEqual({ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '08:00', end: '17:00', holidays: [] });
  });

  it('replaces the retry policy whole: outcomes it leaves out take their defaults again', () => {
    const merged = specOf(mergeWorkflowPatch(current, { retry: { voicemail: { retries: 1, wait_seconds: 600 } } }));
    expect(merged.retry).toEqual({ ...DEFAULT_RETRY, voicemail: { retries: 1, wait_seconds: 600 } });
  });

  it('replaces lists, success and metadata whole', () => {
    const merged = specOf(
      mergeWorkflowPatch(current, {
        recipient_variables: [{ name: 'plan', type: 'number' }],
        success: { extracted_field: { name: 'paid', equals: 'yes' } },
        metadata: { team: 'support' },
      }),
    );
    expect(merged.recipient_variables).toEqual([{ name: 'plan', type: 'number', required: false }]);
    expect(merged.success).toEqual({ end_reasons: ['completed', 'hangup', 'transferred'], extracted_field: { name: 'paid', equals: 'yes' } });
    expect(merged.metadata).toEqual({ team: 'support' });
  });

  it('clears optional fields given null back to their defaults', () => {
    const merged = specOf(
      mergeWorkflowPatch(current, { description: null, from: null, timezone: null, calling_window: null, retry: null, recipient_variables: null, metadata: null }),
    );
    expect(merged).not.toHaveProperty('description');
    expect(merged).not.toHaveProperty('from');
    expect(merged.timezone).toBe('UTC');
    expect(merged.calling_window).toEqual({ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00', holidays: [] });
    expect(merged.retry).toEqual(DEFAULT_RETRY);
    expect(merged.recipient_variables).toEqual([]);
    expect(merged.metadata).toEqual({});
  });

  it('reports a required field cleared with null as missing', () => {
    expect(problemsOf(mergeWorkflowPatch(current, { name: null, agent_id: null }))).toEqual([
      { field: 'name', message: 'is required' },
      { field: 'agent_id', message: 'is required' },
    ]);
  });

  it('validates the merged result with the same rules and paths', () => {
    expect(problemsOf(mergeWorkflowPatch(current, { concurrency: 0, calling_window: { start: '12:00', end: '11:00' }, colour: 'red' }))).toEqual([
      { field: 'colour', message: 'is not a known field' },
      { field: 'calling_window.end', message: 'must be after start (12:00)' },
      { field: 'concurrency', message: 'must be an integer from 1 to 1000' },
    ]);
  });

  it('answers the current spec for an empty patch and refuses a patch that is not an object', () => {
    expect(specOf(mergeWorkflowPatch(current, {}))).toEqual(current);
    expect(problemsOf(mergeWorkflowPatch(current, []))).toEqual([{ field: '', message: 'must be an object' }]);
  });

  it('leaves the current spec untouched', () => {
    const before = JSON.stringify(current);
    mergeWorkflowPatch(current, { name: 'x', calling_window: { days: ['sun'] }, metadata: null });
    expect(JSON.stringify(current)).toBe(before);
  });
});
