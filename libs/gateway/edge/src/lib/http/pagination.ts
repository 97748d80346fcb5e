import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '@parley/rpc';

export interface ListQuery {
  limit: number;
  /** The service-level position decoded from `starting_after`, if any. */
  after: string;
}

export interface ListEnvelope<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor?: string;
}

/**
 * Cursors are opaque to clients and tamper-evident: the service's position, bound to the list and the account,
 * signed with the deployment secret. A cursor from another list or account, or altered, is refused.
 */
export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(list: string, accountId: string, position: string): string {
    const body = Buffer.from(JSON.stringify({ l: list, p: position })).toString('base64url');
    return `${body}.${this.sign(list, accountId, body)}`;
  }

  decode(list: string, accountId: string, cursor: string): string {
    const [body, mac, extra] = cursor.split('.');
    const invalid = () => AppError.validation([{ field: 'starting_after', message: 'is not a cursor this list issued' }]);
    if (!body || !mac || extra !== undefined) throw invalid();
    const expected = Buffer.from(this.sign(list, accountId, body));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid();
    let parsed: { l?: unknown; p?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    if (parsed.l !== list || typeof parsed.p !== 'string') throw invalid();
    return parsed.p;
  }

  private sign(list: string, accountId: string, body: string): string {
    return createHmac('sha256', this.secret).update(`${list}\n${accountId}\n${body}`).digest('base64url').slice(0, 32);
  }
}

/**
 * Reads `limit` (an integer from 1 to 100, default 20) and `starting_after`; which parameters a route accepts at
 * all is checked beforehand by QueryGuard.
 */
export function parseListQuery(query: Record<string, unknown>, decodeCursor: (cursor: string) => string): ListQuery {
  let limit = 20;
  if (query['limit'] !== undefined) {
    const raw = String(query['limit']);
    if (!/^\d{1,3}$/.test(raw) || Number(raw) < 1 || Number(raw) > 100) {
      throw new AppError('invalid_request', 'limit must be an integer from 1 to 100.');
    }
    limit = Number(raw);
  }
  const cursor = query['starting_after'];
  return { limit, after: cursor === undefined || cursor === '' ? '' : decodeCursor(String(cursor)) };
}
