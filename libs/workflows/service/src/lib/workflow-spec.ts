/*
 * A workflow's definition as it arrives (parsed JSON, unknown): every problem at once under its field path, or the
 * spec with its defaults filled. Pure; the service stores what this returns.
 *
 * `null` stands for "absent" for every optional field, on create as on PATCH (where it clears the field back to its
 * default), so the same rule holds wherever a client sends it.
 */
import {
  CallingWindow,
  DEFAULT_SUCCESS_END_REASONS,
  FieldProblem,
  RecipientVariable,
  RETRYABLE_OUTCOMES,
  RetryableOutcome,
  RetryRule,
  SuccessCriteria,
  successCriteriaProblems,
  WEEKDAYS,
  Weekday,
  WorkflowSpec,
} from '@parley/contracts';
import { DateTime } from 'luxon';
import { DEFAULT_CALLING_WINDOW, isValidTimezone, MAX_SEARCH_DAYS, minutesOfDay } from './calling-window';

export const DEFAULT_TIMEZONE = 'UTC';
export const DEFAULT_CONCURRENCY = 5;
export const MAX_CONCURRENCY = 1000;
export const DEFAULT_RETRY: Readonly<Record<RetryableOutcome, Readonly<RetryRule>>> = Object.freeze({
  busy: { retries: 2, wait_seconds: 600 },
  no_answer: { retries: 2, wait_seconds: 3600 },
  carrier_error: { retries: 1, wait_seconds: 300 },
  voicemail: { retries: 0, wait_seconds: 3600 },
});
export const MAX_RECIPIENT_VARIABLES = 100;
export const MAX_HOLIDAYS = 366;
export const MAX_METADATA_ENTRIES = 50;
export const RECIPIENT_VARIABLE_NAME = /^[a-z_][a-z0-9_]{0,39}$/i;
const RECIPIENT_VARIABLE_TYPES = ['string', 'number', 'boolean'] as const;

/*
 * Caller id: a strict E.164 check (`+`, 2-15 digits, the first not 0), the carriers' own rule, rather than
 * libphonenumber-js's isValidPhoneNumber: the caller id is a number the carrier account owns, and the dev carrier's
 * and tests' fictional +1555 numbers, which the numbering-plan metadata calls invalid, must be accepted.
 */
const E164 = /^\+[1-9]\d{1,14}$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

export type WorkflowSpecResult = { spec: WorkflowSpec } | { problems: FieldProblem[] };

type Json = Record<string, unknown>;

const SPEC_FIELDS = [
  'name',
  'description',
  'agent_id',
  'from',
  'timezone',
  'calling_window',
  'concurrency',
  'retry',
  'recipient_variables',
  'success',
  'metadata',
] as const satisfies readonly (keyof WorkflowSpec)[];

/** Collects problems under dotted paths while a value is read. */
class Checker {
  readonly problems: FieldProblem[] = [];

  add(field: string, message: string): void {
    this.problems.push({ field, message });
  }

  /** The value as an object, reporting it and each field outside `known`; undefined when it is no object. */
  object(value: unknown, field: string, known: readonly string[]): Json | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.add(field, 'must be an object');
      return undefined;
    }
    for (const key of Object.keys(value)) if (!known.includes(key)) this.add(join(field, key), 'is not a known field');
    return value as Json;
  }

  string(value: unknown, field: string, min: number, max: number): string | undefined {
    if (typeof value !== 'string') return void this.add(field, 'must be a string');
    if (value.length < min || value.length > max) {
      return void this.add(field, min > 0 ? `must be ${min}-${max} characters` : `must be at most ${max} characters`);
    }
    return value;
  }

  integer(value: unknown, field: string, min: number, max: number): number | undefined {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      return void this.add(field, `must be an integer from ${min} to ${max}`);
    }
    return value;
  }

  array(value: unknown, field: string): unknown[] | undefined {
    if (!Array.isArray(value)) return void this.add(field, 'must be an array');
    return value;
  }
}

const join = (parent: string, key: string) => (parent ? `${parent}.${key}` : key);
const isAbsent = (value: unknown) => value === undefined || value === null;

