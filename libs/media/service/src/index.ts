import { ServiceDefinition } from '@parley/runtime';
import { MediaWorkerModule } from './lib/media-worker.module';

export { MediaWorkerModule };

/** Terminates carrier audio and runs the voice engine; stateless: no schema. */
export const mediaWorkerService: ServiceDefinition = {
  name: 'media-worker',
  module: MediaWorkerModule,
  grpc: { contracts: [], url: (c) => c.MEDIA_GRPC_URL },
};
