import 'reflect-metadata';
import { OpenAPIObject } from '@nestjs/swagger';
import { NOT_YET_SUPPORTED, PARLEY_STATUS } from './http/openapi-decorators';
import { gatewayOpenApiDocument } from './testing/gateway-openapi';

interface Schema extends Record<string, unknown> {
  properties?: Record<string, Schema>;
  description?: string;
}

/** The agent fields calls ignore today (in part), where the agent's own schemas carry them. */
const AGENT_FIELDS = ['autonomy'];

describe('the OpenAPI document the gateway serves', () => {
  let document: OpenAPIObject;

  beforeAll(async () => {
    document = await gatewayOpenApiDocument();
  });

  it('marks exactly the agent fields calls do not act on yet, each saying so in its description', () => {
    const schemas = document.components?.schemas as Record<string, Schema>;
    const marked = Object.entries(schemas).flatMap(([name, schema]) =>
      Object.entries(schema.properties ?? {})
        .filter(([, property]) => property[PARLEY_STATUS] === NOT_YET_SUPPORTED)
        .map(([field, property]) => ({ field: `${name}.${field}`, description: property.description })),
    );

    expect(marked.map((m) => m.field).sort()).toEqual(
      [
        ...['AgentInputDto', 'AgentPatchDto', 'AgentDto'].flatMap((dto) => AGENT_FIELDS.map((f) => `${dto}.${f}`)),
        ...['EffectiveConfigDto', 'GroupDefaultsDto'].flatMap((dto) => AGENT_FIELDS.map((f) => `${dto}.${f}`)),
      ].sort(),
    );
    for (const { field, description } of marked) expect({ field, description }).toEqual({ field, description: expect.stringMatching(/ Not yet acted on: .+ until .+ lands\.$/) });
  });

  it('names what is ignored when only some values of a field are', () => {
    const schemas = document.components?.schemas as Record<string, Schema>;

    // The flow runs: no node or edge type is ignored any more.
    expect(schemas['FlowNodeDto'].properties?.['type'].description).not.toContain('Not yet acted on');
    expect(schemas['FlowEdgeDto'].properties?.['type'].description).not.toContain('Not yet acted on');
    expect(schemas['AgentInputDto'].properties?.['flow'].description).toContain('A `conversation` agent follows it at run time');
    expect(schemas['AgentInputDto'].properties?.['mode'].description).not.toContain('Not yet acted on');
    expect(schemas['AgentInputDto'].properties?.['ring_seconds'].description).not.toContain('Not yet acted on');
    expect(schemas['AgentInputDto'].properties?.['autonomy'].description).toContain(
      'Not yet acted on: `simple` hands inbound phone calls and web calls to a person (they ring until `POST /v1/calls/{id}/claim`); `POST /v1/calls` refuses a `simple` agent',
    );
  });

  it('documents injected call events as acted on by the flow, answered with whether the conversation received them', () => {
    const inject = document.paths['/v1/calls/{id}/events'].post as unknown as Schema;
    const schemas = document.components?.schemas as Record<string, Schema>;

    expect(inject[PARLEY_STATUS]).toBeUndefined();
    expect(inject.description).not.toContain('Not yet acted on');
    expect(inject.description).toContain('An `event` edge of the agent’s flow that waits for this name on the current node fires.');
    expect(schemas['CallEventDto'].properties?.['delivered'].description).toContain('Whether the running conversation received it');
    expect(schemas['CallEventDto'].properties?.['delivered'].description).toContain('an event for a call whose media has not started is kept');
    expect(inject.description).toContain('an event for a call whose media has not started is kept and handed to the conversation when it starts');
  });

  it('documents the moves of a call’s flow on its event stream and in its transcript', () => {
    const stream = document.paths['/v1/calls/{id}/events'].get as unknown as Schema;
    const schemas = document.components?.schemas as Record<string, Schema>;

    expect(stream.description).toContain('`call.flow.transitioned`');
    expect(Object.keys(schemas['FlowTransitionDto'].properties ?? {})).toEqual(['object', 'call_id', 'from', 'to', 'kind', 'edge_index', 'when', 'event', 'captured', 'at_ms']);
    expect(schemas['TranscriptDto'].properties?.['flow_transitions']).toBeDefined();
  });

  it('documents the knowledge fields as acted on: the per-turn lookup within its budget, the search tool, the node override', () => {
    const schemas = document.components?.schemas as Record<string, Schema>;
    const fields = [
      ...['AgentInputDto', 'AgentPatchDto', 'AgentDto'].flatMap((dto) => ['knowledge_base_id', 'knowledge_base_ids'].map((f) => [dto, f])),
      ...['EffectiveConfigDto', 'GroupDefaultsDto'].map((dto) => [dto, 'knowledge_base_ids']),
      ['CapabilitiesDto', 'retrieval_timeout_ms'],
      ['CapabilitiesDto', 'search_knowledge'],
      ['FlowNodeDto', 'knowledge_base_ids'],
    ];
    for (const [dto, field] of fields) {
      const property = schemas[dto].properties?.[field] as Schema;
      expect({ field: `${dto}.${field}`, status: property[PARLEY_STATUS], acted: !property.description?.includes('Not yet acted on') }).toEqual({
        field: `${dto}.${field}`,
        status: undefined,
        acted: true,
      });
    }
    const capabilities = schemas['CapabilitiesDto'].properties ?? {};
    expect(capabilities['retrieval_timeout_ms'].description).toContain('the answer waits at most this long for the passages');
    expect(capabilities['retrieval_timeout_ms'].description).toContain('parley_engine_knowledge_lookups_total{outcome="timeout"}');
    expect(capabilities['search_knowledge'].description).toContain('`search_knowledge_base`');
    expect(schemas['AgentInputDto'].properties?.['knowledge_base_ids'].description).toContain('A base deleted later is skipped by the search.');
    expect(schemas['FlowNodeDto'].properties?.['knowledge_base_ids'].description).toContain("Absent: the agent's; empty: no grounding on this node");
  });

  it('documents on each transcript turn the knowledge-base documents its answer was grounded in', () => {
    const schemas = document.components?.schemas as Record<string, Schema>;
    const grounding = schemas['TurnDto'].properties?.['grounding'] as Schema & { items?: { $ref?: string } };

    expect(schemas['TurnDto'].required).toContain('grounding');
    expect(grounding.description).toContain('knowledge-base documents the answer was grounded in (the turn’s lookup and any `search_knowledge_base` call), best first');
    expect(grounding.items?.$ref).toBe('#/components/schemas/GroundingSourceDto');
    expect(Object.keys(schemas['GroundingSourceDto'].properties ?? {})).toEqual(['document_id', 'knowledge_base_id', 'title', 'score']);
  });
});

