/** The part of a served OpenAPI 3 document the fuzzer reads. */
export interface Schema {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  schema?: Schema;
}

interface OperationObject {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, unknown>;
  security?: unknown[];
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OperationObject | unknown>>;
  components?: { schemas?: Record<string, Schema> };
  security?: unknown[];
}

/** One operation of the document, as the fuzzer needs it. */
export interface Operation {
  method: string;
  /** The document's path template, e.g. `/v1/agents/{id}`. */
  template: string;
  pathParams: string[];
  query: { name: string; schema: Schema }[];
  /** The JSON body schema, references resolved at use; undefined when the operation declares no JSON body. */
  body?: Schema;
  /** The document declares a 501 answer: the operation is planned, not implemented in this release. */
  declaresNotImplemented: boolean;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method] as OperationObject | undefined;
      if (!op) continue;
      const parameters = op.parameters ?? [];
      operations.push({
        method: method.toUpperCase(),
        template,
        pathParams: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? { type: 'string' } })),
        body: op.requestBody?.content?.['application/json']?.schema,
        declaresNotImplemented: Object.keys(op.responses ?? {}).includes('501'),
      });
    }
  }
  return operations;
}

/** Follows `$ref` (and a lone `allOf` wrapper, as Nest writes a described reference) to the schema itself. */
export function resolve(doc: OpenApiDocument, schema: Schema): Schema {
  let current = schema;
  for (let hops = 0; hops < 20; hops++) {
    if (current.$ref) {
      const name = current.$ref.replace('#/components/schemas/', '');
      const target = doc.components?.schemas?.[name];
      if (!target) throw new Error(`the document references ${current.$ref}, which it does not define`);
      current = target;
    } else if (current.allOf?.length === 1 && !current.type && !current.properties) current = current.allOf[0];
    else return current;
  }
  throw new Error('reference cycle in the document');
}
