import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { SpendPeriod } from '@parley/contracts';
import { defaultProjectId, newId } from '@parley/persistence';

export interface ProjectRecord {
  id: string;
  account_id: string;
  name: string;
  metadata: Record<string, string>;
  is_default: boolean;
  /** null: no ceiling. */
  max_live_calls: number | null;
  max_agents: number | null;
  max_webhook_endpoints: number | null;
  /** The spending ceiling (exact decimal text) in its currency per period; all three null: none. */
  spend_amount: string | null;
  spend_currency: string | null;
  spend_period: SpendPeriod | null;
  created_at: Date;
  updated_at: Date;
}

/** What a create or an update writes. */
export interface ProjectFields {
  name: string;
  metadata: Record<string, string>;
  maxLiveCalls: number | null;
  maxAgents: number | null;
  maxWebhookEndpoints: number | null;
  spend: { amount: string; currency: string; period: SpendPeriod } | null;
}

const COLUMNS = 'id, account_id, name, metadata, is_default, max_live_calls, max_agents, max_webhook_endpoints, spend_amount::text AS spend_amount, spend_currency, spend_period, created_at, updated_at';
/** The name of a default project when it is created. */
export const DEFAULT_PROJECT_NAME = 'Default';

/** Projects in the gateway's schema; every query takes the account, so another account's project is simply absent. */
@Injectable()
export class ProjectsRepository {
  constructor(private readonly dataSource: DataSource) {}

  transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /** Creates the account's default project unless it exists. */
  async ensureDefault(accountId: string): Promise<void> {
    await this.dataSource.query(`INSERT INTO projects (id, account_id, name, is_default) VALUES ($1, $2, $3, true) ON CONFLICT DO NOTHING`, [
      defaultProjectId(accountId),
      accountId,
      DEFAULT_PROJECT_NAME,
    ]);
  }

  async create(m: EntityManager, accountId: string, fields: ProjectFields): Promise<ProjectRecord> {
    const [row]: ProjectRecord[] = await m.query(
      `INSERT INTO projects (id, account_id, name, metadata, max_live_calls, max_agents, spend_amount, spend_currency, spend_period, max_webhook_endpoints)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
      [newId('prj'), accountId, fields.name, JSON.stringify(fields.metadata), fields.maxLiveCalls, fields.maxAgents, ...spendColumns(fields), fields.maxWebhookEndpoints],
    );
    return row;
  }

  async find(accountId: string, id: string): Promise<ProjectRecord | undefined> {
    const [row]: ProjectRecord[] = await this.dataSource.query(`SELECT ${COLUMNS} FROM projects WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return row;
  }

  /**
   * The project under a lock for the rest of transaction `m`: `share` while a resource is created in it (its ceilings
   * hold still and it cannot be deleted meanwhile), `update` to change or delete it.
   */
  async lock(m: EntityManager, accountId: string, id: string, mode: 'share' | 'update'): Promise<ProjectRecord | undefined> {
    const [row]: ProjectRecord[] = await m.query(
      `SELECT ${COLUMNS} FROM projects WHERE account_id = $1 AND id = $2 FOR ${mode === 'share' ? 'SHARE' : 'UPDATE'}`,
      [accountId, id],
    );
    return row;
  }

  /** The account's projects, newest first, keyset-paginated like every list. */
  async list(accountId: string, limit: number, after?: { createdAt: Date; id: string }): Promise<{ items: ProjectRecord[]; hasMore: boolean }> {
    const rows: ProjectRecord[] = await this.dataSource.query(
      `SELECT ${COLUMNS} FROM projects
        WHERE account_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3))
        ORDER BY created_at DESC, id DESC LIMIT $4`,
      [accountId, after?.createdAt ?? null, after?.id ?? '', limit + 1],
    );
    return { items: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  async update(m: EntityManager, accountId: string, id: string, fields: ProjectFields): Promise<ProjectRecord> {
    // Wrapped in a SELECT: TypeORM returns [rows, count] for a bare UPDATE, rows for a query.
    const [row]: ProjectRecord[] = await m.query(
      `WITH changed AS (
         UPDATE projects SET name = $3, metadata = $4, max_live_calls = $5, max_agents = $6, spend_amount = $7, spend_currency = $8,
                spend_period = $9, max_webhook_endpoints = $10, updated_at = now()
          WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}
       ) SELECT * FROM changed`,
      [accountId, id, fields.name, JSON.stringify(fields.metadata), fields.maxLiveCalls, fields.maxAgents, ...spendColumns(fields), fields.maxWebhookEndpoints],
    );
    return row;
  }

  /** Whether live (not revoked) API keys are scoped to the project: it is not deleted under them. */
  async hasScopedKeys(m: EntityManager, accountId: string, id: string): Promise<boolean> {
    const rows: unknown[] = await m.query(`SELECT 1 FROM api_keys WHERE account_id = $1 AND project_id = $2 AND revoked_at IS NULL LIMIT 1`, [accountId, id]);
    return rows.length > 0;
  }

  async delete(m: EntityManager, accountId: string, id: string): Promise<void> {
    await m.query(`DELETE FROM projects WHERE account_id = $1 AND id = $2 AND NOT is_default`, [accountId, id]);
  }
}

const spendColumns = (f: ProjectFields) => [f.spend?.amount ?? null, f.spend?.currency ?? null, f.spend?.period ?? null];