describe('the browser client routes in the OpenAPI document', () => {
  it('publishes the script at the contract’s path and at its module and versioned URLs, as JavaScript, without an API key', async () => {
    const document = await gatewayOpenApiDocument();

    const paths = ['/v1/embed/', '/v1/embed/parley.js', '/v1/embed/parley.mjs', '/v1/embed/{build}/parley.js', '/v1/embed/{build}/parley.mjs'];
    expect(Object.keys(document.paths).filter((p) => p.startsWith('/v1/embed')).sort()).toEqual([...paths].sort());
    for (const path of paths) {
      const operation = document.paths[path].get as unknown as { security: unknown[]; responses: Record<string, { content?: Record<string, unknown> }> };
      expect(operation.security).toEqual([]);
      expect(operation.responses['200'].content).toHaveProperty('application/javascript');
      expect(operation.responses['304']).toBeDefined();
    }
    expect((document.paths['/v1/embed/{build}/parley.js'].get as unknown as { responses: Record<string, unknown> }).responses['404']).toBeDefined();
  });
});

describe('the rendezvous routes in the OpenAPI document', () => {
  let document: OpenAPIObject;

  beforeAll(async () => {
    document = await gatewayOpenApiDocument();
  });

  const operation = (path: string) =>
    document.paths[path].post as unknown as { requestBody: { content: Record<string, { schema: { $ref: string } }> }; responses: Record<string, { content?: Record<string, { schema: { $ref: string } }> }> };
  const schema = (ref: string) => (document.components?.schemas as Record<string, Schema>)[ref.split('/').pop() as string];

  it('publishes POST /v1/calls/rendezvous with its seats, answering 201 a call whose seats say which are taken', () => {
    const create = operation('/v1/calls/rendezvous');
    expect(create.responses['501']).toBeUndefined();
    expect(Object.keys(schema(create.requestBody.content['application/json'].schema.$ref).properties ?? {}).sort()).toEqual(['agent_id', 'metadata', 'seats', 'variables']);
    const call = schema(create.responses['201'].content?.['application/json'].schema.$ref as string);
    expect(call.properties?.['seats']).toMatchObject({ type: ['array', 'null'] });
    expect(Object.keys(schema('SeatDto').properties ?? {}).sort()).toEqual(['copy', 'name', 'taken']);
  });

  it('publishes POST /v1/calls/{id}/seat answering 201 a realtime token of role seat, 404 and 409 among its problems', () => {
    const seat = operation('/v1/calls/{id}/seat');
    expect(seat.responses['501']).toBeUndefined();
    expect(Object.keys(schema(seat.requestBody.content['application/json'].schema.$ref).properties ?? {})).toEqual(['seat']);
    const token = schema(seat.responses['201'].content?.['application/json'].schema.$ref as string);
    expect(token.properties?.['role']).toMatchObject({ enum: expect.arrayContaining(['seat']) });
    expect(token.properties?.['seat']).toBeDefined();
    expect(Object.keys(seat.responses)).toEqual(expect.arrayContaining(['201', '404', '409']));
  });

});

