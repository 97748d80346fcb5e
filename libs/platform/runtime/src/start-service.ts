import { Server } from 'node:http';
import { DynamicModule, INestApplication, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { Bus, BusHandlerErrors, BusServer, createBus, DeadLetterStore, InProcessBus, OutboxRelay } from '@parley/messaging';
import { ensureProcessMetrics, HealthRegistry, NestPinoLogger, serviceLogger, startOpsServer } from '@parley/observability';
import { openServiceDatabase, resolveDatabaseUrl } from '@parley/persistence';
import { GrpcHealthController, GrpcServerInterceptor, grpcServerOptions } from '@parley/rpc';
import { RuntimeModule } from './runtime.module';
import { ServiceDefinition } from './service-definition';

const pgLog = serviceLogger('embedded-postgres');
const embeddedLog = {
  debug: (m: string) => pgLog.debug(m),
  info: (m: string) => pgLog.info(m),
  warn: (m: string) => pgLog.warn(m),
};

export interface RunningService {
  name: string;
  app: INestApplication;
  health: HealthRegistry;
  /** The public HTTP address, for the gateway. */
  url?: string;
  stop(): Promise<void>;
}

/** The port part of host:port; a service binds all interfaces on it unless GRPC_BIND says otherwise. */
function bindAddress(url: string, config: ServiceConfig, loopbackOnly: boolean): string {
  if (config.GRPC_BIND) return config.GRPC_BIND;
  const port = url.slice(url.lastIndexOf(':') + 1);
  return `${loopbackOnly ? '127.0.0.1' : '0.0.0.0'}:${port}`;
}

/**
 * Starts one service: database (schema + migrations), bus, gRPC server, bus consumers, outbox relay, ops
 * endpoints, and for the gateway the public HTTP server. Used alike by each service's own process and by the
 * standalone process that hosts all five.
 */
export async function startService<C extends ServiceConfig>(
  def: ServiceDefinition<C>,
  config: C,
  options: { standalone?: boolean; bus?: Bus } = {},
): Promise<RunningService> {
  const log = serviceLogger(def.name);
  ensureProcessMetrics();
  const health = new HealthRegistry();
  const bus = options.bus ?? (await createBus(config.NATS_URL, `parley-${def.name}`, config.NATS_NAMESPACE));
  health.register('bus', () => bus.isHealthy());

  let dataSource: DataSource | undefined;
  if (def.database) {
    dataSource = await openServiceDatabase(await resolveDatabaseUrl(config, embeddedLog), def.database);
    const ds = dataSource;
    health.register('database', async () => (await ds.query('SELECT 1')).length === 1);
  }
  const relay = def.outbox && dataSource ? new OutboxRelay(dataSource, bus, { service: def.name }) : undefined;

  @Module({ controllers: def.grpc ? [GrpcHealthController] : [] })
  class ServiceRoot {}
  const root: DynamicModule = {
    module: ServiceRoot,
    imports: [RuntimeModule.register({ name: def.name, config, bus, health, dataSource, relay }), def.module],
  };
  const app = await NestFactory.create<NestFastifyApplication>(root, new FastifyAdapter({ trustProxy: true, ...def.http?.adapterOptions?.(config) }), {
    logger: new NestPinoLogger(log),
    bufferLogs: false,
    abortOnError: false,
  });
  // gRPC and bus handlers share it (inheritAppConfig); the gateway's HTTP routes have their own request context.
  if (!def.http) app.useGlobalInterceptors(new GrpcServerInterceptor(def.name));
  // Innermost: keeps a bus handler's own error for its dead letter (the interceptor above replaces it).
  app.useGlobalInterceptors(new BusHandlerErrors());

  if (def.grpc) {
    const address = bindAddress(def.grpc.url(config), config, !!options.standalone);
    app.connectMicroservice(grpcServerOptions(def.grpc.contracts, address, def.grpc.maxReceiveMessageBytes?.(config)), { inheritAppConfig: true });
  }
  app.connectMicroservice({ strategy: new BusServer(bus, def.name, dataSource && new DeadLetterStore(dataSource, def.name)) }, { inheritAppConfig: true });

  let url: string | undefined;
  if (def.http) await def.http.configure(app, config);
  await app.startAllMicroservices();
  if (def.http) {
    await app.listen(def.http.port(config), def.http.host(config));
    const address = app.getHttpServer().address();
    const port = typeof address === 'object' && address ? address.port : def.http.port(config);
    url = `http://${def.http.host(config) === '0.0.0.0' ? '127.0.0.1' : def.http.host(config)}:${port}`;
  } else {
    await app.init();
  }
  relay?.start();
  // A lone process on the in-process bus has nobody else to wait for (standalone opens it after all services).
  if (!options.bus && bus instanceof InProcessBus) bus.open();

  let ops: Server | undefined;
  if (config.OPS_PORT && !def.http) ops = await startOpsServer(config.OPS_PORT, health);
  log.info({ grpc: def.grpc?.url(config), http: url, ops: config.OPS_PORT }, `${def.name} service started`);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      log.info('stopping');
      // Not ready from the first moment (a media worker drains its calls for CALL_DRAIN_SECONDS after this).
      health.markStopping();
      if (def.grpc) app.get(GrpcHealthController).markStopping();
      await relay?.stop();
      await app.close();
      await new Promise<void>((resolve) => (ops ? ops.close(() => resolve()) : resolve()));
      if (!options.bus) await bus.close();
      await dataSource?.destroy();
      log.info('stopped');
    })());

  return { name: def.name, app, health, url, stop };
}
