import { MODULE_METADATA } from '@nestjs/common/constants';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { OpenAPIObject } from '@nestjs/swagger';
import { Test } from '@nestjs/testing';
import { GatewayModule } from '../gateway.module';
import { buildOpenApiDocument } from '../http/openapi';

/** The document the gateway serves, from its own controllers with their collaborators stubbed (it depends on routes and DTOs only). */
export async function gatewayOpenApiDocument(): Promise<OpenAPIObject> {
  const controllers = Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, GatewayModule);
  const module = await Test.createTestingModule({ controllers })
    .useMocker(() => ({}))
    .compile();
  const app = module.createNestApplication(new FastifyAdapter());
  await app.init();
  const document = buildOpenApiDocument(app);
  await app.close();
  return document;
}
