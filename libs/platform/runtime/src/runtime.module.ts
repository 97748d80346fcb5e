import { DynamicModule, Global, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ServiceConfig } from '@parley/config';
import { HealthRegistry } from '@parley/observability';
import { Bus, OutboxRelay } from '@parley/messaging';

export const CONFIG = Symbol('CONFIG');
export const BUS = Symbol('BUS');
export const SERVICE_NAME = Symbol('SERVICE_NAME');

export interface RuntimeParts {
  name: string;
  config: ServiceConfig;
  bus: Bus;
  health: HealthRegistry;
  dataSource?: DataSource;
  relay?: OutboxRelay;
}

/** Makes the runtime's shared parts injectable in the service's own modules. */
@Global()
@Module({})
export class RuntimeModule {
  static register(parts: RuntimeParts): DynamicModule {
    const providers = [
      { provide: SERVICE_NAME, useValue: parts.name },
      { provide: CONFIG, useValue: parts.config },
      { provide: BUS, useValue: parts.bus },
      { provide: HealthRegistry, useValue: parts.health },
      ...(parts.dataSource ? [{ provide: DataSource, useValue: parts.dataSource }] : []),
      ...(parts.relay ? [{ provide: OutboxRelay, useValue: parts.relay }] : []),
    ];
    return { module: RuntimeModule, providers, exports: providers.map((p) => p.provide) };
  }
}
