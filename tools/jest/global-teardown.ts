import { stopEmbeddedDatabase } from '../../libs/platform/persistence/src/database-url';

export default async function globalTeardown(): Promise<void> {
  await stopEmbeddedDatabase();
}