/** Validates a workflow definition (create, or the result of a PATCH merge) and fills its defaults. */
export function validateWorkflowSpec(input: unknown): WorkflowSpecResult {
  const check = new Checker();
  const body = check.object(input, '', SPEC_FIELDS);
  if (!body) return { problems: check.problems };

  const name = isAbsent(body['name']) ? void check.add('name', 'is required') : check.string(body['name'], 'name', 1, 200);
  const description = isAbsent(body['description']) ? undefined : check.string(body['description'], 'description', 0, 1000);
  const agentId = readAgentId(check, body['agent_id']);
  const from = readFrom(check, body['from']);
  const timezone = isAbsent(body['timezone']) ? DEFAULT_TIMEZONE : readTimezone(check, body['timezone'], 'timezone');
  const callingWindow = readCallingWindow(check, body['calling_window']);
  const concurrency = isAbsent(body['concurrency'])
    ? DEFAULT_CONCURRENCY
    : check.integer(body['concurrency'], 'concurrency', 1, MAX_CONCURRENCY);
  const retry = readRetry(check, body['retry']);
  const recipientVariables = readRecipientVariables(check, body['recipient_variables']);
  const success = readSuccess(check, body['success']);
  const metadata = readMetadata(check, body['metadata'], 'metadata');

  if (check.problems.length) return { problems: check.problems };
  const spec: WorkflowSpec = {
    name: name as string,
    ...(description !== undefined ? { description } : {}),
    agent_id: agentId as string,
    ...(from !== undefined ? { from } : {}),
    timezone,
    calling_window: callingWindow,
    concurrency,
    retry,
    recipient_variables: recipientVariables,
    success,
    metadata,
  };
  return { spec };
}

/**
 * Applies a PATCH body to a stored spec, then validates the result as a whole. Scalars (name, description, agent_id,
 * from, timezone, concurrency) merge field by field; blocks and lists (calling_window, retry, success,
 * recipient_variables, metadata) are replaced whole by what the patch gives; `null` clears an optional field back to
 * its default (and a required one is then reported missing). Unknown fields are refused.
 */
export function mergeWorkflowPatch(current: WorkflowSpec, patch: unknown): WorkflowSpecResult {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
    return { problems: [{ field: '', message: 'must be an object' }] };
  }
  const merged: Json = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else if (value !== undefined) merged[key] = value;
  }
  return validateWorkflowSpec(merged);
}

function readAgentId(check: Checker, value: unknown): string | undefined {
  if (isAbsent(value)) return void check.add('agent_id', 'is required');
  const id = check.string(value, 'agent_id', 1, 200);
  if (id !== undefined && !/^agt_\S+$/.test(id)) return void check.add('agent_id', 'must be an agent id (agt_…)');
  return id;
}

function readFrom(check: Checker, value: unknown): string | undefined {
  if (isAbsent(value)) return undefined;
  if (typeof value !== 'string' || !E164.test(value)) return void check.add('from', 'must be an E.164 number, such as +15555550123');
  return value;
}

function readTimezone(check: Checker, value: unknown, field: string): string {
  if (!isValidTimezone(value)) {
    check.add(field, 'must be an IANA time zone, such as Europe/London');
    return DEFAULT_TIMEZONE;
  }
  return value;
}

