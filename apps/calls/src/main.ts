import 'reflect-metadata';
import { ServiceConfig } from '@parley/config';
import { runServiceProcess } from '@parley/runtime';
import { callsService } from '@parley/calls-service';

runServiceProcess(callsService, ServiceConfig);
