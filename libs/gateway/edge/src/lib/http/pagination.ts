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
    const parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { l: string; p: string };
    if (parsed.l !== list || typeof parsed.p !== 'string') throw invalid();
    return parsed.p;
  }

  private sign(list: string, accountId: string, body: string): string {
    return createHmac('sha256', this.secret).update(`${list}\n${accountId}\n${body}`).digest('base64url').slice(0, 32);
  }
}

const LIST_PARAMS = ['limit', 'starting_after'];

/**
 * Reads `limit` and `starting_after`, refusing (400) unknown parameters, repeated ones, and a limit that is not
 * an integer from 1 to 100; `extra` names list-specific filters the caller may also send.
 */
export function parseListQuery(
  query: Record<string, unknown>,
  decodeCursor: (cursor: string) => string,
  extra: string[] = [],
): ListQuery {
  const allowed = [...LIST_PARAMS, ...extra];
  const unknown = Object.keys(query).filter((k) => !allowed.includes(k));
  if (unknown.length) {
    throw new AppError('invalid_request', `Unknown query parameter${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.`);
  }
  for (const [k, v] of Object.entries(query)) {
    if (Array.isArray(v)) throw new AppError('invalid_request', `Query parameter ${k} is given more than once.`);
  }
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