function readCallingWindow(check: Checker, value: unknown): Required<CallingWindow> {
  const defaults: Required<CallingWindow> = { ...DEFAULT_CALLING_WINDOW, days: [...DEFAULT_CALLING_WINDOW.days], holidays: [] };
  if (isAbsent(value)) return defaults;
  const w = check.object(value, 'calling_window', ['days', 'start', 'end', 'holidays']);
  if (!w) return defaults;
  const problemsBefore = check.problems.length;

  let days = defaults.days;
  if (!isAbsent(w['days'])) {
    const given = check.array(w['days'], 'calling_window.days');
    if (given) {
      if (given.length === 0) check.add('calling_window.days', 'must name at least one day');
      given.forEach((day, i) => {
        const field = `calling_window.days[${i}]`;
        if (!WEEKDAYS.includes(day as Weekday)) check.add(field, `must be one of ${WEEKDAYS.join(', ')}`);
        else if (given.indexOf(day) !== i) check.add(field, `repeats ${String(day)}`);
      });
      days = given as Weekday[];
    }
  }

  const readTime = (key: 'start' | 'end'): string => {
    const time = w[key];
    if (isAbsent(time)) return defaults[key];
    if (typeof time !== 'string' || minutesOfDay(time) === undefined) check.add(`calling_window.${key}`, 'must be HH:MM, from 00:00 to 23:59');
    return time as string;
  };
  const start = readTime('start');
  const end = readTime('end');
  const startMinutes = minutesOfDay(start);
  const endMinutes = minutesOfDay(end);
  if (startMinutes !== undefined && endMinutes !== undefined && endMinutes <= startMinutes) {
    check.add('calling_window.end', `must be after start (${start})`);
  }

  let holidays = defaults.holidays;
  if (!isAbsent(w['holidays'])) {
    const given = check.array(w['holidays'], 'calling_window.holidays');
    if (given) {
      if (given.length > MAX_HOLIDAYS) check.add('calling_window.holidays', `must have at most ${MAX_HOLIDAYS} dates`);
      given.forEach((date, i) => {
        if (!isIsoDate(date)) check.add(`calling_window.holidays[${i}]`, 'must be a date, YYYY-MM-DD');
      });
      holidays = given as string[];
    }
  }

  const window = { days, start, end, holidays };
  if (check.problems.length === problemsBefore && holidaysBlockAYear(days, holidays)) {
    check.add('calling_window.holidays', 'leave no calling day for more than a year');
  }
  return window;
}

function isIsoDate(value: unknown): value is string {
  return typeof value === 'string' && ISO_DATE.test(value) && DateTime.fromISO(value, { zone: 'utc' }).isValid;
}

/**
 * True when the holidays cover the calling days so densely that, from some day, the window would not open for more
 * than a year: nextCallableTime looks MAX_SEARCH_DAYS ahead and then gives up, so such a window is refused here.
 */
function holidaysBlockAYear(days: readonly Weekday[], holidays: readonly string[]): boolean {
  const allowed = new Set(days.map((day) => WEEKDAYS.indexOf(day) + 1));
  const blocked = [...new Set(holidays)]
    .map((date) => DateTime.fromISO(date, { zone: 'utc' }))
    .filter((date) => allowed.has(date.weekday))
    .sort((a, b) => a.toMillis() - b.toMillis());
  if (blocked.length === 0) return false;
  const nextCallingDay = (date: DateTime, step: 1 | -1) => {
    let day = date.plus({ days: step });
    while (!allowed.has(day.weekday)) day = day.plus({ days: step });
    return day;
  };
  // Walk runs of consecutive calling days that are all holidays; a run's gap is from the calling day before it to
  // the calling day after it.
  const isBlocked = new Set(blocked.map((date) => date.toISODate()));
  for (const first of blocked) {
    const before = nextCallingDay(first, -1);
    if (isBlocked.has(before.toISODate())) continue; // not the start of a run
    let after = nextCallingDay(first, 1);
    while (isBlocked.has(after.toISODate())) after = nextCallingDay(after, 1);
    if (after.diff(before, 'days').days > MAX_SEARCH_DAYS - 7) return true;
  }
  return false;
}

function readRetry(check: Checker, value: unknown): Record<RetryableOutcome, RetryRule> {
  const retry = Object.fromEntries(RETRYABLE_OUTCOMES.map((outcome) => [outcome, { ...DEFAULT_RETRY[outcome] }])) as Record<
    RetryableOutcome,
    RetryRule
  >;
  if (isAbsent(value)) return retry;
  const given = check.object(value, 'retry', RETRYABLE_OUTCOMES);
  if (!given) return retry;
  for (const outcome of RETRYABLE_OUTCOMES) {
    // An outcome the policy leaves out keeps its default rule: `{ "retries": 0 }` is how to turn one off.
    if (isAbsent(given[outcome])) continue;
    const field = `retry.${outcome}`;
    const rule = check.object(given[outcome], field, ['retries', 'wait_seconds']);
    if (!rule) continue;
    const retries = isAbsent(rule['retries']) ? void check.add(`${field}.retries`, 'is required') : check.integer(rule['retries'], `${field}.retries`, 0, 10);
    const wait = isAbsent(rule['wait_seconds'])
      ? void check.add(`${field}.wait_seconds`, 'is required')
      : check.integer(rule['wait_seconds'], `${field}.wait_seconds`, 60, 604_800);
    if (retries !== undefined && wait !== undefined) retry[outcome] = { retries, wait_seconds: wait };
  }
  return retry;
}

