import { ConfigError, loadConfig, ServiceConfig } from '@parley/config';
import { rootLogger } from '@parley/observability';
import { stopEmbeddedDatabase } from '@parley/persistence';
import { stopTracing } from '@parley/tracing';
import { ServiceDefinition } from './service-definition';
import { startService } from './start-service';
import { unsupportedNodeReason } from './node-version';

/** What a process stops, in reverse order of start, on SIGTERM: a service it hosts, a child process, the bus. */
export interface StoppableService {
  name: string;
  stop(): Promise<void>;
}

/**
 * Entry point of one deployable: refuses an unsupported Node.js, validates configuration (printing every problem and exiting 1 when any),
 * starts the service(s), and stops them cleanly on SIGTERM/SIGINT.
 */
export async function runProcess<C extends ServiceConfig>(
  configClass: new () => C,
  start: (config: C) => Promise<StoppableService[]>,
): Promise<void> {
  const unsupported = unsupportedNodeReason();
  if (unsupported) {
    process.stderr.write(`${unsupported}\n`);
    process.exit(1);
  }
  let config: C;
  try {
    config = loadConfig(configClass);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const log = rootLogger(config.LOG_LEVEL);
  let services: StoppableService[] = [];
  const shutdown = async (signal: string) => {
    log.info({ signal }, 'shutting down');
    let stopping = '';
    // The backstop: a media worker's drain ends (and reports what it left undone) before it fires.
    const timer = setTimeout(() => {
      log.error({ stopping }, 'shutdown grace period over; exiting');
      process.exit(1);
    }, config.SHUTDOWN_GRACE_MS + config.CALL_DRAIN_SECONDS * 1000).unref();
    for (const s of [...services].reverse()) {
      stopping = s.name;
      await s.stop().catch((e) => log.error({ err: e }, `stopping ${s.name}`));
    }
    await stopEmbeddedDatabase().catch((e) => log.error({ err: e }, 'stopping embedded PostgreSQL'));
    // Last: the spans of the shutdown itself are exported too.
    await stopTracing().catch((e) => log.error({ err: e }, 'flushing traces'));
    clearTimeout(timer);
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  try {
    services = await start(config);
  } catch (error) {
    log.fatal({ err: error }, 'start-up failed');
    await stopEmbeddedDatabase().catch(() => undefined);
    await stopTracing().catch(() => undefined);
    process.exit(1);
  }
}

/** Runs a single service as its own process (distributed mode). */
export function runServiceProcess<C extends ServiceConfig>(def: ServiceDefinition<C>, configClass: new () => C): void {
  void runProcess(configClass, async (config) => [await startService(def, config)]);
}
