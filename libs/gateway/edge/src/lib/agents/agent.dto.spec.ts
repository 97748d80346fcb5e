import 'reflect-metadata';
import { DECORATORS } from '@nestjs/swagger/dist/constants';
import { AppError } from '@parley/rpc';
import { BodyValidationPipe } from '../http/validation';
import { AgentGroupInputDto, AgentGroupPatchDto, GroupDefaultsDto } from './agent-group.dto';
import {
  AgentInputDto,
  AgentPatchDto,
  ApiKeyInputDto,
  CalendarDto,
  CapabilitiesDto,
  ConditionDto,
  ConversationDto,
  CreateAgentDto,
  EdgeDto,
  ExpressionDto,
  ExtractionFieldDto,
  FlowDto,
  INHERITABLE_FIELDS,
  LanguageEntryDto,
  NodeDto,
  ParameterDto,
  PostCallDto,
  CsatSurveyDto,
  PostCallTestInputDto,
  RequestDto,
  RoutingDto,
  ToolConfigDto,
  TransferDto,
  UpdateAgentDto,
} from './agent.dto';
import { ExtractedFieldDto, SuccessDto } from './success.dto';

// ---------------------------------------------------------------------------------------------------------------
// Harness: run a body through BodyValidationPipe the way the controllers do.
// ---------------------------------------------------------------------------------------------------------------

type Metatype = new () => object;

/** The properties a DTO documents in OpenAPI (which, for input DTOs, are also the ones it validates). */
function documentedFields(type: Metatype): string[] {
  return (Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, type.prototype) as string[]).map((p) => p.replace(/^:/, ''));
}
const pipe = new BodyValidationPipe();

async function check(metatype: Metatype, body: unknown): Promise<{ value?: unknown; error?: AppError }> {
  try {
    return { value: await pipe.transform(body, { type: 'body', metatype, data: undefined }) };
  } catch (error) {
    if (error instanceof AppError) return { error };
    throw error;
  }
}

/** Sets (or with `undefined` deletes) the value at a path such as `flow.nodes[2].edges[0].to`, creating blocks. */
function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.match(/[^.[\]]+/g) ?? [];
  let node: Record<string, unknown> = target;
  keys.slice(0, -1).forEach((key, i) => {
    if (node[key] === undefined || node[key] === null || typeof node[key] !== 'object') node[key] = /^\d+$/.test(keys[i + 1]) ? [] : {};
    node = node[key] as Record<string, unknown>;
  });
  const last = keys[keys.length - 1];
  if (value === undefined) delete node[last];
  else node[last] = value;
}

const text = (n: number) => 'x'.repeat(n);
const list = <T>(n: number, item: (i: number) => T) => Array.from({ length: n }, (_, i) => item(i));
const map = (n: number, value = 'v') => Object.fromEntries(list(n, (i) => [`k${i}`, value]));

type Outcome = { ok: true } | { ok: false; code: 'validation_error' | 'invalid_request'; field: string; message?: string };
interface Case {
  name: string;
  path: string;
  value: unknown;
  outcome: Outcome;
}

function show(value: unknown): string {
  if (value === undefined) return '(absent)';
  const json = JSON.stringify(value);
  if (typeof value === 'string' && value.length > 12) return `"${value.length} chars"`;
  if (Array.isArray(value) && json.length > 40) return `[${value.length} items]`;
  return json.length > 40 ? `${json.slice(0, 37)}…` : json;
}

/** Each value is accepted at `path`. */
const ok = (path: string, ...values: unknown[]): Case[] =>
  values.map((value) => ({ name: `accepts ${path} = ${show(value)}`, path, value, outcome: { ok: true } }));
/** Each value at `path` is refused with 422, reported at `field` (default: the path itself). */
const badAt = (path: string, field: string, ...values: unknown[]): Case[] =>
  values.map((value) => ({
    name: `refuses ${path} = ${show(value)}${field === path ? '' : ` (at ${field})`}`,
    path,
    value,
    outcome: { ok: false, code: 'validation_error', field },
  }));
const bad = (path: string, ...values: unknown[]) => badAt(path, path, ...values);
/** As `bad`, also checking the message. */
const badSaying = (path: string, message: string, ...values: unknown[]): Case[] =>
  values.map((value) => ({
    name: `refuses ${path} = ${show(value)} saying "${message}"`,
    path,
    value,
    outcome: { ok: false, code: 'validation_error', field: path, message },
  }));
/** An unknown field at `path` is refused with 400, named by its path. */
const unknown = (...paths: string[]): Case[] =>
  paths.map((path) => ({
    name: `refuses unknown field ${path}`,
    path,
    value: 'x',
    outcome: { ok: false, code: 'invalid_request', field: path },
  }));
/** A required field left out. */
const required = (...paths: string[]): Case[] =>
  paths.map((path) => ({
    name: `requires ${path}`,
    path,
    value: undefined,
    outcome: { ok: false, code: 'validation_error', field: path },
  }));

async function runCase(metatype: Metatype, fixture: () => Record<string, unknown>, c: Case): Promise<void> {
  const body = fixture();
  setPath(body, c.path, c.value);
  const { error } = await check(metatype, body);
  if (c.outcome.ok) {
    expect(error?.errors ?? error).toBeUndefined();
    return;
  }
  expect(error).toBeDefined();
  expect({ code: error?.code, fields: error?.errors?.map((e) => e.field) }).toEqual({ code: c.outcome.code, fields: [c.outcome.field] });
  expect(error?.status).toBe(c.outcome.code === 'invalid_request' ? 400 : 422);
  if (c.outcome.message) expect(error?.errors?.[0].message).toBe(c.outcome.message);
}

// ---------------------------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------------------------

