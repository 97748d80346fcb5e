import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Short-lived bearer tokens for things that cannot carry an API key: the carrier's media stream (per call) and
 * playable recording links. `<base64url(json claims)>.<base64url(HMAC-SHA256)>`, keyed per purpose from the
 * deployment secret, so a token minted for one purpose never verifies for another. Claims carry `exp` (unix s).
 */
export class SignedTokens<C extends object> {
  private readonly key: Buffer;

  constructor(
    secret: string,
    private readonly purpose: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'parley', `tokens:${purpose}`, 32));
  }

  sign(claims: C, ttlSeconds: number, now = Date.now()): { token: string; expiresAt: Date } {
    const exp = Math.floor(now / 1000) + ttlSeconds;
    const body = Buffer.from(JSON.stringify({ ...claims, exp })).toString('base64url');
    return { token: `${body}.${this.mac(body)}`, expiresAt: new Date(exp * 1000) };
  }

  /** The claims of a genuine, unexpired token; undefined for anything else (forged, expired, garbled). */
  verify(token: string, now = Date.now()): C | undefined {
    const read = this.read(token, now);
    return read && !read.expired ? read.claims : undefined;
  }

  /**
   * The claims of a genuine token and whether it has expired; undefined for a forged or garbled one. For a
   * refusal that tells an expired token from a forged one (a browser told to fetch a new token, or not).
   */
  read(token: string, now = Date.now()): { claims: C; expired: boolean } | undefined {
    const [body, mac, extra] = token.split('.');
    if (!body || !mac || extra !== undefined) return undefined;
    const expected = Buffer.from(this.mac(body));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    try {
      const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as C & { exp?: unknown };
      if (typeof claims.exp !== 'number') return undefined;
      const expired = claims.exp * 1000 <= now;
      delete claims.exp;
      return { claims, expired };
    } catch {
      return undefined;
    }
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(this.purpose).update('.').update(body).digest('base64url');
  }
}
