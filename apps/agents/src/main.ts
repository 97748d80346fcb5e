import 'reflect-metadata';
import { ServiceConfig } from '@parley/config';
import { runServiceProcess } from '@parley/runtime';
import { agentsService } from '@parley/agents-service';

runServiceProcess(agentsService, ServiceConfig);
