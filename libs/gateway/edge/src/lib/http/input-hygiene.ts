import { FieldProblem } from '@parley/contracts';
import { AppError } from '@parley/rpc';
import { fieldPath } from './validation';

/**
 * Bounds on a JSON body's shape, checked before anything recursive (class-transformer, validation) walks it. No
 * legitimate body comes near them: the deepest (an agent's flow condition value) nests about 12 levels, the longest
 * list (a post-call test transcript) holds 2 000 items and the largest map 200 entries.
 */
export const JSON_LIMITS = { maxDepth: 32, maxArrayItems: 10_000, maxObjectKeys: 1_000 } as const;

/** Problems listed in one refusal; a body with more still gets its refusal, with the first ones named. */
const MAX_REPORTED = 100;

/** A NUL character or a UTF-16 surrogate without its pair: text PostgreSQL cannot store (nor UTF-8 encode). */
// eslint-disable-next-line no-control-regex -- the NUL character is what is looked for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

export const UNSTORABLE_MESSAGE = 'contains a NUL character or an unpaired surrogate, which cannot be stored';

export function isUnstorable(text: string): boolean {
  return UNSTORABLE.test(text);
}

/** A key as it may appear in a field path: its unstorable characters written as `\uXXXX`. */
function printable(key: string): string {
  return key.replace(UNSTORABLE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A parsed JSON body's refusal, or undefined when it may go on: 400 `invalid_request` when it nests deeper or holds
 * a longer list or larger object than JSON_LIMITS; otherwise 422 `validation_error` naming every key or string value
 * that holds unstorable text, by the same field paths as other validation errors. Iterative, so no depth overflows it.
 */
export function inspectBody(body: unknown): AppError | undefined {
  const problems: FieldProblem[] = [];
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: body, path: '', depth: 0 }];
  while (stack.length) {
    const { value, path, depth } = stack.pop() as (typeof stack)[number];
    if (typeof value === 'string') {
      if (isUnstorable(value)) problems.push({ field: path || 'body', message: UNSTORABLE_MESSAGE });
      continue;
    }
    if (!value || typeof value !== 'object') continue;
    if (depth + 1 > JSON_LIMITS.maxDepth) {
      return new AppError('invalid_request', `The body nests deeper than ${JSON_LIMITS.maxDepth} levels.`);
    }
    if (Array.isArray(value)) {
      if (value.length > JSON_LIMITS.maxArrayItems) return tooLarge(path, `more than ${JSON_LIMITS.maxArrayItems} items`);
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    const keys = Object.keys(value);
    if (keys.length > JSON_LIMITS.maxObjectKeys) return tooLarge(path, `more than ${JSON_LIMITS.maxObjectKeys} fields`);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i];
      const child = fieldPath(path, printable(key));
      if (isUnstorable(key)) problems.push({ field: child, message: `is a field name that ${UNSTORABLE_MESSAGE}` });
      stack.push({ value: (value as Record<string, unknown>)[key], path: child, depth: depth + 1 });
    }
  }
  return problems.length ? AppError.validation(problems.slice(0, MAX_REPORTED)) : undefined;
}

function tooLarge(path: string, what: string): AppError {
  const field = path || 'body';
  return new AppError('invalid_request', `${field} holds ${what}.`, [{ field, message: `holds ${what}` }]);
}

/** 400 `invalid_request` naming each query parameter whose name or value holds unstorable text. */
export function inspectQuery(query: Record<string, unknown>): AppError | undefined {
  const bad = Object.entries(query)
    .filter(([name, value]) => isUnstorable(name) || [value].flat().some((v) => typeof v === 'string' && isUnstorable(v)))
    .map(([name]) => printable(name));
  if (!bad.length) return undefined;
  return new AppError(
    'invalid_request',
    `Query parameter${bad.length > 1 ? 's' : ''} ${bad.join(', ')} ${UNSTORABLE_MESSAGE}.`,
    bad.map((field) => ({ field, message: UNSTORABLE_MESSAGE })),
  );
}

/** 404 `not_found` when a path parameter holds unstorable text: no object has such an id. */
export function inspectParams(params: Record<string, unknown>): AppError | undefined {
  const bad = Object.values(params).some((v) => typeof v === 'string' && isUnstorable(v));
  return bad ? AppError.notFound() : undefined;
}
