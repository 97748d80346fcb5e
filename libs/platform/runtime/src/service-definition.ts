import { DynamicModule, Type } from '@nestjs/common';
import { FastifyServerOptions } from 'fastify';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { GrpcContract } from '@parley/contracts';
import { ServiceConfig } from '@parley/config';
import { ServiceDatabaseOptions } from '@parley/persistence';

/** What a service is: the runtime turns this into a running NestJS application in either run mode. */
export interface ServiceDefinition<C extends ServiceConfig = ServiceConfig> {
  name: string;
  module: Type<unknown> | DynamicModule;
  /** gRPC contracts the service serves, and the address clients dial for it. */
  grpc?: {
    contracts: GrpcContract[];
    url: (config: C) => string;
    /** Largest request the server accepts, in bytes, when more than gRPC's 4 MiB default is needed. */
    maxReceiveMessageBytes?: (config: C) => number;
  };
  /** The schema the service owns, with its entities and migrations. */
  database?: ServiceDatabaseOptions;
  /** Whether the service writes to an outbox that must be relayed to the bus. */
  outbox?: boolean;
  /** Public HTTP (the gateway only). */
  http?: {
    port: (config: C) => number;
    host: (config: C) => string;
    adapterOptions?: (config: C) => FastifyServerOptions;
    configure: (app: NestFastifyApplication, config: C) => Promise<void> | void;
  };
}
