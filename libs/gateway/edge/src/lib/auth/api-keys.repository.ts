import { createHash, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { BootstrapKey, Role } from '@parley/config';
import { newId } from '@parley/persistence';

export interface Principal {
  accountId: string;
  role: Role;
  keyId: string;
  /** The project a scoped key is confined to (ProjectScopeGuard); absent: account-wide. */
  projectId?: string;
  /** Set when an operator console's token (not an API key) authenticated the request: who holds the console. */
  operator?: string;
  /** The console session's end (console tokens only). */
  sessionExpiresAt?: Date;
}

/** Keys are stored as SHA-256 digests (they are long random strings), so a leaked table reveals no key. */
export function hashKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export interface ApiKeyRecord {
  id: string;
  name: string;
  role: Role;
  hint: string;
  /** null: account-wide. */
  project_id: string | null;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
}

const COLUMNS = 'id, name, role, hint, project_id, created_at, expires_at, last_used_at';

/** last_used_at is written at most this often per key, so authentication stays one read on the hot path. */
const LAST_USED_RESOLUTION_MS = 60_000;
/**
 * How long a successful lookup is reused. Revocation through this gateway takes effect at once (the entry is
 * dropped); through another replica, within this long.
 */
const AUTH_CACHE_MS = 5_000;

@Injectable()
export class ApiKeysRepository {
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly cache = new Map<string, { principal: Principal; until: number; expiresAt: number }>();

  constructor(private readonly dataSource: DataSource) {}

  /** Issues a key; the secret is returned here and never again (only its digest is stored). */
  async create(accountId: string, input: { name: string; role: Role; expiresAt: Date | null; projectId: string | null }): Promise<ApiKeyRecord & { secret: string }> {
    const secret = `vsk_${randomBytes(24).toString('base64url')}`;
    const [row]: ApiKeyRecord[] = await this.dataSource.query(
      `INSERT INTO api_keys (id, account_id, role, secret_hash, hint, name, expires_at, project_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       RETURNING ${COLUMNS}`,
      [newId('key'), accountId, input.role, hashKey(secret), secret.slice(-4), input.name, input.expiresAt, input.projectId],
    );
    return { ...row, secret };
  }

  /** Live (not revoked) keys of the account, newest first, keyset-paginated like every list. */
  async list(accountId: string, limit: number, after?: { createdAt: Date; id: string }): Promise<{ items: ApiKeyRecord[]; hasMore: boolean }> {
    const rows: ApiKeyRecord[] = await this.dataSource.query(
      `SELECT ${COLUMNS} FROM api_keys
        WHERE account_id = $1 AND revoked_at IS NULL
          AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3))
        ORDER BY created_at DESC, id DESC LIMIT $4`,
      [accountId, after?.createdAt ?? null, after?.id ?? '', limit + 1],
    );
    return { items: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  async revoke(accountId: string, id: string): Promise<boolean> {
    for (const [digest, entry] of this.cache) if (entry.principal.keyId === id) this.cache.delete(digest);
    // Wrapped in a SELECT: TypeORM returns [rows, count] for a bare UPDATE, rows for a query.
    const rows: unknown[] = await this.dataSource.query(
      `WITH revoked AS (
         UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL RETURNING id
       ) SELECT id FROM revoked`,
      [id, accountId],
    );
    return rows.length > 0;
  }

  /** The principal of a live key: not revoked, not expired. */
  async authenticate(secret: string): Promise<Principal | undefined> {
    const digest = hashKey(secret);
    const now = Date.now();
    const cached = this.cache.get(digest);
    if (cached && cached.until > now && cached.expiresAt > now) {
      this.touch(cached.principal.keyId);
      return cached.principal;
    }
    this.cache.delete(digest);
    const rows: { id: string; account_id: string; role: Role; project_id: string | null; expires_at: Date | null }[] = await this.dataSource.query(
      `SELECT id, account_id, role, project_id, expires_at FROM api_keys
        WHERE secret_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [digest],
    );
    const row = rows[0];
    if (!row) return undefined;
    const principal: Principal = { accountId: row.account_id, role: row.role, keyId: row.id, ...(row.project_id ? { projectId: row.project_id } : {}) };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(digest, {
      principal,
      until: now + AUTH_CACHE_MS,
      expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : Infinity,
    });
    this.touch(row.id);
    return principal;
  }

  private touch(keyId: string): void {
    const now = Date.now();
    if (now - (this.lastUsedWritten.get(keyId) ?? 0) < LAST_USED_RESOLUTION_MS) return;
    this.lastUsedWritten.set(keyId, now);
    void this.dataSource.query(`UPDATE api_keys SET last_used_at = now() WHERE id = $1`, [keyId]).catch(() => undefined);
  }

  /** Creates the operator-seeded accounts and keys that do not exist yet; existing ones are left untouched. */
  async ensureBootstrapKeys(keys: BootstrapKey[]): Promise<void> {
    for (const k of keys) {
      await this.dataSource.transaction(async (m) => {
        await m.query(`INSERT INTO accounts (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, [k.account]);
        await m.query(
          `INSERT INTO api_keys (id, account_id, role, secret_hash, hint, name)
           VALUES ($1, $2, $3, $4, $5, 'bootstrap') ON CONFLICT (secret_hash) DO NOTHING`,
          [newId('key'), k.account, k.role, hashKey(k.key), k.key.slice(-4)],
        );
      });
    }
  }
}