describe('the workflow link on calls in the OpenAPI document', () => {
  it('publishes the workflow_run_id filter of GET /v1/calls and the call’s nullable workflow_run_id and workflow_recipient_id, not taken by POST', async () => {
    const document = await gatewayOpenApiDocument();
    const schemas = document.components?.schemas as Record<string, Schema>;
    const list = document.paths['/v1/calls'].get as unknown as { parameters: { name: string; in: string; schema: { pattern?: string } }[] };
    expect(list.parameters.find((p) => p.name === 'workflow_run_id')).toMatchObject({ in: 'query', schema: { pattern: '^wfr_[0-9A-Za-z]{22}$' } });
    for (const field of ['workflow_run_id', 'workflow_recipient_id']) {
      expect(schemas['CallDto'].properties?.[field]).toMatchObject({ type: ['string', 'null'] });
      expect(schemas['CallDto'].required).toContain(field);
      expect(Object.keys(schemas['CreateCallDto'].properties ?? {})).not.toContain(field);
    }
  });
});

describe('the knowledge documents in the OpenAPI document', () => {
  it('documents the re-fetch of URL documents: the interval on the documents route, fixed at creation, and its state on every document', async () => {
    const document = await gatewayOpenApiDocument();
    const schemas = document.components?.schemas as Record<string, Schema>;
    const add = document.paths['/v1/knowledge_bases/{id}/documents'].post as unknown as Schema;
    expect(add.description).toContain('`refresh_interval_hours`');
    const interval = schemas['DocumentInputDto'].properties?.['refresh_interval_hours'];
    expect(interval).toMatchObject({ type: ['integer', 'null'], minimum: 1, maximum: 720 });
    expect(interval?.description).toContain('Only with `url`');
    expect(interval?.description).toContain('delete the document and add it again');
    const doc = schemas['DocumentDto'];
    expect(doc.properties?.['refresh_interval_hours']).toMatchObject({ type: ['integer', 'null'] });
    for (const field of ['fetched_at', 'next_refresh_at']) expect(doc.properties?.[field]).toMatchObject({ type: ['string', 'null'], format: 'date-time' });
    expect(doc.properties?.['refresh_failure_reason']?.description).toContain('the previous content is kept and searched');
  });
});

