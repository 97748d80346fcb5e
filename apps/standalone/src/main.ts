import 'reflect-metadata';
import { agentsService } from '@parley/agents-service';
import { callsService } from '@parley/calls-service';
import { GatewayConfig } from '@parley/config';
import { gatewayService } from '@parley/gateway-edge';
import { mediaWorkerService } from '@parley/media-service';
import { createBus, InProcessBus } from '@parley/messaging';
import { rootLogger } from '@parley/observability';
import { runProcess, startService } from '@parley/runtime';
import { webhookDispatcherService } from '@parley/webhooks-service';

/**
 * Standalone: all five services in one process, talking gRPC over loopback exactly as when distributed, on
 * the embedded PostgreSQL and in-process bus unless DATABASE_URL / NATS_URL say otherwise.
 */
void runProcess(GatewayConfig, async (config) => {
  const bus = await createBus(config.NATS_URL, 'parley-standalone', config.NATS_NAMESPACE);
  const started = [];
  for (const def of [agentsService, callsService, mediaWorkerService, webhookDispatcherService]) {
    started.push(await startService(def, config, { standalone: true, bus }));
  }
  const gateway = await startService(gatewayService, config, { standalone: true, bus });
  started.push(gateway);
  if (bus instanceof InProcessBus) bus.open();
  const stopBus = { name: 'bus', app: gateway.app, health: gateway.health, stop: () => bus.close() };
  rootLogger().info({ url: gateway.url }, `Parley is running at ${gateway.url}`);
  process.stdout.write(`Parley is running at ${gateway.url}\n`);
  return [stopBus, ...started];
});
