import './tracing';
import 'reflect-metadata';
import { GatewayConfig } from '@parley/config';
import { gatewayService } from '@parley/gateway-edge';
import { runServiceProcess } from '@parley/runtime';

runServiceProcess(gatewayService, GatewayConfig);
