import { Module } from '@nestjs/common';
import { ServiceDefinition } from '@parley/runtime';

/** Terminates carrier audio and runs the conversation engine (media worker issue); stateless: no schema. */
@Module({})
export class MediaWorkerModule {}

export const mediaWorkerService: ServiceDefinition = {
  name: 'media-worker',
  module: MediaWorkerModule,
  grpc: { contracts: [], url: (c) => c.MEDIA_GRPC_URL },
};
