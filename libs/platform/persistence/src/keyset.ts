import { ObjectLiteral, SelectQueryBuilder } from 'typeorm';

export interface Position {
  createdAt: Date;
  id: string;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
  /** Position after the last item (`<created_at ISO>|<id>`); empty on the last page. */
  next: string;
}

export function encodePosition(p: Position): string {
  return `${p.createdAt.toISOString()}|${p.id}`;
}

/** Undefined for an empty position; throws on a malformed one. */
export function decodePosition(raw: string): Position | undefined {
  if (!raw) return undefined;
  const [iso, id] = raw.split('|');
  const createdAt = new Date(iso);
  if (!id || Number.isNaN(createdAt.getTime())) throw new Error('malformed position');
  return { createdAt, id };
}

/** A page of `limit` items from rows fetched with `LIMIT limit + 1` (the extra row only says more remain). */
export function pageOf<T extends Position>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const hasMore = rows.length > limit;
  return { items, hasMore, next: hasMore && last ? encodePosition(last) : '' };
}

/**
 * Newest first, keyset-paginated on (created_at, id): inserts and deletes elsewhere never shift a page, so a walk
 * sees every row that existed throughout exactly once.
 */
export async function keysetPage<T extends ObjectLiteral & Position>(
  qb: SelectQueryBuilder<T>,
  alias: string,
  limit: number,
  after?: Position,
): Promise<Page<T>> {
  qb.orderBy(`${alias}.created_at`, 'DESC').addOrderBy(`${alias}.id`, 'DESC').limit(limit + 1);
  if (after) qb.andWhere(`(${alias}.created_at, ${alias}.id) < (:afterCreatedAt, :afterId)`, { afterCreatedAt: after.createdAt, afterId: after.id });
  return pageOf(await qb.getMany(), limit);
}
