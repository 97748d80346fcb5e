import './tracing';
import 'reflect-metadata';
import { ServiceConfig } from '@parley/config';
import { runServiceProcess } from '@parley/runtime';
import { webhookDispatcherService } from '@parley/webhooks-service';

runServiceProcess(webhookDispatcherService, ServiceConfig);