/** An agent using every field (and every nested block) at least once. */
const fullAgent = (): Record<string, unknown> => ({
  project_id: `prj_${'7'.repeat(22)}`,
  name: 'Front desk',
  description: 'Answers the phone for the clinic.',
  mode: 'conversation',
  autonomy: 'custom',
  capabilities: {
    call_functions: true,
    end_call: true,
    max_tool_rounds: 3,
    retrieval_timeout_ms: 250,
    search_knowledge: true,
    transfer: false,
  },
  conversation: {
    interrupt_phrases: ['stop', 'wait a moment'],
    interrupt_words: 2,
    max_call_seconds: 600,
    silence_hangup_seconds: 20,
    silence_prompt_seconds: 8,
    voicemail: 'message',
    voicemail_message: 'Hello {{name}}, please call us back.',
  },
  filler_phrase: 'One moment please.',
  flow: {
    start: 'greet',
    nodes: [
      {
        id: 'greet',
        type: 'llm',
        description: 'Find out what the caller wants.',
        prompt: 'Ask how you can help.',
        examples: { 'en-US': 'How can I help you today?' },
        tool: 'lookup_order',
        tools: ['lookup_order', 'end_call'],
        knowledge_base_ids: ['kb_faq'],
        repeat_after_silence_seconds: 10,
        edges: [
          {
            to: 'book',
            type: 'intent',
            when: 'The caller wants an appointment',
            priority: 1,
            capture: { date: 'string', party: 'integer' },
          },
          { to: 'bye', type: 'event', event: 'crm.closed' },
        ],
      },
      {
        id: 'book',
        type: 'static',
        say: 'Booking {{date}} for you.',
        say_in: { 'fr-FR': 'Je réserve {{date}}.' },
        tools: [],
        knowledge_base_ids: [],
        edges: [{ to: 'bye', type: 'always' }],
      },
      {
        id: 'route',
        type: 'router',
        edges: [
          {
            to: 'bye',
            type: 'expression',
            priority: 0,
            expression: {
              logic: 'or',
              conditions: [
                { variable: 'caller.age', operator: 'gte', value: 18 },
                { variable: 'caller.vip', operator: 'exists' },
                { variable: 'caller.tier', operator: 'in', value: ['gold', 'silver'] },
              ],
            },
          },
        ],
      },
      { id: 'bye', type: 'static', say: 'Goodbye.' },
    ],
    routing: { model: 'gpt-4o-mini', instructions: 'Pick the edge that fits best.' },
    variables: { 'caller.age': 'number', 'caller.vip': 'boolean', 'caller.tier': 'string' },
  },
  group_id: 'agrp_123',
  keypad_timeout_seconds: 7,
  knowledge_base_id: 'kb_main',
  knowledge_base_ids: ['kb_main', 'kb_faq'],
  language_detection: 'follow',
  languages: [
    {
      code: 'en-US',
      greeting: 'Thanks for calling!',
      silence_prompt: 'Are you still there?',
      stt_provider: 'deepgram',
      tts_provider: 'elevenlabs',
      system_prompt: 'You are the front desk of a clinic.',
      voice_id: '',
      voices: { elevenlabs: 'rachel', azure: 'en-US-JennyNeural' },
    },
    { code: 'fr-FR', voice_id: 'amelie', voices: { elevenlabs: 'amelie' } },
  ],
  max_no_input: 2,
  max_tokens: 400,
  model: 'gpt-4o',
  models: { openai: 'gpt-4o', groq: 'llama-3.1-70b' },
  no_input: 'Please press a key.',
  overrides: ['model', 'temperature'],
  pitch: 1,
  speed: 1.25,
  temperature: 0.7,
  post_call: {
    summary: true,
    model: 'gpt-4o-mini',
    extraction: [
      { name: 'callback_time', description: 'When the caller wants to be called back.', type: 'string' },
      { name: 'outcome', description: 'How the call ended.', type: 'enum', options: ['booked', 'declined', 'unclear'] },
    ],
    success: { end_reasons: ['completed', 'hangup'], extracted_field: { name: 'outcome', equals: 'booked' } },
  },
  csat_survey: { enabled: true, prompt: 'One last thing: how did we do, from 1 to 5?', thanks: 'Thank you!', timeout_seconds: 6 },
  record_calls: true,
  transcribe_calls: false,
  ring_seconds: 30,
  tool_configs: [
    {
      kind: 'book_appointment',
      name: 'book_visit',
      description: 'Book a visit once the caller agreed on a time.',
      pre_tool_message: { 'en-US': 'Let me book that.' },
      calendar: {
        provider: 'cal_com',
        api_key: { value: 'cal_live_secret' },
        event_type_id: 42,
        event_type_slug: 'visit',
        event_type_title: 'Visit',
        duration_minutes: 30,
        timezone: 'Europe/Paris',
      },
    },
    {
      kind: 'transfer_call',
      name: 'to-human',
      description: 'Put the caller through to a person.',
      transfer: { destination: '+14155550100', webhook_url: 'https://hooks.example.com/transfer' },
    },
    {
      kind: 'custom_function',
      name: 'lookup_order',
      description: 'Look an order up by its number.',
      request: {
        url: 'https://api.example.com/orders/{{order_id}}',
        method: 'GET',
        headers: { Accept: 'application/json' },
        secret_header_values: { Authorization: 'Bearer s3cret' },
        body_template: '',
        timeout_seconds: 8,
        parameters: [
          { name: 'order_id', type: 'string', description: 'The order number.', required: true, in: 'path' },
          { name: 'status', type: 'string', enum: ['open', 'closed'], in: 'query' },
          { name: 'limit', type: 'integer', in: 'query' },
        ],
      },
    },
  ],
  tools: ['lookup_order'],
  webhook_url: 'https://hooks.example.com/parley',
  carrier: 'twilio',
  transfer_number: '+14155550100',
  metadata: { team: 'support' },
});

