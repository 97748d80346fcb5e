import { createHash } from 'node:crypto';
import { DataSource, DataSourceOptions, MixedList, EntitySchema } from 'typeorm';

export interface ServiceDatabaseOptions {
  /** The PostgreSQL schema this service owns; no other service reads it. */
  schema: string;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities: MixedList<Function | string | EntitySchema>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  migrations: MixedList<Function | string>;
  poolSize?: number;
}

export function serviceDataSourceOptions(url: string, options: ServiceDatabaseOptions): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    schema: options.schema,
    entities: options.entities,
    migrations: options.migrations,
    migrationsTableName: 'migrations',
    migrationsRun: false,
    synchronize: false,
    poolSize: options.poolSize ?? 10,
    applicationName: `parley-${options.schema}`,
    // Unqualified names in migrations and raw queries resolve to the service's own schema.
    extra: { options: `-c search_path=${options.schema}` },
  };
}

/** A stable 63-bit key per schema for pg_advisory_lock. */
function lockKey(schema: string): string {
  return BigInt.asIntN(64, createHash('sha256').update(`parley:migrations:${schema}`).digest().readBigInt64BE()).toString();
}

/**
 * Creates the service's schema and applies its pending migrations. Replicas starting together serialise on an
 * advisory lock, and TypeORM's migrations table makes a second run a no-op, so start-up is idempotent.
 */
export async function migrateServiceSchema(dataSource: DataSource, schema: string): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query(`SELECT pg_advisory_lock($1)`, [lockKey(schema)]);
    try {
      await runner.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query(`SELECT pg_advisory_unlock($1)`, [lockKey(schema)]);
    }
  } finally {
    await runner.release();
  }
}

export async function openServiceDatabase(url: string, options: ServiceDatabaseOptions): Promise<DataSource> {
  const dataSource = await new DataSource(serviceDataSourceOptions(url, options)).initialize();
  try {
    await migrateServiceSchema(dataSource, options.schema);
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}
