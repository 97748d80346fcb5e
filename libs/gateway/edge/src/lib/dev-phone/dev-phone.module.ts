import { Server } from 'node:http';
import { Inject, Module, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DEV_PHONE_PATH, DevSwitch } from '@parley/carrier-dev';
import { devCarrierOn, GatewayConfig, resolveSecretKey } from '@parley/config';
import { serviceLogger } from '@parley/observability';
import { CONFIG } from '@parley/runtime';
import { DEV_SWITCH, DevPhoneController } from './dev-phone.controller';

/**
 * Hosts the dev switch in the gateway when DEV_CARRIER is on: its routes, and the page socket
 * (`/dev/phone/socket`) on the gateway's own HTTP server. Its calls live in this process: one gateway replica.
 */
@Module({
  controllers: [DevPhoneController],
  providers: [
    {
      provide: DEV_SWITCH,
      inject: [CONFIG, HttpAdapterHost],
      useFactory: (c: GatewayConfig, host: HttpAdapterHost) =>
        devCarrierOn(c)
          ? new DevSwitch({ secret: resolveSecretKey(c), publicUrl: c.PUBLIC_URL, deliverTo: () => ownAddress(host), log: serviceLogger('gateway') })
          : null,
    },
  ],
})
export class DevPhoneModule implements OnApplicationBootstrap, OnModuleDestroy {
  constructor(
    @Inject(DEV_SWITCH) private readonly devSwitch: DevSwitch | null,
    @Inject(CONFIG) private readonly config: GatewayConfig,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onApplicationBootstrap(): void {
    const devSwitch = this.devSwitch;
    if (!devSwitch) return;
    const server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    server.on('upgrade', (req, socket, head) => {
      // Other upgrades are another listener's, if there is one; with none, nobody would ever answer them.
      if (!devSwitch.handleUpgrade(req, socket, head) && server.listenerCount('upgrade') === 1) socket.destroy();
    });
    serviceLogger('gateway').info({ url: `${this.config.PUBLIC_URL.replace(/\/+$/, '')}${DEV_PHONE_PATH}` }, 'dev phone served (DEV_CARRIER on)');
  }

  async onModuleDestroy(): Promise<void> {
    await this.devSwitch?.close();
  }
}

/** This gateway's own listening address (loopback when it listens on every interface), once it listens. */
function ownAddress(host: HttpAdapterHost): string | undefined {
  const address = (host.httpAdapter?.getHttpServer() as Server | undefined)?.address();
  if (!address || typeof address === 'string') return undefined;
  const ip = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return `http://${ip.includes(':') ? `[${ip}]` : ip}:${address.port}`;
}
