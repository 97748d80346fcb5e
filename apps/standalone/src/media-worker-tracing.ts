// Imported first by media-worker.ts, the standalone process's child: its own spans, as parley-media-worker.
import { startTracing } from '@parley/tracing';

startTracing('media-worker');
