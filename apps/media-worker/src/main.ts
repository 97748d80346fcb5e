import './tracing';
import 'reflect-metadata';
import { ServiceConfig } from '@parley/config';
import { runServiceProcess } from '@parley/runtime';
import { mediaWorkerService } from '@parley/media-service';

runServiceProcess(mediaWorkerService, ServiceConfig);
