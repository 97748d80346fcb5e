import type { FlowCondition, VariableType } from '@parley/contracts';
import { conditionHolds, expressionHolds } from './conditions';

const values = { budget: '1500', name: 'Ada Lovelace', vip: 'yes', digit: '2', zip: '007', empty: '' };
const types: Record<string, VariableType> = { budget: 'number', vip: 'boolean', zip: 'string' };
const holds = (variable: string, operator: FlowCondition['operator'], value?: unknown) => conditionHolds({ variable, operator, value }, { values, types });

describe('expression conditions', () => {
  it('compares a variable declared number numerically, with every operator', () => {
    expect(holds('budget', 'eq', 1500)).toBe(true);
    expect(holds('budget', 'eq', '1500.0')).toBe(true);
    expect(holds('budget', 'neq', 1500)).toBe(false);
    expect(holds('budget', 'gt', 1000)).toBe(true);
    expect(holds('budget', 'gte', 1500)).toBe(true);
    expect(holds('budget', 'lt', 1500)).toBe(false);
    expect(holds('budget', 'lte', 1500)).toBe(true);
    expect(holds('budget', 'in', [100, 1500])).toBe(true);
    expect(holds('budget', 'not_in', [100, 200])).toBe(true);
  });

  it('compares undeclared and string variables as text, exactly', () => {
    expect(holds('zip', 'eq', '007')).toBe(true);
    expect(holds('zip', 'eq', 7)).toBe(false);
    expect(holds('digit', 'eq', 2)).toBe(true); // the JSON number 2 reads as the text "2"
    expect(holds('name', 'eq', 'ada lovelace')).toBe(false);
    expect(holds('name', 'contains', 'Love')).toBe(true);
    expect(holds('name', 'contains', 'love')).toBe(false);
    expect(holds('digit', 'in', ['2', '3'])).toBe(true);
    expect(holds('digit', 'not_in', ['2', '3'])).toBe(false);
  });

  it('reads a variable declared boolean from true/false, yes/no or 1/0', () => {
    expect(holds('vip', 'eq', true)).toBe(true);
    expect(holds('vip', 'eq', 'true')).toBe(true);
    expect(holds('vip', 'neq', false)).toBe(true);
    expect(conditionHolds({ variable: 'vip', operator: 'eq', value: false }, { values: { vip: 'No' }, types })).toBe(true);
    expect(conditionHolds({ variable: 'vip', operator: 'eq', value: true }, { values: { vip: 'maybe' }, types })).toBe(false);
  });

  it('takes an absent or empty variable as not existing: every comparison false but neq and not_in', () => {
    expect(holds('missing', 'exists')).toBe(false);
    expect(holds('missing', 'not_exists')).toBe(true);
    expect(holds('empty', 'exists')).toBe(false);
    expect(holds('name', 'exists')).toBe(true);
    expect(holds('missing', 'eq', '')).toBe(false);
    expect(holds('missing', 'neq', 'x')).toBe(true);
    expect(holds('missing', 'gt', 0)).toBe(false);
    expect(holds('missing', 'not_in', ['x'])).toBe(true);
    expect(holds('missing', 'contains', 'x')).toBe(false);
  });

  it('compares gt/gte/lt/lte numerically even undeclared, and never a value that is no number', () => {
    expect(holds('digit', 'gt', 1)).toBe(true);
    expect(holds('name', 'gt', 1)).toBe(false);
    expect(conditionHolds({ variable: 'budget', operator: 'gt', value: 1000 }, { values: { budget: '1,500' }, types })).toBe(true);
  });

  it('combines conditions with and (default) or or; no condition never holds', () => {
    const scope = { values, types };
    const rich = { variable: 'budget', operator: 'gte' as const, value: 1000 };
    const bob = { variable: 'name', operator: 'eq' as const, value: 'Bob' };
    expect(expressionHolds({ conditions: [rich, bob] }, scope)).toBe(false);
    expect(expressionHolds({ logic: 'and', conditions: [rich] }, scope)).toBe(true);
    expect(expressionHolds({ logic: 'or', conditions: [rich, bob] }, scope)).toBe(true);
    expect(expressionHolds({ conditions: [] }, scope)).toBe(false);
    expect(expressionHolds(undefined, scope)).toBe(false);
  });
});
