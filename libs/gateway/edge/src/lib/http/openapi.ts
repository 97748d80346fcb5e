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
    .addServer('/', 'This deployment')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key (vsk_…).' }, 'bearer')
    .addSecurityRequirements('bearer')
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
  });
  for (const path of Object.values(document.paths)) {
    for (const operation of Object.values(path) as Record<string, unknown>[]) {
      // Operations without a permission take no API key.
      if (operation && typeof operation === 'object' && 'responses' in operation && !('x-permission' in operation)) {
        operation['security'] = [];
      }
    }
  }
  return toOpenApi31(document);
}

/** @nestjs/swagger writes OpenAPI 3.0 `nullable`; 3.1 spells it as a type list including "null". */
function toOpenApi31<T>(node: T): T {
  if (Array.isArray(node)) return node.map(toOpenApi31) as T;
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = toOpenApi31(v);
  if (out['nullable'] === true && typeof out['type'] === 'string') {
    out['type'] = [out['type'], 'null'];
    delete out['nullable'];
  }
  return out as T;
}

export function openApiYaml(document: OpenAPIObject): string {
  return stringify(document, { aliasDuplicateObjects: false });
}
