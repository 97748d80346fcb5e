import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// Loaded outside jest's module mapper, so a relative import of a module that imports nothing of ours.
import { resolveDatabaseUrl } from '../../libs/platform/persistence/src/database-url';

/**
 * Integration and end-to-end tiers run against the PostgreSQL named by DATABASE_URL; without one, an embedded
 * PostgreSQL is started once for the run and its URL exported to the tests.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env['DATABASE_URL']) return;
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-test-'));
  process.env['DATABASE_URL'] = await resolveDatabaseUrl({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: 55000 + (process.pid % 5000) });
}
