import './tracing';
import 'reflect-metadata';
import { join } from 'node:path';
import { agentsService } from '@parley/agents-service';
import { callsService } from '@parley/calls-service';
import { withWorkflows } from '@parley/workflows-service';
import { resolveDevCarrier, StandaloneConfig } from '@parley/config';
import { gatewayService } from '@parley/gateway-edge';
import { withKnowledge } from '@parley/knowledge-service';
import { createBus, InProcessBus } from '@parley/messaging';
import { rootLogger } from '@parley/observability';
import { ChildService, runProcess, startService } from '@parley/runtime';
import { webhookDispatcherService } from '@parley/webhooks-service';

/**
 * Standalone: all five services from one command, talking gRPC over loopback exactly as when distributed, on the
 * embedded PostgreSQL and in-process bus unless DATABASE_URL / NATS_URL say otherwise. Four share this process;
 * the media worker runs in a child process of its own so that no control-plane work (HTTP, SQL, JSON, GC) ever
 * delays a call's audio, and a crash there never takes the API down.
 */
void runProcess(StandaloneConfig, async (config) => {
  // `auto` is decided here, once for the services of this process: standalone without a phone carrier, it is on.
  config.DEV_CARRIER = resolveDevCarrier(config, 'standalone');
  // The calls service reaches the dev switch in this very process, over loopback, whatever PUBLIC_URL says.
  if (config.DEV_CARRIER === 'on' && !config.DEV_CARRIER_URL && config.PORT) {
    const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
    config.DEV_CARRIER_URL = `http://${host.includes(':') ? `[${host}]` : host}:${config.PORT}`;
  }
  const bus = await createBus(config.NATS_URL, 'parley-standalone', config.NATS_NAMESPACE);
  const started = [];
  for (const def of [withKnowledge(agentsService), withWorkflows(callsService)]) started.push(await startService(def, config, { standalone: true, bus }));
  const media = new ChildService({ name: 'media-worker', entry: join(__dirname, 'media-worker.js'), ...(bus instanceof InProcessBus ? { bus } : {}) });
  const mediaStarted = media.start();
  mediaStarted.catch(() => undefined); // awaited below, once the bus is open
  started.push(media);
  started.push(await startService(webhookDispatcherService, config, { standalone: true, bus }));
  const gateway = await startService(gatewayService, config, { standalone: true, bus });
  started.push(gateway);
  gateway.health.register('media-worker', () => media.ready());
  if (bus instanceof InProcessBus) bus.open();
  await mediaStarted;
  const stopBus = { name: 'bus', stop: () => bus.close() };
  rootLogger().info({ url: gateway.url }, `Parley is running at ${gateway.url}`);
  process.stdout.write(`Parley is running at ${gateway.url}\n`);
  if (config.DEV_CARRIER === 'on') process.stdout.write(`Dev phone: ${gateway.url}/dev/phone\n`);
  process.stdout.write(`Operator console: ${gateway.url}/operator (open it with a console token: docs/operators.md)\n`);
  return [stopBus, ...started];
});
