/*
 * One page of a run's recipients, as the API takes it (a JSON list or CSV text): a page-level problem list when the
 * page cannot be read, else each recipient normalized or suppressed with its reason. Pure; suppression by the
 * do-not-call list and dedupe across pages need the database and are the service's.
 *
 * Decisions:
 * - Shape errors (a field of the wrong type, an unknown field, metadata over its limits) refuse the page: the client
 *   sent something malformed. Content a person typed (a bad number, zone or variable value) suppresses that
 *   recipient only, with its reason, so one bad row does not sink a 10 000-row list.
 * - A variable whose value is empty counts as absent (an empty CSV cell is no value) and is left out.
 * - JSON may give a variable as a number or boolean; it is kept as text, as call variables are strings.
 * - Duplicates are counted among accepted recipients: the first accepted one of a number is called, later ones are
 *   suppressed `duplicate`; a row suppressed for another reason does not claim its number.
 */
import { FieldProblem, RecipientInput, RecipientVariable, SuppressionReason, WorkflowSpec } from '@parley/contracts';
import { parse as parseCsv } from 'csv-parse/sync';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { isValidTimezone } from './calling-window';
import { readMetadata } from './workflow-spec';

export interface NormalizedRecipient {
  /** E.164. */
  to: string;
  /** The recipient's IANA zone, or the workflow's. */
  timezone: string;
  /** Call variables: text, as calls take them. */
  variables: Record<string, string>;
  metadata: Record<string, string>;
}

export interface SuppressedRecipient {
  input: RecipientInput;
  /** The recipient's place in the page: the JSON array index, or the CSV data row (0 = the row under the header). */
  index: number;
  reason: SuppressionReason;
  message: string;
}

export interface RecipientsPage {
  recipients_json?: string;
  recipients_csv?: string;
}

export interface RecipientsPageOptions {
  maxPerPage: number;
  /**
   * How strictly numbers are checked: `valid` (default) by the numbering plan (libphonenumber-js isValid), `possible`
   * by length only (isPossible), for the dev carrier and tests whose fictional +1555 numbers no plan allocates.
   */
  numberCheck?: 'valid' | 'possible';
  /** A page with neither list is an empty page rather than a problem (a run started now, its recipients paged in later). */
  allowEmpty?: boolean;
}

export type RecipientsPageResult = { problems: FieldProblem[] } | { accepted: NormalizedRecipient[]; suppressed: SuppressedRecipient[] };

/** Call variables' limits (POST /v1/calls takes variables as metadata-like maps). */
export const MAX_VARIABLES_PER_RECIPIENT = 50;
export const MAX_VARIABLE_LENGTH = 500;
/** Page problems listed at most; a page with more is refused with the first ones and a count of the rest. */
export const MAX_PAGE_PROBLEMS = 100;

const RECIPIENT_FIELDS = ['to', 'timezone', 'variables', 'metadata'];
const METADATA_COLUMN = 'metadata.';
// A number as a person writes it: a leading + country code, then digits with spaces, dashes, dots or parentheses.
const DIALLABLE = /^\+[\d\s().-]+$/;

/** What identifies a recipient for dedupe, within a page and across a run's pages: its E.164 number. */
export function dedupeKey(e164: string): string {
  return e164;
}

/** The E.164 form of a number written with a + country code, or undefined when it is not a callable number. */
export function normalizeNumber(text: string, numberCheck: 'valid' | 'possible' = 'valid'): string | undefined {
  const trimmed = text.trim();
  if (!DIALLABLE.test(trimmed)) return undefined;
  // No default country: without a + country code a number is ambiguous, and DIALLABLE has already required one.
  const phone = parsePhoneNumberFromString(trimmed);
  if (!phone || phone.ext) return undefined;
  return (numberCheck === 'valid' ? phone.isValid() : phone.isPossible()) ? phone.number : undefined;
}

export function parseRecipientsPage(page: RecipientsPage, spec: WorkflowSpec, options: RecipientsPageOptions): RecipientsPageResult {
  const hasJson = page.recipients_json !== undefined && page.recipients_json !== null;
  const hasCsv = page.recipients_csv !== undefined && page.recipients_csv !== null;
  if (hasJson && hasCsv) return { problems: [{ field: 'recipients_csv', message: 'give recipients_json or recipients_csv, not both' }] };
  if (!hasJson && !hasCsv && options.allowEmpty) return { accepted: [], suppressed: [] };
  if (!hasJson && !hasCsv) return { problems: [{ field: 'recipients_json', message: 'give recipients_json or recipients_csv' }] };
  const read = hasJson ? readJson(page.recipients_json as string, options) : readCsv(page.recipients_csv as string, options);
  if ('problems' in read) return { problems: capped(read.problems) };
  return normalizeAll(read.inputs, spec, options);
}

