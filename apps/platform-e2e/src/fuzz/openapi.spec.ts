import { OpenApiDocument, operationsOf, resolve } from './openapi';

const doc: OpenApiDocument = {
  paths: {
    '/v1/agents/{id}': {
      parameters: [],
      get: { parameters: [{ name: 'id', in: 'path' }, { name: 'limit', in: 'query', schema: { type: 'integer' } }], responses: { '200': {} } },
      patch: { requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Patch' } } } }, responses: { '200': {} } },
    },
    '/v1/workflows': { post: { responses: { '501': {} } } },
  },
  components: { schemas: { Patch: { allOf: [{ $ref: '#/components/schemas/Inner' }] }, Inner: { type: 'object', properties: { name: { type: 'string' } } } } },
};

describe('operations of the served document', () => {
  it('lists every operation with its path parameters, query parameters, JSON body and whether it is planned', () => {
    expect(operationsOf(doc)).toEqual([
      { method: 'GET', template: '/v1/agents/{id}', pathParams: ['id'], query: [{ name: 'limit', schema: { type: 'integer' } }], body: undefined, declaresNotImplemented: false },
      { method: 'PATCH', template: '/v1/agents/{id}', pathParams: ['id'], query: [], body: { $ref: '#/components/schemas/Patch' }, declaresNotImplemented: false },
      { method: 'POST', template: '/v1/workflows', pathParams: [], query: [], body: undefined, declaresNotImplemented: true },
    ]);
  });

  it('resolves references through a lone allOf wrapper', () => {
    expect(resolve(doc, { $ref: '#/components/schemas/Patch' })).toEqual({ type: 'object', properties: { name: { type: 'string' } } });
  });

  it('refuses a reference the document does not define', () => {
    expect(() => resolve(doc, { $ref: '#/components/schemas/Nope' })).toThrow(/does not define/);
  });
});
