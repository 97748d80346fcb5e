import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { InProcessBus, OutboxRecord, OutboxRelay } from '@parley/messaging';
import { openServiceDatabase } from '@parley/persistence';
import { createTestDatabase, TestDatabase } from '@parley/testing';
import { CallAdmission } from '../call-admission';
import { CallControl } from '../call-control';
import { CallsDomain } from '../calls.domain';
import { CallsGrpcController } from '../calls.grpc-controller';
import { CallsRepository } from '../calls.repository';
import { CallEntity, CallTurnEntity } from '../entities';
import { CALLS_MIGRATIONS } from '../migrations';
import { WebCalls } from '../web-calls';
import { FakeMediaWorkers } from './fake-media-workers';

const config = Object.assign(new ServiceConfig(), { MAX_CONCURRENT_CALLS: 5, CALL_STUCK_SECONDS: 60, PUBLIC_URL: 'https://parley.example', SECRET_KEY: 'x'.repeat(40) });

/** The calls service's turn and seat routes on a fresh database: the domain (and web calls on it) alone, no call control. */
export interface TurnRoutes {
  dataSource: DataSource;
  calls: CallsDomain;
  grpc: CallsGrpcController;
  close(): Promise<void>;
}

export async function openTurnRoutes(): Promise<TurnRoutes> {
  const db: TestDatabase = await createTestDatabase('parley_calls');
  const dataSource = await openServiceDatabase(db.url, { schema: 'calls', entities: [CallEntity, CallTurnEntity, OutboxRecord], migrations: CALLS_MIGRATIONS });
  const bus = new InProcessBus();
  bus.open();
  const relay = new OutboxRelay(dataSource, bus);
  const calls = new CallsDomain(new CallsRepository(dataSource), relay, bus, config, new FakeMediaWorkers().commands);
  const grpc = new CallsGrpcController(calls, {} as CallControl, new WebCalls(calls, {} as CallControl, {} as CallAdmission, config));
  return {
    dataSource,
    calls,
    grpc,
    close: async () => {
      await relay.stop();
      await dataSource.destroy();
      await db.drop();
    },
  };
}
