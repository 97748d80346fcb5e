import { defaultProjectId, isWellFormedId, newId, projectCondition } from './ids';

describe('newId', () => {
  it('starts with the prefix and an underscore', () => {
    expect(newId('agt').startsWith('agt_')).toBe(true);
    expect(newId('call').startsWith('call_')).toBe(true);
  });

  it('carries 22 base62 characters after the prefix', () => {
    for (const prefix of ['agt', 'call', 'k']) {
      const id = newId(prefix);
      expect(id).toHaveLength(prefix.length + 1 + 22);
      expect(id).toMatch(new RegExp(`^${prefix}_[0-9A-Za-z]{22}$`));
    }
  });

  it('never repeats over 10,000 ids', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId('agt')));

    expect(ids.size).toBe(10_000);
  });

  it('uses the whole base62 alphabet', () => {
    const seen = new Set(
      Array.from({ length: 2_000 }, () => newId('x').slice(2))
        .join('')
        .split(''),
    );

    expect([...seen].sort().join('')).toBe('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz');
  });
});

describe('isWellFormedId', () => {
  it('accepts what newId gives for the same prefix', () => {
    expect(isWellFormedId('agt', newId('agt'))).toBe(true);
  });

  it.each([
    ['another prefix', newId('call')],
    ['no prefix', newId('agt').slice(4)],
    ['one character short', newId('agt').slice(0, -1)],
    ['one character over', `${newId('agt')}x`],
    ['a NUL byte', `${newId('agt').slice(0, -1)}\u0000`],
    ['an unpaired surrogate', `${newId('agt').slice(0, -1)}\ud800`],
    ['a character outside base62', `${newId('agt').slice(0, -1)}-`],
    ['the prefix alone', 'agt_'],
  ])('refuses %s', (_case, value) => {
    expect(isWellFormedId('agt', value)).toBe(false);
  });
});

describe('defaultProjectId', () => {
  it('is a well-formed project id, the same for the same account and another for another account', () => {
    const id = defaultProjectId('acme');
    expect(isWellFormedId('prj', id)).toBe(true);
    expect(defaultProjectId('acme')).toBe(id);
    expect(defaultProjectId('umbrella')).not.toBe(id);
  });
});

describe('projectCondition', () => {
  it('takes the rows without a project as the default project’s, and only the named one’s otherwise', () => {
    expect(projectCondition('a.project_id', 'acme', defaultProjectId('acme'), ':p')).toBe('(a.project_id = :p OR a.project_id IS NULL)');
    expect(projectCondition('a.project_id', 'acme', `prj_${'1'.repeat(22)}`, ':p')).toBe('a.project_id = :p');
  });
});