describe('the ringing and claim routes in the OpenAPI document', () => {
  let document: OpenAPIObject;

  beforeAll(async () => {
    document = await gatewayOpenApiDocument();
  });

  type Op = { description: string; 'x-permission': string; parameters?: { name: string }[]; requestBody?: { content: Record<string, { schema: { $ref: string }; examples?: Record<string, unknown> }> }; responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }> };
  const op = (path: string, method: 'get' | 'post') => document.paths[path][method] as unknown as Op;
  const schema = (ref: string) => (document.components?.schemas as Record<string, Schema>)[ref.split('/').pop() as string];

  it('publishes GET /v1/calls/ringing as JSON and as an event stream, no longer planned', () => {
    const ringing = op('/v1/calls/ringing', 'get');
    expect(ringing.responses['501']).toBeUndefined();
    expect(ringing['x-permission']).toBe('calls:read');
    expect(Object.keys(ringing.responses['200'].content ?? {}).sort()).toEqual(['application/json', 'text/event-stream']);
    expect(ringing.description).toEqual(expect.stringContaining('`gone`'));
    expect(ringing.description).toEqual(expect.stringContaining('session-expired'));
  });

  it('publishes POST /v1/calls/{id}/claim answering 201 a realtime token (operator or seat), 404 and 409, without Idempotency-Key', () => {
    const claim = op('/v1/calls/{id}/claim', 'post');
    expect(claim.responses['501']).toBeUndefined();
    expect(Object.keys(claim.responses)).toEqual(expect.arrayContaining(['201', '404', '409']));
    expect((claim.parameters ?? []).map((p) => p.name)).not.toContain('Idempotency-Key');
    expect(Object.keys(schema(claim.requestBody?.content['application/json'].schema.$ref ?? '').properties ?? {})).toEqual(['operator']);
    const token = schema(claim.responses['201'].content?.['application/json'].schema.$ref as string);
    expect(token.properties?.['role']).toMatchObject({ enum: ['caller', 'seat', 'operator', 'console'] });
  });

  it('publishes the console token: both bodies of POST /v1/realtime/tokens, and its refresh', () => {
    const mint = op('/v1/realtime/tokens', 'post');
    const body = mint.requestBody?.content['application/json'];
    expect(Object.keys(body?.examples ?? {}).sort()).toEqual(['console', 'web_call']);
    expect(Object.keys(schema(body?.schema.$ref ?? '').properties ?? {}).sort()).toEqual(['agent_id', 'metadata', 'operator', 'role', 'ttl_seconds', 'variables']);
    const token = schema(mint.responses['201'].content?.['application/json'].schema.$ref as string);
    for (const field of ['operator', 'session_expires_at']) expect(token.properties?.[field]).toBeDefined();
    for (const field of ['url', 'call_id', 'call']) expect(JSON.stringify(token.properties?.[field])).toContain('null');
    const refresh = op('/v1/realtime/tokens/refresh', 'post');
    expect(Object.keys(refresh.responses)).toEqual(expect.arrayContaining(['201', '401']));
  });

  it('shows claimable, claimed_by and claimed_at on every call', () => {
    const call = schema('CallDto');
    expect(call.properties?.['claimable']).toMatchObject({ type: 'boolean' });
    expect(call.properties?.['claimed_by']).toMatchObject({ type: ['string', 'null'] });
    expect(call.properties?.['claimed_at']).toMatchObject({ type: ['string', 'null'], format: 'date-time' });
  });
});