/** One recipient normalized against the workflow, or why it is suppressed (everything but `duplicate`). */
export function normalizeRecipient(
  input: RecipientInput,
  spec: WorkflowSpec,
  numberCheck: 'valid' | 'possible' = 'valid',
): { recipient: NormalizedRecipient } | { reason: SuppressionReason; message: string } {
  const to = normalizeNumber(input.to, numberCheck);
  if (!to) {
    return { reason: 'invalid_number', message: `${JSON.stringify(input.to)} is not a valid phone number with a + country code` };
  }
  const timezone = input.timezone || spec.timezone || 'UTC';
  if (!isValidTimezone(timezone)) return { reason: 'invalid_timezone', message: `${JSON.stringify(timezone)} is not an IANA time zone` };
  const variables = normalizeVariables(input.variables ?? {}, spec.recipient_variables ?? []);
  if ('message' in variables) return { reason: 'invalid_variables', message: variables.message };
  return { recipient: { to, timezone, variables: variables.values, metadata: { ...(input.metadata ?? {}) } } };
}

function normalizeAll(inputs: RecipientInput[], spec: WorkflowSpec, options: RecipientsPageOptions): RecipientsPageResult {
  const accepted: NormalizedRecipient[] = [];
  const suppressed: SuppressedRecipient[] = [];
  const firstIndex = new Map<string, number>();
  inputs.forEach((input, index) => {
    const result = normalizeRecipient(input, spec, options.numberCheck);
    if ('reason' in result) return void suppressed.push({ input, index, reason: result.reason, message: result.message });
    const key = dedupeKey(result.recipient.to);
    const first = firstIndex.get(key);
    if (first !== undefined) {
      return void suppressed.push({ input, index, reason: 'duplicate', message: `${result.recipient.to} is already recipient ${first} of this page` });
    }
    firstIndex.set(key, index);
    accepted.push(result.recipient);
  });
  return { accepted, suppressed };
}

function normalizeVariables(
  given: Record<string, string>,
  declared: readonly RecipientVariable[],
): { values: Record<string, string> } | { message: string } {
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) if (value !== '') values[name] = value;
  for (const variable of declared) {
    const value = values[variable.name];
    if (value === undefined) {
      if (variable.required) return { message: `variable ${variable.name} is required` };
      continue;
    }
    if (variable.type === 'number') {
      const text = value.trim();
      if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text) || !Number.isFinite(Number(text))) {
        return { message: `variable ${variable.name} must be a number, got ${JSON.stringify(value)}` };
      }
      values[variable.name] = text;
    } else if (variable.type === 'boolean') {
      const text = value.trim().toLowerCase();
      if (text !== 'true' && text !== 'false') return { message: `variable ${variable.name} must be true or false, got ${JSON.stringify(value)}` };
      values[variable.name] = text;
    }
  }
  const names = Object.keys(values);
  if (names.length > MAX_VARIABLES_PER_RECIPIENT) return { message: `has ${names.length} variables, more than ${MAX_VARIABLES_PER_RECIPIENT}` };
  const long = names.find((name) => values[name].length > MAX_VARIABLE_LENGTH);
  if (long) return { message: `variable ${long} is longer than ${MAX_VARIABLE_LENGTH} characters` };
  return { values };
}

type Read = { inputs: RecipientInput[] } | { problems: FieldProblem[] };

function tooMany(field: string, count: number, max: number): FieldProblem {
  return { field, message: `has ${count} recipients, more than the ${max} a page takes; send the rest in further pages` };
}

function capped(problems: FieldProblem[]): FieldProblem[] {
  if (problems.length <= MAX_PAGE_PROBLEMS) return problems;
  const rest = problems.length - MAX_PAGE_PROBLEMS;
  return [...problems.slice(0, MAX_PAGE_PROBLEMS), { field: problems[MAX_PAGE_PROBLEMS].field, message: `and ${rest} more problems` }];
}

