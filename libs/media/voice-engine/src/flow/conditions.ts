import type { FlowCondition, FlowExpression, VariableType } from '@parley/contracts';

/** The call's variables as text (a dotted path is a key), and the types `flow.variables` declares for them. */
export interface VariableScope {
  values: Readonly<Record<string, string>>;
  types?: Readonly<Record<string, VariableType>>;
}

const BOOLEAN_TEXT: Record<string, boolean> = { true: true, false: false, yes: true, no: false, '1': true, '0': false };

/**
 * An expression edge's test. Every value is compared by the type `flow.variables` declares for the variable:
 * `number` numerically, `boolean` as true/false (`true`/`false`, `yes`/`no`, `1`/`0`), anything else as text,
 * exactly. `gt`/`gte`/`lt`/`lte` are numeric whatever the declaration (the agents service requires `number`
 * there). A variable that is absent or empty does not exist; every comparison with it is false, except `neq`
 * and `not_in`. No conditions: false.
 */
export function expressionHolds(expression: FlowExpression | undefined, scope: VariableScope): boolean {
  const conditions = expression?.conditions ?? [];
  if (!conditions.length) return false;
  const test = (c: FlowCondition) => conditionHolds(c, scope);
  return expression?.logic === 'or' ? conditions.some(test) : conditions.every(test);
}

export function conditionHolds(condition: FlowCondition, scope: VariableScope): boolean {
  const raw = scope.values[condition.variable];
  const actual = raw === undefined || raw === '' ? undefined : raw;
  const type = ['gt', 'gte', 'lt', 'lte'].includes(condition.operator) ? 'number' : scope.types?.[condition.variable] ?? 'string';
  const same = (expected: unknown) => actual !== undefined && equal(actual, expected, type);
  switch (condition.operator) {
    case 'exists':
      return actual !== undefined;
    case 'not_exists':
      return actual === undefined;
    case 'eq':
      return same(condition.value);
    case 'neq':
      return !same(condition.value);
    case 'in':
      return Array.isArray(condition.value) && condition.value.some(same);
    case 'not_in':
      return Array.isArray(condition.value) && !condition.value.some(same);
    case 'contains':
      return actual !== undefined && condition.value !== undefined && actual.includes(text(condition.value));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const a = number(actual);
      const b = number(condition.value);
      if (a === undefined || b === undefined) return false;
      return condition.operator === 'gt' ? a > b : condition.operator === 'gte' ? a >= b : condition.operator === 'lt' ? a < b : a <= b;
    }
    default:
      return false;
  }
}

function equal(actual: string, expected: unknown, type: VariableType): boolean {
  if (type === 'number') {
    const a = number(actual);
    return a !== undefined && a === number(expected);
  }
  if (type === 'boolean') {
    const a = boolean(actual);
    return a !== undefined && a === boolean(expected);
  }
  return actual === text(expected);
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A finite number, from a JSON number or its text; anything else is no number. */
export function number(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string' || !value.trim()) return undefined;
  const n = Number(value.trim().replace(/,/g, ''));
  return Number.isFinite(n) ? n : undefined;
}

export function boolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'string') return undefined;
  return BOOLEAN_TEXT[value.trim().toLowerCase()];
}