/** A group using every field, defaults covering every inheritable field. */
const fullGroup = (): Record<string, unknown> => {
  const agent = fullAgent();
  return {
    name: 'Support line',
    description: 'Agents answering support numbers.',
    color: 'teal',
    defaults: Object.fromEntries(INHERITABLE_FIELDS.map((f) => [f, agent[f]])),
    metadata: { cost_center: '42' },
  };
};

// ---------------------------------------------------------------------------------------------------------------
// The full fixtures
// ---------------------------------------------------------------------------------------------------------------

describe('agent DTO fixtures', () => {
  it('accepts the full agent and builds DTO instances all the way down', async () => {
    const { value, error } = await check(AgentInputDto, fullAgent());

    expect(error).toBeUndefined();
    const dto = value as AgentInputDto;
    expect(dto).toBeInstanceOf(AgentInputDto);
    expect(dto.languages[1]).toBeInstanceOf(LanguageEntryDto);
    expect(dto.flow).toBeInstanceOf(FlowDto);
    expect(dto.flow?.nodes?.[2]).toBeInstanceOf(NodeDto);
    expect(dto.flow?.nodes?.[2].edges?.[0]).toBeInstanceOf(EdgeDto);
    expect(dto.flow?.nodes?.[2].edges?.[0].expression?.conditions?.[0]).toBeInstanceOf(ConditionDto);
    expect(dto.tool_configs?.[2]).toBeInstanceOf(ToolConfigDto);
    expect(dto.tool_configs?.[2].request?.parameters?.[0]).toBeInstanceOf(ParameterDto);
    // What the controller forwards: the body as sent (nothing added, nothing dropped).
    expect(JSON.parse(JSON.stringify(dto))).toEqual(fullAgent());
  });

  it('uses every documented field of every input block', () => {
    const a = fullAgent() as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    const nodes = a.flow.nodes;
    const edges = nodes.flatMap((n: { edges?: unknown[] }) => n.edges ?? []);
    const expressions = edges.map((e: { expression?: unknown }) => e.expression).filter(Boolean);
    const tools = a.tool_configs;
    const blocks: [Metatype, object[]][] = [
      [AgentInputDto, [a]],
      [LanguageEntryDto, a.languages],
      [CapabilitiesDto, [a.capabilities]],
      [ConversationDto, [a.conversation]],
      [FlowDto, [a.flow]],
      [NodeDto, nodes],
      [EdgeDto, edges],
      [ExpressionDto, expressions],
      [ConditionDto, expressions.flatMap((x: { conditions: object[] }) => x.conditions)],
      [RoutingDto, [a.flow.routing]],
      [PostCallDto, [a.post_call]],
      [CsatSurveyDto, [a.csat_survey]],
      [ExtractionFieldDto, a.post_call.extraction],
      [SuccessDto, [a.post_call.success]],
      [ExtractedFieldDto, [a.post_call.success.extracted_field]],
      [ToolConfigDto, tools],
      [CalendarDto, [tools[0].calendar]],
      [ApiKeyInputDto, [tools[0].calendar.api_key]],
      [TransferDto, [tools[1].transfer]],
      [RequestDto, [tools[2].request]],
      [ParameterDto, tools[2].request.parameters],
    ];
    for (const [type, objects] of blocks) {
      const used = new Set(objects.flatMap((o) => Object.keys(o)));
      expect({ block: type.name, fields: documentedFields(type).sort() }).toEqual({ block: type.name, fields: [...used].sort() });
    }
  });

  it('accepts the smallest agent', async () => {
    expect((await check(AgentInputDto, { name: 'A', languages: [{ code: 'en' }] })).error).toBeUndefined();
  });

  it('keeps the names the controller imported before (CreateAgentDto, UpdateAgentDto)', () => {
    expect(CreateAgentDto).toBe(AgentInputDto);
    expect(UpdateAgentDto).toBe(AgentPatchDto);
  });

  it('accepts the full group and builds its defaults block', async () => {
    const { value, error } = await check(AgentGroupInputDto, fullGroup());

    expect(error).toBeUndefined();
    expect((value as AgentGroupInputDto).defaults).toBeInstanceOf(GroupDefaultsDto);
    expect(Object.keys((value as AgentGroupInputDto).defaults ?? {}).sort()).toEqual([...INHERITABLE_FIELDS].sort());
  });

  it('reports every problem of a body at once, nested ones by path', async () => {
    const body = fullAgent();
    setPath(body, 'name', '');
    setPath(body, 'conversation.interrupt_words', 11);
    setPath(body, 'languages[1].voices', { elevenlabs: 5 });
    setPath(body, 'flow.nodes[2].edges[0].expression.conditions[0].operator', 'like');
    setPath(body, 'tool_configs[2].request.timeout_seconds', 31);
    const { error } = await check(AgentInputDto, body);

    expect(error?.code).toBe('validation_error');
    expect(error?.errors?.map((e) => e.field).sort()).toEqual([
      'conversation.interrupt_words',
      'flow.nodes[2].edges[0].expression.conditions[0].operator',
      'languages[1].voices',
      'name',
      'tool_configs[2].request.timeout_seconds',
    ]);
  });

  it('reports unknown fields (at any depth) before invalid values', async () => {
    const body = fullAgent();
    setPath(body, 'name', '');
    setPath(body, 'prompt', 'Top-level prompts do not exist');
    setPath(body, 'flow.nodes[1].edges[0].colour', 'red');
    const { error } = await check(AgentInputDto, body);

    expect(error?.code).toBe('invalid_request');
    expect(error?.errors?.map((e) => e.field).sort()).toEqual(['flow.nodes[1].edges[0].colour', 'prompt']);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Field by field: AgentInputDto
// ---------------------------------------------------------------------------------------------------------------

const tc = (i: number) => `tool_configs[${i}]`;
const node = 'flow.nodes[0]';
const edge = 'flow.nodes[0].edges[0]';
const condition = 'flow.nodes[2].edges[0].expression.conditions[0]';

const agentCases: Case[] = [
  // Unknown fields, including output-only and no-such fields.
  ...unknown('prompt', 'voice', 'id', 'object', 'created_at', 'effective', 'conversation.colour', 'capabilities.web_search'),
  ...unknown('languages[1].accent', 'flow.colour', `${node}.colour`, `${edge}.colour`, `${condition}.colour`, 'flow.routing.temperature'),
  ...unknown('post_call.language', 'post_call.extraction[0].required', 'post_call.success.extracted_field.value', `${tc(0)}.colour`, `${tc(0)}.calendar.api_key.hint`),
  ...unknown(`${tc(1)}.transfer.timeout`, `${tc(2)}.request.secret_header_names`, `${tc(2)}.request.parameters[0].default`),
  ...unknown(`${tc(0)}.calendar.colour`, 'flow.nodes[2].edges[0].expression.colour'),

  // name, description
  ...ok('name', 'A', text(200)),
  ...bad('name', '', text(201), 5, null, ['A']),
  ...required('name'),
  ...ok('description', '', text(2000)),
  ...bad('description', text(2001), 5, null),

  // mode, autonomy
  ...ok('mode', 'conversation', 'keypad', 'normal', 'webrtc'),
  ...badSaying('mode', 'must be one of: conversation, keypad, normal, webrtc', 'voice', 'Conversation', 1),
  ...ok('autonomy', 'agentic', 'simple', 'custom'),
  ...bad('autonomy', 'auto', true),

  // capabilities
  ...ok('capabilities', {}, { end_call: false }),
  ...bad('capabilities', 'all', [], true, null),
  ...ok('capabilities.call_functions', true, false),
  ...bad('capabilities.call_functions', 'yes', 1),
  ...bad('capabilities.end_call', 'true'),
  ...bad('capabilities.search_knowledge', 0),
  ...bad('capabilities.transfer', 'no'),
  ...ok('capabilities.max_tool_rounds', 0, 1, 10),
  ...badSaying('capabilities.max_tool_rounds', 'must be 0 (default) or between 1 and 10', 11, -1),
  ...badSaying('capabilities.max_tool_rounds', 'must be an integer', 2.5, '3'),
  ...ok('capabilities.retrieval_timeout_ms', 0, 50, 2000),
  ...badSaying('capabilities.retrieval_timeout_ms', 'must be 0 (default) or between 50 and 2000', 1, 49, 2001),

  // conversation
  ...ok('conversation', {}),
  ...bad('conversation', 'quiet', [{}]),
  ...ok('conversation.interrupt_phrases', [], list(50, () => text(200))),
  ...badSaying('conversation.interrupt_phrases', 'must have at most 50 items', list(51, () => 'stop')),
  ...badSaying('conversation.interrupt_phrases', 'items must be at most 200 characters long', ['stop', text(201)]),
  ...badSaying('conversation.interrupt_phrases', 'must contain only strings', ['stop', 1]),
  ...badSaying('conversation.interrupt_phrases', 'must be an array', 'stop'),
  ...ok('conversation.interrupt_words', 0, 1, 10),
  ...badSaying('conversation.interrupt_words', 'must be 0 (default) or between 1 and 10', 11, -1),
  ...badSaying('conversation.interrupt_words', 'must be an integer', 1.5, '2'),
  ...ok('conversation.max_call_seconds', 0, 30, 7200),
  ...badSaying('conversation.max_call_seconds', 'must be 0 (default) or between 30 and 7200', 1, 29, 7201, -1),
  ...ok('conversation.silence_hangup_seconds', -1, 0, 5, 300),
  ...badSaying('conversation.silence_hangup_seconds', 'must be -1 (never), 0 (default) or between 5 and 300', -2, 4, 301),
  ...bad('conversation.silence_hangup_seconds', 20.5),
  ...ok('conversation.silence_prompt_seconds', -1, 0, 3, 60),
  ...badSaying('conversation.silence_prompt_seconds', 'must be -1 (never), 0 (default) or between 3 and 60', -2, 2, 61),
  ...ok('conversation.voicemail', 'continue', 'hangup', 'message'),
  ...bad('conversation.voicemail', 'leave', ''),
  ...ok('conversation.voicemail_message', '', text(2000)),
  ...badSaying('conversation.voicemail_message', 'must be at most 2000 characters long', text(2001)),

  // filler_phrase
  ...ok('filler_phrase', '', text(500)),
  ...bad('filler_phrase', text(501), false),

  // flow (`{}` removes it)
  ...ok('flow', {}, { nodes: [] }),
  ...bad('flow', 'none', [], null),
  ...ok('flow.start', '', text(100)),
  ...bad('flow.start', text(101), 1),
  ...ok('flow.nodes', list(200, (i) => ({ id: `n${i}` }))),
  ...badSaying('flow.nodes', 'must have at most 200 items', list(201, (i) => ({ id: `n${i}` }))),
  ...bad('flow.nodes', { id: 'a' }),
  ...badSaying('flow.nodes', 'must contain only objects', ['greet']),
  ...required(`${node}.id`),
  ...badSaying(`${node}.id`, 'must be between 1 and 100 characters long', '', text(101)),
  ...ok(`${node}.type`, 'llm', 'static', 'router'),
  ...bad(`${node}.type`, 'agent'),
  ...ok(`${node}.description`, text(2000)),
  ...bad(`${node}.description`, text(2001)),
  ...ok(`${node}.prompt`, text(20000)),
  ...bad(`${node}.prompt`, text(20001)),
  ...ok(`${node}.say`, text(2000)),
  ...bad(`${node}.say`, text(2001)),
  ...ok(`${node}.say_in`, {}, { 'de-DE': 'Hallo' }, map(50)),
  ...badSaying(`${node}.say_in`, 'must map at most 50 keys (1-64 chars) to string values of at most 2000 chars', { fr: 5 }),
  ...bad(`${node}.say_in`, 'Hallo', ['Hallo'], map(51), { fr: text(2001) }, { '': 'x' }, { [text(65)]: 'x' }),
  ...ok(`${node}.examples`, { 'en-US': text(2000) }),
  ...bad(`${node}.examples`, { 'en-US': text(2001) }, { 'en-US': null }),
  ...ok(`${node}.tool`, '', text(200)),
  ...bad(`${node}.tool`, text(201), ['a']),
  ...ok(`${node}.tools`, [], list(50, (i) => `t${i}`)),
  ...bad(`${node}.tools`, list(51, (i) => `t${i}`), [1], 'lookup_order'),
  ...ok(`${node}.knowledge_base_ids`, [], list(20, (i) => `kb${i}`)),
  ...bad(`${node}.knowledge_base_ids`, list(21, (i) => `kb${i}`), [text(201)]),
  ...ok(`${node}.repeat_after_silence_seconds`, 0, 300),
  ...bad(`${node}.repeat_after_silence_seconds`, -1, 301, 1.5, '10'),
  ...ok(`${node}.edges`, [], list(50, () => ({ to: 'bye' }))),
  ...bad(`${node}.edges`, list(51, () => ({ to: 'bye' })), { to: 'bye' }),
  ...required(`${edge}.to`),
  ...bad(`${edge}.to`, '', text(101), 7),
  ...ok(`${edge}.type`, 'intent', 'expression', 'always', 'event'),
  ...bad(`${edge}.type`, 'maybe'),
  ...ok(`${edge}.when`, text(1000)),
  ...bad(`${edge}.when`, text(1001)),
  ...ok(`${edge}.priority`, -5, 0, 100),
  ...bad(`${edge}.priority`, 1.5, 'high', 1e12),
  ...ok(`${edge}.capture`, {}, { n: 'number', ok: 'boolean', s: 'string', i: 'integer' }),
  ...badSaying(`${edge}.capture`, 'must map at most 50 keys (1-64 chars) to one of: string, number, integer, boolean', { date: 'date' }),
  ...bad(`${edge}.capture`, ['date'], { date: 1 }),
  ...ok('flow.nodes[0].edges[1].event', text(100)),
  ...bad('flow.nodes[0].edges[1].event', text(101)),
  ...bad('flow.nodes[2].edges[0].expression', 'a > b', []),
  ...ok('flow.nodes[2].edges[0].expression.logic', 'and', 'or'),
  ...bad('flow.nodes[2].edges[0].expression.logic', 'xor'),
  // Empty or missing conditions are a flow rule the agents service reports with the flow's other problems.
  ...ok('flow.nodes[2].edges[0].expression.conditions', [], list(20, () => ({ variable: 'a', operator: 'exists' }))),
  ...bad('flow.nodes[2].edges[0].expression.conditions', list(21, () => ({ variable: 'a', operator: 'exists' }))),
  ...required(`${condition}.variable`, `${condition}.operator`),
  ...bad(`${condition}.variable`, '', text(201)),
  ...ok(`${condition}.operator`, 'eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'not_in', 'contains', 'exists', 'not_exists'),
  ...bad(`${condition}.operator`, 'like', '=='),
  ...ok(`${condition}.value`, undefined, null, 5, 'text', true, ['a', 1], { nested: { deep: true } }),
  ...ok('flow.routing', {}),
  ...bad('flow.routing', 'fast'),
  ...ok('flow.routing.model', text(200)),
  ...bad('flow.routing.model', text(201)),
  ...ok('flow.routing.instructions', text(5000)),
  ...bad('flow.routing.instructions', text(5001)),
  ...ok('flow.variables', {}, { 'order.total': 'number' }),
  ...bad('flow.variables', { count: 'integer' }, { count: 'date' }, ['count']),

  // group_id, knowledge bases, language detection
  ...ok('group_id', '', text(200)),
  ...bad('group_id', text(201), 5),
  ...ok('knowledge_base_id', 'kb_1'),
  ...bad('knowledge_base_id', 5, text(201)),
  ...ok('knowledge_base_ids', [], list(20, (i) => `kb${i}`)),
  ...bad('knowledge_base_ids', list(21, (i) => `kb${i}`), 'kb_1', [5]),
  ...ok('language_detection', 'off', 'follow'),
  ...bad('language_detection', 'auto', true),

  // keypad
  ...ok('keypad_timeout_seconds', 0, 7, 60),
  ...badSaying('keypad_timeout_seconds', 'must be between 0 and 60', 61, -1),
  ...bad('keypad_timeout_seconds', 2.5),
  ...ok('max_no_input', 0, 10),
  ...bad('max_no_input', 11, -1, 1.5),
  ...ok('no_input', text(500)),
  ...bad('no_input', text(501)),
  ...ok('ring_seconds', 0, 300),
  ...bad('ring_seconds', 301, -1, 0.5),

  // languages
  ...ok('languages', [{ code: 'en' }], list(20, (i) => ({ code: `l${i}` }))),
  ...badSaying('languages', 'must have at least 1 item', []),
  ...bad('languages', list(21, (i) => ({ code: `l${i}` })), 'en', ['en'], [null], { code: 'en' }, null),
  ...required('languages', 'languages[0].code'),
  ...bad('languages[0].code', '', text(65), 1),
  ...ok('languages[0].greeting', '', text(2000)),
  ...bad('languages[0].greeting', text(2001)),
  ...ok('languages[0].silence_prompt', text(500)),
  ...bad('languages[0].silence_prompt', text(501)),
  ...ok('languages[0].stt_provider', text(50)),
  ...bad('languages[0].stt_provider', text(51)),
  ...ok('languages[0].tts_provider', text(50)),
  ...bad('languages[0].tts_provider', text(51)),
  ...ok('languages[0].system_prompt', text(20000)),
  ...bad('languages[0].system_prompt', text(20001)),
  ...ok('languages[1].voice_id', '', text(200)),
  ...bad('languages[1].voice_id', text(201), 5),
  ...ok('languages[1].voices', {}, { elevenlabs: text(200) }),
  ...bad('languages[1].voices', { elevenlabs: 5 }, { elevenlabs: text(201) }, { [text(51)]: 'v' }, 'amelie', map(51)),

  // model settings
  ...ok('max_tokens', 0, 1, 4000),
  ...badSaying('max_tokens', 'must be 0 (default) or between 1 and 4000', 4001, -1),
  ...bad('max_tokens', 1.5),
  ...ok('model', '', text(200)),
  ...bad('model', text(201), 4),
  ...ok('models', {}, { openai: text(200) }),
  ...bad('models', { openai: text(201) }, { openai: 4 }, 'gpt-4o', map(51)),
  ...ok('temperature', 0, 0.7, 2),
  ...badSaying('temperature', 'must be between 0 and 2', -0.1, 2.1),
  ...badSaying('temperature', 'must be a number', '1'),
  ...ok('speed', 0, 0.25, 1.5, 4),
  ...badSaying('speed', 'must be 0 (default) or between 0.25 and 4', 0.2, 4.1, -1),
  ...badSaying('speed', 'must be a number', '1'),
  ...ok('pitch', 0, 0.25, 4),
  ...bad('pitch', 0.1, 5, true),

  // overrides
  ...ok('overrides', [], [...INHERITABLE_FIELDS]),
  ...badSaying('overrides', `items must each be one of: ${INHERITABLE_FIELDS.join(', ')}`, ['voice'], ['languages']),
  ...badSaying('overrides', 'must not repeat a value', ['model', 'model']),
  ...bad('overrides', 'model'),

  // post_call
  ...ok('post_call', {}, { summary: false }),
  ...bad('post_call', 'summary', []),
  ...bad('post_call.summary', 'yes'),
  ...ok('post_call.model', '', text(200)),
  ...bad('post_call.model', text(201)),
  ...ok('post_call.extraction', [], list(40, (i) => ({ name: `f${i}`, description: 'd' }))),
  ...badSaying('post_call.extraction', 'must have at most 40 items', list(41, (i) => ({ name: `f${i}`, description: 'd' }))),
  ...required('post_call.extraction[0].name', 'post_call.extraction[0].description'),
  ...ok('post_call.extraction[0].name', 'A_b_9', text(64)),
  ...badSaying('post_call.extraction[0].name', 'must be letters, digits and underscores only', 'callback time', 'call-back', 'heure_é'),
  ...bad('post_call.extraction[0].name', '', text(65)),
  ...ok('post_call.extraction[0].description', text(1000)),
  ...bad('post_call.extraction[0].description', '', text(1001)),
  ...ok('post_call.extraction[0].type', 'string', 'number', 'boolean', 'enum'),
  ...bad('post_call.extraction[0].type', 'date'),
  ...ok('post_call.extraction[1].options', [], list(50, (i) => `o${i}`)),
  ...bad('post_call.extraction[1].options', list(51, (i) => `o${i}`), [1], 'booked'),
  // Shape only: known end reasons and the field being one of extraction are the agents service's (successCriteriaProblems).
  ...ok('post_call.success', {}, { end_reasons: ['transferred'] }, { extracted_field: { name: 'callback_time' } }),
  ...bad('post_call.success', true, []),
  ...ok('post_call.success.end_reasons', ['whatever'], list(20, (i) => `r${i}`)),
  ...bad('post_call.success.end_reasons', 'completed', list(21, (i) => `r${i}`), [1]),
  ...required('post_call.success.extracted_field.name'),
  ...bad('post_call.success.extracted_field.name', '', text(201)),
  ...ok('post_call.success.extracted_field.equals', 'booked', 4, false),
  ...bad('post_call.success.extracted_field.equals', [], { a: 1 }, text(501)),

  // recording
  ...ok('record_calls', true, false),
  ...bad('record_calls', 'true', 1),
  ...ok('transcribe_calls', true),
  ...bad('transcribe_calls', 'false'),

  // tool_configs
  ...ok('tool_configs', [], list(50, (i) => ({ kind: 'transfer_call', name: `t${i}`, description: 'd' }))),
  ...bad('tool_configs', list(51, (i) => ({ kind: 'transfer_call', name: `t${i}`, description: 'd' })), { kind: 'transfer_call' }, ['t']),
  ...required(`${tc(0)}.kind`, `${tc(0)}.name`, `${tc(0)}.description`),
  ...ok(`${tc(0)}.kind`, 'calendar_availability', 'book_appointment', 'transfer_call', 'custom_function'),
  ...bad(`${tc(0)}.kind`, 'sms'),
  ...ok(`${tc(0)}.name`, 'a', 'A-b_9', text(64)),
  ...badSaying(`${tc(0)}.name`, 'must be letters, digits, _ and - only', 'book visit', 'book.visit'),
  ...bad(`${tc(0)}.name`, '', text(65)),
  ...ok(`${tc(0)}.description`, text(2000)),
  ...bad(`${tc(0)}.description`, '', text(2001)),
  ...ok(`${tc(0)}.pre_tool_message`, { 'fr-FR': text(500) }),
  ...bad(`${tc(0)}.pre_tool_message`, { 'fr-FR': text(501) }, 'One moment'),
  ...bad(`${tc(0)}.calendar`, 'cal', []),
  ...ok(`${tc(0)}.calendar.provider`, text(50)),
  ...bad(`${tc(0)}.calendar.provider`, text(51)),
  ...ok(`${tc(0)}.calendar.api_key`, undefined),
  ...bad(`${tc(0)}.calendar.api_key`, 'cal_live_secret'),
  ...required(`${tc(0)}.calendar.api_key.value`),
  ...ok(`${tc(0)}.calendar.api_key.value`, 'k', text(500)),
  ...bad(`${tc(0)}.calendar.api_key.value`, '', text(501), 12345),
  ...ok(`${tc(0)}.calendar.event_type_id`, 1, 123456),
  ...badSaying(`${tc(0)}.calendar.event_type_id`, 'must be at least 1', 0, -3),
  ...bad(`${tc(0)}.calendar.event_type_id`, 1.5, '42'),
  ...ok(`${tc(0)}.calendar.event_type_slug`, text(200)),
  ...bad(`${tc(0)}.calendar.event_type_slug`, text(201)),
  ...bad(`${tc(0)}.calendar.event_type_title`, text(201)),
  ...ok(`${tc(0)}.calendar.duration_minutes`, 1, 1440),
  ...bad(`${tc(0)}.calendar.duration_minutes`, 0, 1441, 15.5),
  ...ok(`${tc(0)}.calendar.timezone`, '', 'America/Argentina/Buenos_Aires'),
  ...bad(`${tc(0)}.calendar.timezone`, text(65)),
  ...bad(`${tc(1)}.transfer`, '+14155550100'),
  ...required(`${tc(1)}.transfer.destination`),
  ...ok(`${tc(1)}.transfer.destination`, 'sip:desk@pbx.example.com', text(200)),
  ...bad(`${tc(1)}.transfer.destination`, '', text(201)),
  ...ok(`${tc(1)}.transfer.webhook_url`, '', 'http://10.0.0.5:8080/transfer', 'https://hooks.internal/transfer'),
  ...badSaying(`${tc(1)}.transfer.webhook_url`, 'must be an absolute URL such as https://example.com/hook', 'hooks.example.com', 'a url'),
  ...bad(`${tc(2)}.request`, 'https://api.example.com'),
  ...required(`${tc(2)}.request.url`),
  ...ok(`${tc(2)}.request.url`, text(2000)),
  ...bad(`${tc(2)}.request.url`, '', text(2001)),
  ...ok(`${tc(2)}.request.method`, 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
  ...bad(`${tc(2)}.request.method`, 'get', 'FETCH'),
  ...ok(`${tc(2)}.request.headers`, {}, map(50)),
  ...bad(`${tc(2)}.request.headers`, map(51), { 'X-Count': 5 }, ['Accept: */*']),
  ...ok(`${tc(2)}.request.secret_header_values`, {}),
  ...bad(`${tc(2)}.request.secret_header_values`, { Authorization: 5 }, 'Bearer x'),
  ...ok(`${tc(2)}.request.body_template`, text(20000)),
  ...bad(`${tc(2)}.request.body_template`, text(20001), { a: 1 }),
  ...ok(`${tc(2)}.request.timeout_seconds`, 1, 30),
  ...badSaying(`${tc(2)}.request.timeout_seconds`, 'must be between 1 and 30', 0, 31),
  ...bad(`${tc(2)}.request.timeout_seconds`, 1.5),
  ...ok(`${tc(2)}.request.parameters`, [], list(50, (i) => ({ name: `p${i}`, type: 'string' }))),
  ...bad(`${tc(2)}.request.parameters`, list(51, (i) => ({ name: `p${i}`, type: 'string' }))),
  ...required(`${tc(2)}.request.parameters[0].name`, `${tc(2)}.request.parameters[0].type`),
  ...ok(`${tc(2)}.request.parameters[0].name`, 'order-id', text(64)),
  ...bad(`${tc(2)}.request.parameters[0].name`, 'order id', '', text(65)),
  ...ok(`${tc(2)}.request.parameters[0].type`, 'string', 'number', 'integer', 'boolean'),
  ...bad(`${tc(2)}.request.parameters[0].type`, 'object', 'date'),
  ...ok(`${tc(2)}.request.parameters[0].description`, text(1000)),
  ...bad(`${tc(2)}.request.parameters[0].description`, text(1001)),
  ...bad(`${tc(2)}.request.parameters[0].required`, 'yes'),
  ...ok(`${tc(2)}.request.parameters[1].enum`, [], list(50, (i) => `v${i}`)),
  ...bad(`${tc(2)}.request.parameters[1].enum`, list(51, (i) => `v${i}`), [1, 2], 'open'),
  ...ok(`${tc(2)}.request.parameters[0].in`, 'body', 'query', 'path'),
  ...bad(`${tc(2)}.request.parameters[0].in`, 'header'),

  // tools, webhook, carrier, transfer number, metadata
  ...ok('tools', [], list(50, (i) => `f${i}`)),
  ...bad('tools', list(51, (i) => `f${i}`), [5], 'lookup_order', [text(201)]),
  ...ok('webhook_url', '', 'https://hooks.example.com/parley', 'http://localhost:3000/hook', 'https://hooks.example.com/' + text(1900)),
  ...bad('webhook_url', 'hooks.example.com/parley', 'not a url', 'https://hooks.example.com/' + text(1975), 7),
  ...ok('carrier', text(50)),
  ...bad('carrier', text(51)),
  ...ok('transfer_number', '+14155550100', text(64)),
  ...bad('transfer_number', text(65), 14155550100),
  ...ok('metadata', {}, map(50)),
  ...bad('metadata', { team: 7 }, map(51), ['team'], 'team'),
];

describe('AgentInputDto field by field', () => {
  it.each(agentCases.map((c) => [c.name, c] as const))('%s', (_name, c) => runCase(AgentInputDto, fullAgent, c));
});

// ---------------------------------------------------------------------------------------------------------------
// PATCH bodies
// ---------------------------------------------------------------------------------------------------------------

const emptyBody = () => ({});

const patchCases: Case[] = [
  ...ok('description', 'Now answers after hours too.'),
  ...ok('flow', {}),
  ...ok('conversation', { interrupt_words: 3 }),
  ...ok('languages', [{ code: 'de-DE' }]),
  ...ok('name', undefined),
  // Absent leaves a field alone; null is not a way to clear it.
  ...bad('name', null, ''),
  ...bad('description', null),
  ...bad('flow', null),
  ...bad('languages', [], null),
  ...bad('conversation.silence_prompt_seconds', 2),
  ...unknown('prompt', 'conversation.colour'),
];

describe('AgentPatchDto', () => {
  it('accepts an empty patch', async () => {
    expect((await check(AgentPatchDto, {})).error).toBeUndefined();
  });

  it.each(patchCases.map((c) => [c.name, c] as const))('%s', (_name, c) => runCase(AgentPatchDto, emptyBody, c));
});

// ---------------------------------------------------------------------------------------------------------------
// Agent groups
// ---------------------------------------------------------------------------------------------------------------

const groupCases: Case[] = [
  ...unknown('id', 'object', 'defaults.languages', 'defaults.mode', 'defaults.overrides', 'defaults.capabilities.web_search'),
  ...ok('name', 'A', text(200)),
  ...bad('name', '', text(201), null, 3),
  ...required('name'),
  ...ok('description', '', text(2000)),
  ...bad('description', text(2001)),
  ...ok('color', 'slate', 'red', 'orange', 'amber', 'green', 'teal', 'blue', 'indigo', 'violet', 'pink'),
  ...badSaying('color', 'must be one of: slate, red, orange, amber, green, teal, blue, indigo, violet, pink', 'purple', 'Red', ''),
  ...ok('defaults', {}, { model: 'gpt-4o' }),
  ...bad('defaults', 'gpt-4o', []),
  // Same validators as on the agent, reported under defaults.
  ...ok('defaults.model', text(200)),
  ...bad('defaults.model', text(201)),
  ...bad('defaults.models', { openai: 5 }),
  ...bad('defaults.temperature', 2.5),
  ...bad('defaults.max_tokens', 4001),
  ...ok('defaults.speed', 0, 4),
  ...badSaying('defaults.speed', 'must be 0 (default) or between 0.25 and 4', 0.1),
  ...bad('defaults.pitch', 4.5),
  ...bad('defaults.autonomy', 'auto'),
  ...badSaying('defaults.capabilities.max_tool_rounds', 'must be 0 (default) or between 1 and 10', 11),
  ...bad('defaults.knowledge_base_ids', list(21, (i) => `kb${i}`)),
  ...bad('defaults.tools', [1]),
  ...bad('defaults.record_calls', 'yes'),
  ...bad('defaults.transcribe_calls', 1),
  ...bad('defaults.transfer_number', text(65)),
  ...bad('defaults.carrier', text(51)),
  ...bad('defaults.filler_phrase', text(501)),
  ...bad('defaults.webhook_url', 'hooks.example.com'),
  ...ok('metadata', {}),
  ...bad('metadata', { a: 1 }),
];

describe('AgentGroupInputDto field by field', () => {
  it.each(groupCases.map((c) => [c.name, c] as const))('%s', (_name, c) => runCase(AgentGroupInputDto, fullGroup, c));
});

describe('AgentGroupPatchDto', () => {
  it.each([
    ...ok('color', 'blue'),
    ...ok('defaults', {}),
    ...bad('name', null, ''),
    ...bad('defaults.temperature', 3),
    ...unknown('colour'),
  ].map((c) => [c.name, c] as const))('%s', (_name, c) => runCase(AgentGroupPatchDto, emptyBody, c));
});

// ---------------------------------------------------------------------------------------------------------------
// Post-call test
// ---------------------------------------------------------------------------------------------------------------

const transcript = () => ({
  transcript: [
    { role: 'assistant', text: 'Thanks for calling, how can I help?' },
    { role: 'user', text: 'Please call me back tomorrow at nine.' },
  ],
});

describe('PostCallTestInputDto', () => {
  it.each(
    [
      ...ok('transcript', [{ role: 'user', text: '' }], list(2000, () => ({ role: 'user', text: 'hi' }))),
      ...badSaying('transcript', 'must have at least 1 item', []),
      ...bad('transcript', list(2001, () => ({ role: 'user', text: 'hi' })), 'hello', ['hello']),
      ...required('transcript', 'transcript[1].role', 'transcript[1].text'),
      ...ok('transcript[1].role', 'user', 'assistant'),
      ...bad('transcript[1].role', 'system', 'caller'),
      ...ok('transcript[1].text', text(10000)),
      ...bad('transcript[1].text', text(10001), 5),
      ...unknown('transcript[1].at', 'agent_id'),
    ].map((c) => [c.name, c] as const),
  )('%s', (_name, c) => runCase(PostCallTestInputDto, transcript, c));
});
