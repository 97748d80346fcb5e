import './tracing';
import 'reflect-metadata';
import { ServiceConfig } from '@parley/config';
import { runServiceProcess } from '@parley/runtime';
import { callsService } from '@parley/calls-service';
import { withWorkflows } from '@parley/workflows-service';

// The calls deployable also runs workflows (they place calls and follow their events); their behaviour is its own library.
runServiceProcess(withWorkflows(callsService), ServiceConfig);
