import './media-worker-tracing';
import 'reflect-metadata';
import { ServiceConfig } from '@parley/config';
import { mediaWorkerService } from '@parley/media-service';
import { runChildService } from '@parley/runtime';

// The standalone process runs the media worker here, in a child process of its own (see main.ts).
runChildService(mediaWorkerService, ServiceConfig);
