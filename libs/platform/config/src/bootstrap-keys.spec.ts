import { API_KEY_PATTERN, parseBootstrapKeys } from './bootstrap-keys';

const KEY_A = 'vsk_local_owner_key_0001';
const KEY_B = 'vsk_ABCDEFGHIJKLMNOP-_09';

describe('parseBootstrapKeys', () => {
  it('parses comma-separated account:role:key triples', () => {
    expect(parseBootstrapKeys(`acme:owner:${KEY_A},beta-co:member:${KEY_B}`)).toEqual({
      keys: [
        { account: 'acme', role: 'owner', key: KEY_A },
        { account: 'beta-co', role: 'member', key: KEY_B },
      ],
      problems: [],
    });
  });

  it('accepts every role', () => {
    const { keys, problems } = parseBootstrapKeys(`a:owner:${KEY_A},b:admin:${KEY_A},c:member:${KEY_A}`);

    expect(problems).toEqual([]);
    expect(keys.map((k) => k.role)).toEqual(['owner', 'admin', 'member']);
  });

  it('returns nothing for an empty value', () => {
    expect(parseBootstrapKeys('')).toEqual({ keys: [], problems: [] });
  });

  it('ignores surrounding spaces and empty entries', () => {
    const { keys, problems } = parseBootstrapKeys(` acme:owner:${KEY_A} , ,`);

    expect(problems).toEqual([]);
    expect(keys).toEqual([{ account: 'acme', role: 'owner', key: KEY_A }]);
  });

  it('refuses an entry that is not a triple', () => {
    expect(parseBootstrapKeys('bad').problems).toEqual(['entry 1 must be account:role:key']);
    expect(parseBootstrapKeys('acme:owner').problems).toEqual(['entry 1 must be account:role:key']);
    expect(parseBootstrapKeys(`acme:owner:${KEY_A}:extra`).problems).toEqual(['entry 1 must be account:role:key']);
  });

  it('refuses a bad account name', () => {
    expect(parseBootstrapKeys(`ac me:owner:${KEY_A}`).problems).toEqual([
      "entry 1: account must be 1-64 letters, digits, '_' or '-'",
    ]);
    expect(parseBootstrapKeys(`:owner:${KEY_A}`).problems).toHaveLength(1);
    expect(parseBootstrapKeys(`${'a'.repeat(65)}:owner:${KEY_A}`).problems).toHaveLength(1);
    expect(parseBootstrapKeys(`${'a'.repeat(64)}:owner:${KEY_A}`).problems).toEqual([]);
  });

  it('refuses an unknown role', () => {
    expect(parseBootstrapKeys(`acme:root:${KEY_A}`).problems).toEqual(['entry 1: role must be one of owner, admin, member']);
  });

  it('refuses a key without the vsk_ prefix or of the wrong length or charset', () => {
    const problem = 'entry 1: key must start with vsk_ and carry 16-128 [A-Za-z0-9_-]';

    expect(parseBootstrapKeys('acme:owner:sk_local_owner_key_0001').problems).toEqual([problem]);
    expect(parseBootstrapKeys(`acme:owner:vsk_${'a'.repeat(15)}`).problems).toEqual([problem]);
    expect(parseBootstrapKeys(`acme:owner:vsk_${'a'.repeat(129)}`).problems).toEqual([problem]);
    expect(parseBootstrapKeys('acme:owner:vsk_local.owner.key.0001').problems).toEqual([problem]);
    expect(parseBootstrapKeys(`acme:owner:vsk_${'a'.repeat(16)}`).problems).toEqual([]);
    expect(parseBootstrapKeys(`acme:owner:vsk_${'a'.repeat(128)}`).problems).toEqual([]);
  });

  it('reports every problem of every entry, numbered by position', () => {
    const { problems } = parseBootstrapKeys(`acme:owner:${KEY_A},bad,a b:god:nokey`);

    expect(problems).toEqual([
      'entry 2 must be account:role:key',
      "entry 3: account must be 1-64 letters, digits, '_' or '-'",
      'entry 3: role must be one of owner, admin, member',
      'entry 3: key must start with vsk_ and carry 16-128 [A-Za-z0-9_-]',
    ]);
  });

  it('uses the same key pattern it exports', () => {
    expect(API_KEY_PATTERN.test(KEY_A)).toBe(true);
    expect(API_KEY_PATTERN.test('vsk_short')).toBe(false);
  });
});
