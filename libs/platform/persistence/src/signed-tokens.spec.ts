import { SignedTokens } from './signed-tokens';

const SECRET = 'x'.repeat(40);

describe('SignedTokens', () => {
  const tokens = new SignedTokens<{ call_id: string }>(SECRET, 'media-stream');

  it('verifies its own token and returns the claims without exp', () => {
    const { token, expiresAt } = tokens.sign({ call_id: 'call_1' }, 60, 1_000_000);
    expect(tokens.verify(token, 1_000_000)).toEqual({ call_id: 'call_1' });
    expect(expiresAt.getTime()).toBe(1_060_000);
  });

  it('refuses an expired token', () => {
    const { token } = tokens.sign({ call_id: 'call_1' }, 60, 1_000_000);
    expect(tokens.verify(token, 1_060_000)).toBeUndefined();
  });

  it('refuses a token whose claims were changed', () => {
    const { token } = tokens.sign({ call_id: 'call_1' }, 60);
    const [, mac] = token.split('.');
    const forged = `${Buffer.from(JSON.stringify({ call_id: 'call_2', exp: 9e9 })).toString('base64url')}.${mac}`;
    expect(tokens.verify(forged)).toBeUndefined();
  });

  it('refuses a token minted for another purpose or under another secret', () => {
    const { token } = tokens.sign({ call_id: 'call_1' }, 60);
    expect(new SignedTokens(SECRET, 'recording').verify(token)).toBeUndefined();
    expect(new SignedTokens('y'.repeat(40), 'media-stream').verify(token)).toBeUndefined();
  });

  it('refuses garbage', () => {
    for (const garbage of ['', 'abc', 'a.b.c', '.', 'e30.']) expect(tokens.verify(garbage)).toBeUndefined();
  });
});
