import './tracing';
import 'reflect-metadata';
import { ServiceConfig } from '@parley/config';
import { runServiceProcess } from '@parley/runtime';
import { agentsService } from '@parley/agents-service';
import { withKnowledge } from '@parley/knowledge-service';

// The agents deployable also serves knowledge bases (agents reference them); their behaviour is its own library.
runServiceProcess(withKnowledge(agentsService), ServiceConfig);
