import { MEDIA_V1 } from '@parley/contracts';
import { ServiceDefinition } from '@parley/runtime';
import { MediaWorkerModule } from './lib/media-worker.module';

export { MediaWorkerModule };

/** Terminates carrier audio and runs the voice engine; stateless: no schema. */
export const mediaWorkerService: ServiceDefinition = {
  name: 'media-worker',
  module: MediaWorkerModule,
  // Its commands (parley.media.v1); the calls service dials each worker at the address it advertised.
  grpc: { contracts: [MEDIA_V1], url: (c) => c.MEDIA_GRPC_URL },
};
