import { ToolOutcome, ToolParameter } from './types';

export type ToolArguments = Record<string, unknown>;

/** The model's raw argument text as a JSON object; empty text is no arguments. */
export function parseArguments(raw: string): { args: ToolArguments } | { problem: string } {
  if (!raw.trim()) return { args: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { problem: 'the arguments are not valid JSON' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { problem: 'the arguments must be a JSON object' };
  // null is how models say "not given": treated as absent.
  return { args: Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null)) };
}

const typeOk: Record<ToolParameter['type'], (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  integer: (v) => typeof v === 'number' && Number.isInteger(v),
  boolean: (v) => typeof v === 'boolean',
};

/**
 * Checks arguments against a custom function's closed parameter list: every problem at once (unknown argument,
 * missing required one, wrong type, value outside the enum). A path argument may not be `.` or `..` (it would
 * climb the URL's path once percent-escaped: the URL parser reads %2E%2E as `..` too).
 */
export function checkParameters(args: ToolArguments, parameters: readonly ToolParameter[]): string[] {
  const problems: string[] = [];
  const declared = new Map(parameters.map((p) => [p.name, p]));
  for (const name of Object.keys(args)) if (!declared.has(name)) problems.push(`unknown argument "${name}"`);
  for (const p of parameters) {
    const value = args[p.name];
    if (value === undefined) {
      if (p.required) problems.push(`missing required argument "${p.name}"`);
      continue;
    }
    if (!typeOk[p.type]?.(value)) {
      problems.push(`"${p.name}" must be ${p.type === 'integer' ? 'an integer' : `a ${p.type}`}`);
      continue;
    }
    if (p.enum?.length && !p.enum.includes(value as string)) problems.push(`"${p.name}" must be one of ${p.enum.map((e) => JSON.stringify(e)).join(', ')}`);
    if ((p.in ?? 'body') === 'path' && (value === '.' || value === '..')) problems.push(`"${p.name}" may not be "${value}"`);
  }
  return problems;
}

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  enum?: unknown[];
  items?: Schema;
}

function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/**
 * Checks arguments against a registered function's JSON Schema: the common subset (type, properties, required,
 * additionalProperties false, enum, items), nested. Keywords beyond it are not enforced; the function's own
 * server remains the judge of the rest.
 */
export function checkSchema(value: unknown, schema: Schema, at = ''): string[] {
  const problems: string[] = [];
  const where = at || 'the arguments';
  const types = schema.type === undefined ? undefined : Array.isArray(schema.type) ? schema.type : [schema.type];
  const actual = jsonType(value);
  if (types && !types.some((t) => t === actual || (t === 'number' && actual === 'integer'))) {
    return [`${at ? `"${at}"` : where} must be ${types.join(' or ')}`];
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    problems.push(`"${at}" must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  }
  if (actual === 'object') {
    const object = value as Record<string, unknown>;
    const properties = schema.properties ?? {};
    for (const name of schema.required ?? []) if (object[name] === undefined) problems.push(`missing required argument "${at ? `${at}.` : ''}${name}"`);
    for (const [name, v] of Object.entries(object)) {
      const path = at ? `${at}.${name}` : name;
      if (properties[name]) problems.push(...checkSchema(v, properties[name], path));
      else if (schema.additionalProperties === false) problems.push(`unknown argument "${path}"`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') problems.push(...checkSchema(v, schema.additionalProperties, path));
    }
  }
  if (actual === 'array' && schema.items) (value as unknown[]).forEach((v, i) => problems.push(...checkSchema(v, schema.items as Schema, `${at}[${i}]`)));
  return problems;
}

/** Arguments refused before any request: the model reads why, so it can correct them or ask the caller. */
export function refused(problems: string[]): ToolOutcome {
  const list = problems.join('; ');
  return {
    ok: false,
    result: `Refused, no request was made: ${list}. Call the tool again with corrected arguments, or ask the caller for what is missing.`,
    error: `invalid arguments: ${list}`,
  };
}