function readJson(text: string, options: RecipientsPageOptions): Read {
  const field = 'recipients_json';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { problems: [{ field, message: `is not valid JSON: ${jsonErrorWithLine(text, error)}` }] };
  }
  if (!Array.isArray(parsed)) return { problems: [{ field, message: 'must be a JSON array of recipients' }] };
  if (parsed.length > options.maxPerPage) return { problems: [tooMany(field, parsed.length, options.maxPerPage)] };

  const problems: FieldProblem[] = [];
  const add = (path: string, message: string) => void problems.push({ field: path, message });
  const inputs = parsed.map((item, i): RecipientInput => {
    const at = `${field}[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      add(at, 'must be an object');
      return { to: '' };
    }
    const raw = item as Record<string, unknown>;
    for (const key of Object.keys(raw)) if (!RECIPIENT_FIELDS.includes(key)) add(`${at}.${key}`, 'is not a known field');
    const input: RecipientInput = { to: '' };
    if (raw['to'] === undefined || raw['to'] === null) add(`${at}.to`, 'is required');
    else if (typeof raw['to'] !== 'string') add(`${at}.to`, 'must be a string');
    else input.to = raw['to'];
    if (raw['timezone'] !== undefined && raw['timezone'] !== null) {
      if (typeof raw['timezone'] !== 'string') add(`${at}.timezone`, 'must be a string');
      else input.timezone = raw['timezone'];
    }
    if (raw['variables'] !== undefined && raw['variables'] !== null) {
      const variables = raw['variables'];
      if (typeof variables !== 'object' || Array.isArray(variables)) add(`${at}.variables`, 'must be an object');
      else {
        input.variables = {};
        for (const [name, value] of Object.entries(variables as Record<string, unknown>)) {
          if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') input.variables[name] = String(value);
          else add(`${at}.variables.${name}`, 'must be a string, a number or a boolean');
        }
      }
    }
    if (raw['metadata'] !== undefined && raw['metadata'] !== null) input.metadata = readMetadata({ add }, raw['metadata'], `${at}.metadata`);
    return input;
  });
  return problems.length ? { problems } : { inputs };
}

/** JSON.parse's message with the line and column of the position it names (Node names only the offset). */
function jsonErrorWithLine(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const position = /at position (\d+)/.exec(message);
  if (!position || /\(line \d+/.test(message)) return message;
  const before = text.slice(0, Number(position[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `${message} (line ${line} column ${column})`;
}

/** A record as csv-parse gives it with `info`: its fields and the line it ends on. */
interface CsvRow {
  record: string[];
  info: { lines: number };
}

function readCsv(text: string, options: RecipientsPageOptions): Read {
  const field = 'recipients_csv';
  let rows: CsvRow[];
  try {
    // The header is read here rather than by csv-parse's `columns`, to check it and keep each row's line.
    rows = parseCsv(text, { bom: true, trim: true, skip_empty_lines: true, info: true }) as unknown as CsvRow[];
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { problems: [{ field, message: `is not valid CSV: ${message}` }] };
  }
  if (rows.length === 0) return { problems: [{ field, message: 'has no header row' }] };
  const [header, ...data] = rows;
  if (data.length > options.maxPerPage) return { problems: [tooMany(field, data.length, options.maxPerPage)] };

  const problems: FieldProblem[] = [];
  const columns = header.record;
  const seen = new Set<string>();
  columns.forEach((name, i) => {
    if (!name) problems.push({ field, message: `column ${i + 1} of the header has no name` });
    else if (name === METADATA_COLUMN) problems.push({ field, message: `column ${i + 1} (${name}) names no metadata key` });
    else if (seen.has(reserved(name) ?? name)) problems.push({ field, message: `the header repeats the column ${name}` });
    seen.add(reserved(name) ?? name);
  });
  const toColumn = columns.findIndex((name) => reserved(name) === 'to');
  if (toColumn < 0) problems.push({ field, message: 'has no `to` column in its header row' });
  if (problems.length) return { problems };

  const inputs = data.map(({ record, info }): RecipientInput => {
    const input: RecipientInput = { to: record[toColumn] ?? '' };
    columns.forEach((name, i) => {
      const value = record[i] ?? '';
      const role = reserved(name);
      if (role === 'to') return;
      if (role === 'timezone') {
        if (value) input.timezone = value;
      } else if (name.startsWith(METADATA_COLUMN)) {
        if (value) (input.metadata ??= {})[name.slice(METADATA_COLUMN.length)] = value;
      } else if (value) (input.variables ??= {})[name] = value;
    });
    if (input.metadata) {
      readMetadata({ add: (path, message) => void problems.push({ field, message: `line ${info.lines}: ${path} ${message}` }) }, input.metadata, 'metadata');
    }
    return input;
  });
  return problems.length ? { problems } : { inputs };
}

/** `to` and `timezone` are the CSV's own columns, whatever their case (spreadsheets write `To`); others are variables. */
function reserved(column: string): 'to' | 'timezone' | undefined {
  const lower = column.toLowerCase();
  return lower === 'to' || lower === 'timezone' ? lower : undefined;
}
