import { INestApplication } from '@nestjs/common';
import { ApiExtension, DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { stringify } from 'yaml';
import { JSON_LIMITS } from './input-hygiene';

/** The OpenAPI document of the running deployment, generated from the controllers and DTOs. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Parley API')
    .setDescription(
      'Voice agents that take and place phone calls. Every request carries `Authorization: Bearer <API key>`; ' +
        'every failure is `application/problem+json` with a stable `code`.\n\n' +
        'Every response carries `X-Request-Id` and `X-RateLimit-Limit`, `-Remaining` and `-Reset` (seconds until the ' +
        'window resets). `/v1` requests count against the presented API key (or, without one, the client address); ' +
        'other paths against the client address, reported but never refused.\n\n' +
        'CORS: routes that take an API key never allow a cross-origin call (browsers hold call tokens, never API ' +
        'keys) and their preflights allow nothing; the browser-facing routes (`GET /v1/embed/` and the other URLs of the script under it) allow the ' +
        "deployment's `CORS_ALLOWED_ORIGINS`, or any origin when it is empty.\n\n" +
        'Input: text holding a NUL character or an unpaired UTF-16 surrogate cannot be stored and is refused on every ' +
        'route, after authentication: in a body with 422 `validation_error` naming each field (`errors[].field`, a path ' +
        'such as `metadata.team` or `flow.nodes[2].id`), in a query parameter with 400 `invalid_request` naming it, in a ' +
        `path id with 404 \`not_found\`. A body nested deeper than ${JSON_LIMITS.maxDepth} levels, or holding a list of ` +
        `more than ${JSON_LIMITS.maxArrayItems} items or an object of more than ${JSON_LIMITS.maxObjectKeys} fields, is ` +
        'refused with 400 `invalid_request`. An agent id that is not of the form the service gives (`agt_` and 22 ' +
        'letters and digits) answers 404 `not_found` without being looked up.',
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
  return toOpenApi31(atContractPaths(document));
}

const CONTRACT_PATH = 'x-contract-path';

/**
 * Publishes an operation at the path as the interface spells it. The router ignores trailing slashes and Nest
 * strips them from route paths, so `GET /v1/embed/` would otherwise be documented as `/v1/embed`.
 */
export const ContractPath = (path: string) => ApiExtension(CONTRACT_PATH, path);

function atContractPaths(document: OpenAPIObject): OpenAPIObject {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item) as [string, Record<string, unknown>][]) {
      const contractPath = operation?.[CONTRACT_PATH];
      if (typeof contractPath !== 'string') continue;
      delete operation[CONTRACT_PATH];
      if (contractPath === path) continue;
      document.paths[contractPath] = { ...document.paths[contractPath], [method]: operation };
      delete (item as Record<string, unknown>)[method];
      if (Object.keys(item).length === 0) delete document.paths[path];
    }
  }
  return document;
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