function readRecipientVariables(check: Checker, value: unknown): RecipientVariable[] {
  if (isAbsent(value)) return [];
  const given = check.array(value, 'recipient_variables');
  if (!given) return [];
  if (given.length > MAX_RECIPIENT_VARIABLES) check.add('recipient_variables', `must have at most ${MAX_RECIPIENT_VARIABLES} variables`);
  const variables: RecipientVariable[] = [];
  const seen = new Set<string>();
  given.forEach((item, i) => {
    const field = `recipient_variables[${i}]`;
    const variable = check.object(item, field, ['name', 'type', 'required']);
    if (!variable) return;
    const name = variable['name'];
    if (isAbsent(name)) check.add(`${field}.name`, 'is required');
    else if (typeof name !== 'string' || !RECIPIENT_VARIABLE_NAME.test(name)) {
      check.add(`${field}.name`, 'must be 1-40 letters, digits or _, not starting with a digit');
    } else if (seen.has(name)) check.add(`${field}.name`, `repeats ${name}`);
    else seen.add(name);
    const type = isAbsent(variable['type']) ? 'string' : variable['type'];
    if (!RECIPIENT_VARIABLE_TYPES.includes(type as never)) check.add(`${field}.type`, `must be one of ${RECIPIENT_VARIABLE_TYPES.join(', ')}`);
    const required = isAbsent(variable['required']) ? false : variable['required'];
    if (typeof required !== 'boolean') check.add(`${field}.required`, 'must be true or false');
    variables.push({ name: name as string, type: type as RecipientVariable['type'], required: required as boolean });
  });
  return variables;
}

function readSuccess(check: Checker, value: unknown): SuccessCriteria {
  const success: SuccessCriteria = { end_reasons: [...DEFAULT_SUCCESS_END_REASONS] };
  if (isAbsent(value)) return success;
  const given = check.object(value, 'success', ['end_reasons', 'extracted_field']);
  if (!given) return success;

  if (!isAbsent(given['end_reasons'])) {
    const reasons = check.array(given['end_reasons'], 'success.end_reasons');
    if (reasons) {
      success.end_reasons = reasons as string[];
      // The extracted field is checked against the agent's extraction by the domain (it reads the agent).
      for (const problem of successCriteriaProblems({ end_reasons: success.end_reasons }, 'success')) check.add(problem.field, problem.message);
    }
  }

  if (!isAbsent(given['extracted_field'])) {
    const field = check.object(given['extracted_field'], 'success.extracted_field', ['name', 'equals']);
    if (field) {
      const name = isAbsent(field['name'])
        ? void check.add('success.extracted_field.name', 'is required')
        : check.string(field['name'], 'success.extracted_field.name', 1, 200);
      const equals = field['equals'];
      if (!isAbsent(equals) && !['string', 'number', 'boolean'].includes(typeof equals)) {
        check.add('success.extracted_field.equals', 'must be a string, a number or a boolean');
      }
      success.extracted_field = { name: name as string, ...(isAbsent(equals) ? {} : { equals: equals as string | number | boolean }) };
    }
  }
  return success;
}

/** Metadata: at most 50 string values under keys of 1-40 characters, values of at most 500. */
export function readMetadata(check: { add(field: string, message: string): void }, value: unknown, field: string): Record<string, string> {
  if (isAbsent(value)) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    check.add(field, 'must be an object of strings');
    return {};
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_METADATA_ENTRIES) check.add(field, `must have at most ${MAX_METADATA_ENTRIES} keys`);
  for (const [key, item] of entries) {
    if (key.length < 1 || key.length > 40) check.add(join(field, key), 'key must be 1-40 characters');
    if (typeof item !== 'string') check.add(join(field, key), 'must be a string');
    else if (item.length > 500) check.add(join(field, key), 'must be at most 500 characters');
  }
  return { ...(value as Record<string, string>) };
}
