import { AppError } from '@parley/rpc';
import { inspectBody, inspectParams, inspectQuery, isUnstorable, JSON_LIMITS } from './input-hygiene';

/** `[[[…0…]]]` nested `depth` levels, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe('isUnstorable', () => {
  it.each([
    ['a NUL', 'a\u0000b'],
    ['a lone high surrogate', 'a\ud800b'],
    ['a high surrogate at the end', 'ab\ud83d'],
    ['a lone low surrogate', '\udc00ab'],
  ])('holds text with %s', (_case, text) => {
    expect(isUnstorable(text)).toBe(true);
  });

  it.each([
    ['plain text', 'Front desk'],
    ['a paired surrogate (emoji)', 'hi \ud83d\ude00'],
    ['right-to-left text', '\u202eמוקד'],
    ['the empty string', ''],
  ])('passes %s', (_case, text) => {
    expect(isUnstorable(text)).toBe(false);
  });
});

describe('inspectBody', () => {
  it('passes an ordinary body', () => {
    expect(inspectBody({ name: 'Desk', languages: [{ code: 'en-US' }], metadata: { team: 'x' }, flow: { nodes: [{ id: 'a' }] } })).toBeUndefined();
    expect(inspectBody(undefined)).toBeUndefined();
  });

  it('names every string value and field name holding unstorable text by its field path, at any depth', () => {
    const refusal = inspectBody({
      name: 'a\u0000',
      metadata: { 'k\ud800': 'v', ok: 'x\udfff' },
      flow: { nodes: [{ id: 'a' }, { id: 'b', edges: [{ to: '\u0000' }] }] },
    });

    expect(refusal).toBeInstanceOf(AppError);
    expect(refusal?.code).toBe('validation_error');
    expect(refusal?.errors?.map((e) => e.field)).toEqual(['name', 'metadata.k\\ud800', 'metadata.ok', 'flow.nodes[1].edges[0].to']);
  });

  it(`refuses nesting deeper than ${JSON_LIMITS.maxDepth} levels as invalid_request, and allows ${JSON_LIMITS.maxDepth}`, () => {
    expect(inspectBody(nested(JSON_LIMITS.maxDepth))).toBeUndefined();
    expect(inspectBody(nested(JSON_LIMITS.maxDepth + 1))).toMatchObject({ code: 'invalid_request' });
  });

  it('refuses a body nested 100 000 levels without overflowing the stack', () => {
    expect(inspectBody(nested(100_000))).toMatchObject({ code: 'invalid_request', message: `The body nests deeper than ${JSON_LIMITS.maxDepth} levels.` });
  });

  it('refuses a list or an object over its size limit, naming it', () => {
    expect(inspectBody({ turns: Array(JSON_LIMITS.maxArrayItems + 1).fill(0) })).toMatchObject({ code: 'invalid_request', errors: [{ field: 'turns' }] });
    const wide = Object.fromEntries(Array.from({ length: JSON_LIMITS.maxObjectKeys + 1 }, (_, i) => [`k${i}`, i]));
    expect(inspectBody({ metadata: wide })).toMatchObject({ code: 'invalid_request', errors: [{ field: 'metadata' }] });
    expect(inspectBody({ turns: Array(JSON_LIMITS.maxArrayItems).fill(0) })).toBeUndefined();
  });

  it('names at most 100 fields in one refusal', () => {
    expect(inspectBody({ list: Array(500).fill('\u0000') })?.errors).toHaveLength(100);
  });
});

describe('inspectQuery', () => {
  it('refuses a parameter whose value or name holds unstorable text with invalid_request naming it', () => {
    expect(inspectQuery({ limit: '10', starting_after: 'c\u0000' })).toMatchObject({ code: 'invalid_request', errors: [{ field: 'starting_after' }] });
    expect(inspectQuery({ 'a\ud800': '1' })).toMatchObject({ code: 'invalid_request', errors: [{ field: 'a\\ud800' }] });
    expect(inspectQuery({ status: ['ok', '\u0000'] })).toMatchObject({ errors: [{ field: 'status' }] });
  });

  it('passes ordinary parameters', () => {
    expect(inspectQuery({ limit: '10', status: 'ended' })).toBeUndefined();
  });
});

describe('inspectParams', () => {
  it('answers a path id holding unstorable text as not_found', () => {
    expect(inspectParams({ id: 'agt_\u0000' })).toMatchObject({ code: 'not_found' });
    expect(inspectParams({ id: 'agt_\ud800' })).toMatchObject({ code: 'not_found' });
    expect(inspectParams({ id: 'agt_abc' })).toBeUndefined();
  });
});
