import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { stringify } from 'yaml';

/** The OpenAPI document of the running deployment, generated from the controllers and DTOs. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Parley API')
    .setDescription(
      'Voice agents that take and place phone calls. Every request carries `Authorization: Bearer <API key>`; ' +
        'every failure is `application/problem+json` with a stable `code`.',
    )
    .setVersion('v1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key (vsk_…).' })
    .build();
  return SwaggerModule.createDocument(app, config, { operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}` });
}

export function openApiYaml(document: OpenAPIObject): string {
  return stringify(document, { aliasDuplicateObjects: false });
}
