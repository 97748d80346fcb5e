import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh, empty database on the server DATABASE_URL points at (CI: the machine's PostgreSQL; locally without
 * it: the embedded server the integration global set-up started), or on the server `adminUrl` names. Every test
 * file gets its own.
 */
export async function createTestDatabase(prefix = 'parley_t', adminUrl = process.env['DATABASE_URL']): Promise<TestDatabase> {
  if (!adminUrl) throw new Error('DATABASE_URL is not set (the test global set-up provides one)');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
