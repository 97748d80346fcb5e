import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { BootstrapKey, Role } from '@parley/config';
import { newId } from '@parley/persistence';

export interface Principal {
  accountId: string;
  role: Role;
  keyId: string;
}

/** Keys are stored as SHA-256 digests (they are long random strings), so a leaked table reveals no key. */
export function hashKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

@Injectable()
export class ApiKeysRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The principal of a live key: not revoked, not expired. */
  async authenticate(secret: string): Promise<Principal | undefined> {
    const rows: { id: string; account_id: string; role: Role }[] = await this.dataSource.query(
      `SELECT id, account_id, role FROM api_keys
        WHERE secret_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [hashKey(secret)],
    );
    const row = rows[0];
    return row && { accountId: row.account_id, role: row.role, keyId: row.id };
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
