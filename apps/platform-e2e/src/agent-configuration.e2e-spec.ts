import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { FakeOpenAiServer } from '@parley/llm';
import { ApiClient, RunningPlatform } from '@parley/testing';

const KEY = 'vsk_agentcfg_owner_key_000001';

const base = { name: 'Config', languages: [{ code: 'en-US' }] };
const lookup = {
  kind: 'custom_function',
  name: 'lookup',
  description: 'Look an order up',
  request: {
    url: 'https://api.example.com/orders/{{order_id}}',
    method: 'GET',
    parameters: [{ name: 'order_id', type: 'string', required: true, in: 'path' }],
  },
};

describe('agent configuration: rules, secrets, flows, groups, functions and post-call', () => {
  let platform: RunningPlatform;
  let api: ApiClient;
  const llm = new FakeOpenAiServer();

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-fns-'));
    const functionsFile = join(dir, 'functions.json');
    writeFileSync(
      functionsFile,
      JSON.stringify([
        {
          name: 'check_stock',
          description: 'Stock level of a product',
          parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] },
          url: 'https://fns.example.com/stock',
        },
      ]),
    );
    const llmUrl = await llm.start();
    platform = await RunningPlatform.start({
      bootstrapKeys: [`acme:owner:${KEY}`],
      env: {
        FUNCTIONS_FILE: functionsFile,
        INTERNAL_HOSTS: 'tools.internal',
        // URL fields are resolved when saved; these test hosts exist nowhere, so the deployment lists them.
        EGRESS_ALLOWLIST: 'tools.internal,api.example.com,hooks.example.com',
        LLM_BASE_URL: llmUrl,
        LLM_API_KEY: 'sk-test',
      },
    });
    api = platform.api(KEY);
  });

  afterAll(async () => {
    await platform?.stop();
    await llm.stop();
  });

  const create = (fields: object) => api.post('/v1/agents', { ...base, ...fields });

  describe('rules the service checks, each accepted and refused with its field path (422)', () => {
    const cases: [string, object, object, string][] = [
      ['duplicate language', { languages: [{ code: 'en' }, { code: 'es', voice_id: 'v' }] }, { languages: [{ code: 'en' }, { code: 'en-GB', voice_id: 'v' }] }, 'languages[1].code'],
      ['voice on later languages', { languages: [{ code: 'en' }, { code: 'fr', voice_id: 'v1' }] }, { languages: [{ code: 'en' }, { code: 'fr' }] }, 'languages[1].voice_id'],
      ['configured recognizer', { languages: [{ code: 'en', stt_provider: 'deepgram' }] }, { languages: [{ code: 'en', stt_provider: 'whisperx' }] }, 'languages[0].stt_provider'],
      ['configured synthesizer', { languages: [{ code: 'en', tts_provider: 'local' }] }, { languages: [{ code: 'en', tts_provider: 'acme-tts' }] }, 'languages[0].tts_provider'],
      ['voices keyed by configured synthesizers', { languages: [{ code: 'en', voices: { elevenlabs: 'x' } }] }, { languages: [{ code: 'en', voices: { nope: 'x' } }] }, 'languages[0].voices.nope'],
      ['a real language', { languages: [{ code: 'Hindi' }] }, { languages: [{ code: 'klingonish' }] }, 'languages[0].code'],
      ['hang-up after the prompt', { conversation: { silence_prompt_seconds: 8, silence_hangup_seconds: 20 } }, { conversation: { silence_prompt_seconds: 10, silence_hangup_seconds: 10 } }, 'conversation.silence_hangup_seconds'],
      ['default prompt against a short hang-up', { conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: 5 } }, { conversation: { silence_hangup_seconds: 5 } }, 'conversation.silence_hangup_seconds'],
      ['voicemail message text', { conversation: { voicemail: 'message', voicemail_message: 'Hi {{name}}' } }, { conversation: { voicemail: 'message' } }, 'conversation.voicemail_message'],
      ['registered functions only', { tools: ['check_stock'] }, { tools: ['launch_rockets'] }, 'tools[0]'],
      ['tool names not reserved', { tool_configs: [lookup] }, { tool_configs: [{ ...lookup, name: 'end_call' }] }, 'tool_configs[0].name'],
      ['tool names not a function', { tool_configs: [lookup] }, { tool_configs: [{ ...lookup, name: 'check_stock' }] }, 'tool_configs[0].name'],
      ['tool names unique', { tool_configs: [lookup, { ...lookup, name: 'lookup2' }] }, { tool_configs: [lookup, lookup] }, 'tool_configs[1].name'],
      ['block matches kind', { tool_configs: [lookup] }, { tool_configs: [{ ...lookup, transfer: { destination: '+15550100000' } }] }, 'tool_configs[0].transfer'],
      ['https tool URL', { tool_configs: [{ ...lookup, request: { ...lookup.request, url: 'http://tools.internal/o/{{order_id}}' } }] }, { tool_configs: [{ ...lookup, request: { ...lookup.request, url: 'http://api.example.com/o/{{order_id}}' } }] }, 'tool_configs[0].request.url'],
      ['placeholders name parameters', { tool_configs: [lookup] }, { tool_configs: [{ ...lookup, request: { ...lookup.request, url: 'https://api.example.com/{{order_id}}/{{other}}' } }] }, 'tool_configs[0].request.url'],
      ['path parameters in the URL', { tool_configs: [lookup] }, { tool_configs: [{ ...lookup, request: { ...lookup.request, url: 'https://api.example.com/orders' } }] }, 'tool_configs[0].request.parameters[0].in'],
      ['transfer destination', { tool_configs: [{ kind: 'transfer_call', name: 'xfer', description: 'd', transfer: { destination: 'sip:desk@pbx.example.com' } }] }, { tool_configs: [{ kind: 'transfer_call', name: 'xfer', description: 'd', transfer: { destination: '555-0100' } }] }, 'tool_configs[0].transfer.destination'],
      ['calendar key', { tool_configs: [{ kind: 'calendar_availability', name: 'cal', description: 'd', calendar: { api_key: { value: 'cal_live_123456' }, event_type_id: 7 } }] }, { tool_configs: [{ kind: 'calendar_availability', name: 'cal', description: 'd', calendar: { event_type_id: 7 } }] }, 'tool_configs[0].calendar.api_key'],
      ['enum options', { post_call: { extraction: [{ name: 'mood', description: 'mood', type: 'enum', options: ['happy', 'unclear'] }] } }, { post_call: { extraction: [{ name: 'mood', description: 'mood', type: 'enum' }] } }, 'post_call.extraction[0].options'],
      ['existing group', {}, { group_id: 'grp_missing' }, 'group_id'],
      ['transfer number', { transfer_number: '+15550100000' }, { transfer_number: '0100' }, 'transfer_number'],
    ];

    it.each(cases)('%s', async (_rule, accepted, refused, field) => {
      const ok = await create(accepted);
      expect({ status: ok.status, body: ok.body }).toMatchObject({ status: 201 });
      const bad = await create(refused);
      expect(bad.status).toBe(422);
      expect(bad.body.code).toBe('validation_error');
      expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    });
  });

  it('reports the body’s shape problems and the service’s rule problems together, in one 422, for agents and groups', async () => {
    const agent = await create({ name: 42, languages: [{ code: 'en', stt_provider: 'whisperx' }], group_id: 'grp_missing' });
    expect(agent.status).toBe(422);
    expect(agent.body.errors.map((e: { field: string }) => e.field)).toEqual(['name', 'languages[0].stt_provider', 'group_id']);

    const existing = (await create({})).body.id;
    const patched = await api.patch(`/v1/agents/${existing}`, { mode: 'sideways', transfer_number: '0100' });
    expect(patched.status).toBe(422);
    expect(patched.body.errors.map((e: { field: string }) => e.field)).toEqual(['mode', 'transfer_number']);

    const group = await api.post('/v1/agent_groups', { name: 7, defaults: { webhook_url: 'https://127.0.0.1/' } });
    expect(group.status).toBe(422);
    expect(group.body.errors.map((e: { field: string }) => e.field)).toEqual(['name', 'defaults.webhook_url']);
  });

  it.each(['http://127.0.0.1/', 'https://169.254.169.254/', 'https://[::ffff:127.0.0.1]/', 'https://2130706433/', 'https://good.example@127.0.0.1/', 'https://localhost/'])(
    'refuses %s in every URL field of an agent and a group with 422 naming the field',
    async (url) => {
      const fields: [string, object][] = [
        ['webhook_url', { webhook_url: url }],
        ['tool_configs[0].request.url', { tool_configs: [{ ...lookup, request: { ...lookup.request, url: `${url}{{order_id}}` } }] }],
        ['tool_configs[0].transfer.webhook_url', { tool_configs: [{ kind: 'transfer_call', name: 'xfer', description: 'd', transfer: { destination: '+15550100000', webhook_url: url } }] }],
      ];
      for (const [field, body] of fields) {
        const bad = await create(body);
        expect({ field, status: bad.status }).toEqual({ field, status: 422 });
        expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      }
      const group = await api.post('/v1/agent_groups', { name: 'Internal', defaults: { webhook_url: url } });
      expect(group.status).toBe(422);
      expect(group.body.errors).toEqual([expect.objectContaining({ field: 'defaults.webhook_url' })]);
    },
  );

  it('reads an agent created without mode, autonomy or language_detection with their defaults', async () => {
    const created = await create({});
    const read = await api.get(`/v1/agents/${created.body.id}`);
    expect(read.body).toMatchObject({ mode: 'conversation', autonomy: 'agentic', language_detection: 'off' });
    expect(created.body).toMatchObject({ mode: 'conversation', autonomy: 'agentic', language_detection: 'off' });
  });

  it('normalises hi, hi-IN, hi_IN and Hindi to one region tag', async () => {
    for (const code of ['hi', 'hi-IN', 'hi_IN', 'Hindi']) {
      expect((await create({ languages: [{ code }] })).body.languages[0].code).toBe('hi-IN');
    }
  });

  it('reports every flow problem at once under flow.<path>, and {} removes the flow', async () => {
    const bad = await create({
      flow: {
        start: 'nowhere',
        variables: {},
        nodes: [
          { id: 'a', edges: [{ to: 'b', type: 'event' }, { to: 'ghost' }] },
          { id: 'a', type: 'static' },
          { id: 'b', tool: 'no_such_tool', edges: [{ to: 'a', type: 'expression', expression: { conditions: [{ variable: 'age', operator: 'gt', value: 3 }] } }] },
          { id: 'c', edges: [{ to: 'a', type: 'expression', expression: { conditions: [] } }, { to: 'a', type: 'expression', expression: { conditions: [{ variable: 'x', operator: 'exists', value: 1 }] } }] },
        ],
      },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(
      [
        'flow.start',
        'flow.nodes[0].edges[0].event',
        'flow.nodes[0].edges[1].to',
        'flow.nodes[1].id',
        'flow.nodes[1].say',
        'flow.nodes[2].tool',
        'flow.nodes[2].edges[0].expression.conditions[0].variable',
        'flow.nodes[3].edges[0].expression.conditions',
        'flow.nodes[3].edges[1].expression.conditions[0].value',
      ].sort(),
    );

    const flow = {
      start: 'greet',
      variables: { age: 'number' },
      nodes: [
        { id: 'greet', type: 'static', say: 'Hello {{name}}', edges: [{ to: 'route', type: 'always' }] },
        {
          id: 'route',
          type: 'router',
          edges: [
            { to: 'adult', type: 'expression', expression: { conditions: [{ variable: 'age', operator: 'gte', value: 18 }] } },
            { to: 'help', type: 'event', event: 'escalate' },
            { to: 'help', type: 'intent', when: 'wants help', capture: { topic: 'string' } },
          ],
        },
        { id: 'adult', prompt: 'Talk to an adult', tools: ['end_call'] },
        { id: 'help', tool: 'check_stock' },
      ],
    };
    const ok = await create({ tools: ['check_stock'], flow });
    expect(ok.status).toBe(201);
    // Read back as sent, with the documented defaults filled (node type llm, expression logic and).
    expect(ok.body.flow).toMatchObject(flow);
    expect(ok.body.flow.nodes[2].type).toBe('llm');
    expect(ok.body.flow.nodes[1].edges[0].expression.logic).toBe('and');
    const removed = await api.patch(`/v1/agents/${ok.body.id}`, { flow: {} });
    expect(removed.body.flow).toBeUndefined();
  });

  it('seals credentials: a calendar key reads back as a hint, secret headers only by name, and both survive an update that omits them', async () => {
    const created = await create({
      tool_configs: [
        { kind: 'book_appointment', name: 'book', description: 'Book', calendar: { api_key: { value: 'cal_live_secret_9876' }, event_type_id: 42 } },
        { ...lookup, request: { ...lookup.request, headers: { 'X-Team': 'ops' }, secret_header_values: { Authorization: 'Bearer s3cr3t' } } },
      ],
    });
    expect(created.status).toBe(201);
    expect(created.body.tool_configs[0].calendar.api_key).toEqual({ hint: '9876' });
    expect(created.body.tool_configs[1].request.secret_header_names).toEqual(['Authorization']);
    expect(created.body.tool_configs[1].request.timeout_seconds).toBe(8);
    expect(JSON.stringify(created.body)).not.toContain('s3cr3t');
    expect(JSON.stringify(created.body)).not.toContain('cal_live_secret');

    const sent = created.body.tool_configs.map((t: Record<string, any>) => {
      const copy = structuredClone(t);
      if (copy.calendar) delete copy.calendar.api_key;
      if (copy.request) delete copy.request.secret_header_names;
      return copy;
    });
    sent[0].description = 'Book a slot';
    const updated = await api.patch(`/v1/agents/${created.body.id}`, { tool_configs: sent });
    expect(updated.status).toBe(200);
    expect(updated.body.tool_configs[0].calendar.api_key).toEqual({ hint: '9876' });
    expect(updated.body.tool_configs[1].request.secret_header_names).toEqual(['Authorization']);

    sent[1].request.secret_header_values = { 'X-Api-Key': 'k2' };
    const replaced = await api.patch(`/v1/agents/${created.body.id}`, { tool_configs: sent });
    expect(replaced.body.tool_configs[1].request.secret_header_names).toEqual(['X-Api-Key']);
  });

  it('gives a custom agent without capabilities call control only, and keeps the block it was sent', async () => {
    const bare = await create({ autonomy: 'custom' });
    expect(bare.body.capabilities).toBeUndefined();
    expect(bare.body.effective.capabilities).toMatchObject({ end_call: true, transfer: true, call_functions: false, search_knowledge: false, max_tool_rounds: 3 });
    const agentic = await create({ autonomy: 'agentic', capabilities: { call_functions: false } });
    expect(agentic.body.capabilities).toEqual({ call_functions: false });
    expect(agentic.body.effective.capabilities.call_functions).toBe(true);
  });

  it('merges scalars and replaces lists and blocks on PATCH', async () => {
    const a = await create({ description: 'd', conversation: { interrupt_words: 3, voicemail: 'hangup' }, metadata: { a: '1', b: '2' } });
    const b = await api.patch(`/v1/agents/${a.body.id}`, { conversation: { interrupt_words: 4 }, metadata: { c: '3' } });
    expect(b.body.description).toBe('d');
    expect(b.body.conversation).toEqual({ interrupt_words: 4, voicemail: 'continue' });
    expect(b.body.metadata).toEqual({ c: '3' });
  });

  it('deletes softly and restores', async () => {
    const a = await create({});
    await api.delete(`/v1/agents/${a.body.id}`);
    expect((await api.get(`/v1/agents/${a.body.id}`)).status).toBe(404);
    const restored = await api.post(`/v1/agents/${a.body.id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body.id).toBe(a.body.id);
    expect((await api.get(`/v1/agents/${a.body.id}`)).status).toBe(200);
    expect((await api.post('/v1/agents/agt_missing/restore')).status).toBe(404);
  });

  describe('groups and inheritance', () => {
    it('flows defaults to members unless overridden, follows changes, and lists exactly the differing fields', async () => {
      const group = await api.post('/v1/agent_groups', { name: 'Sales', color: 'teal', defaults: { model: 'gpt-group', temperature: 0.3, record_calls: true } });
      expect(group.status).toBe(201);
      expect(group.body).toMatchObject({ object: 'agent_group', color: 'teal' });
      const follower = await create({ name: 'Follower', group_id: group.body.id, model: 'ignored-own-model' });
      const rebel = await create({ name: 'Rebel', group_id: group.body.id, model: 'gpt-own', temperature: 0.3, overrides: ['model', 'temperature'] });
      expect(follower.body.effective).toMatchObject({ model: 'gpt-group', temperature: 0.3, record_calls: true });
      expect(rebel.body.effective).toMatchObject({ model: 'gpt-own', temperature: 0.3, record_calls: true });

      await api.patch(`/v1/agent_groups/${group.body.id}`, { defaults: { model: 'gpt-group-2', temperature: 0.3, record_calls: true } });
      expect((await api.get(`/v1/agents/${follower.body.id}`)).body.effective.model).toBe('gpt-group-2');
      expect((await api.get(`/v1/agents/${rebel.body.id}`)).body.effective.model).toBe('gpt-own');

      const members = await api.get(`/v1/agent_groups/${group.body.id}/members`);
      expect(members.body).toEqual({
        object: 'agent_group_members',
        group_id: group.body.id,
        differing: 1,
        members: [
          { agent_id: follower.body.id, name: 'Follower', overrides: [], differences: [] },
          { agent_id: rebel.body.id, name: 'Rebel', overrides: ['model', 'temperature'], differences: [{ field: 'model', agent: 'gpt-own', group: 'gpt-group-2' }] },
        ],
      });

      const refused = await api.delete(`/v1/agent_groups/${group.body.id}`);
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('conflict');
    });

    it('validates group defaults like agent fields', async () => {
      const bad = await api.post('/v1/agent_groups', { name: 'G', defaults: { tools: ['nope'] } });
      expect(bad.status).toBe(422);
      expect(bad.body.errors[0].field).toBe('defaults.tools[0]');
      const empty = await api.post('/v1/agent_groups', { name: 'Empty' });
      expect((await api.delete(`/v1/agent_groups/${empty.body.id}`)).status).toBe(200);
    });
  });

  it('refuses an agent or group defaults naming a knowledge base the account does not have, with the other problems', async () => {
    const kb = await api.post('/v1/knowledge_bases', { name: 'Policies' });
    expect(kb.status).toBe(201);
    const refused = await api.post('/v1/agents', { name: '', languages: [{ code: 'en-US' }], knowledge_base_id: kb.body.id, knowledge_base_ids: [kb.body.id, 'kb_elsewhere'] });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'knowledge_base_ids[1]', message: 'names no knowledge base of this account' })]),
    );
    expect(refused.body.errors.map((e: { field: string }) => e.field)).not.toContain('knowledge_base_id');
    const group = await api.post('/v1/agent_groups', { name: 'G', defaults: { knowledge_base_ids: ['kb_elsewhere'] } });
    expect(group.status).toBe(422);
    expect(group.body.errors).toEqual([expect.objectContaining({ field: 'defaults.knowledge_base_ids[0]', message: 'names no knowledge base of this account' })]);
  });

  it('publishes an OpenAPI document from which a generated client type-checks a full agent', async () => {
    // The bases an agent names are the account's.
    const kb = await api.post('/v1/knowledge_bases', { name: 'Full' });
    expect(kb.status).toBe(201);
    const input = {
      name: 'Full',
      description: 'Every field',
      mode: 'conversation',
      autonomy: 'custom',
      capabilities: { call_functions: true, end_call: true, max_tool_rounds: 4, retrieval_timeout_ms: 300, search_knowledge: false, transfer: true },
      conversation: { interrupt_phrases: ['stop'], interrupt_words: 3, max_call_seconds: 600, silence_prompt_seconds: 8, silence_hangup_seconds: 30, voicemail: 'message', voicemail_message: 'Call us back, {{name}}' },
      filler_phrase: 'One moment',
      flow: { start: 'a', variables: { n: 'number' }, routing: { model: 'router', instructions: 'route' }, nodes: [{ id: 'a', type: 'static', say: 'Hi', edges: [{ to: 'a', type: 'expression', priority: 1, expression: { logic: 'or', conditions: [{ variable: 'n', operator: 'gt', value: 1 }] } }] }] },
      keypad_timeout_seconds: 7,
      knowledge_base_id: kb.body.id as string,
      knowledge_base_ids: [kb.body.id as string],
      language_detection: 'follow',
      languages: [
        { code: 'en-US', greeting: 'Hello', silence_prompt: 'Still there?', stt_provider: 'deepgram', tts_provider: 'elevenlabs', system_prompt: 'Be kind', voice_id: 'v1', voices: { local: 'en' } },
        { code: 'es', voice_id: 'v2' },
      ],
      max_no_input: 2,
      max_tokens: 400,
      model: 'gpt-4o',
      models: { openai: 'gpt-4o' },
      no_input: 'Press a key',
      overrides: ['model'],
      pitch: 1,
      speed: 1.1,
      temperature: 0.4,
      post_call: { summary: true, model: 'm', extraction: [{ name: 'x', description: 'x', type: 'enum', options: ['a', 'unclear'] }] },
      record_calls: true,
      transcribe_calls: false,
      ring_seconds: 30,
      tool_configs: [
        { ...lookup, pre_tool_message: { 'en-US': 'Looking' }, request: { ...lookup.request, headers: { 'X-A': 'b' }, secret_header_values: { 'X-Key': 'k' }, timeout_seconds: 5 } },
        { kind: 'book_appointment', name: 'book', description: 'b', calendar: { provider: 'cal.com', api_key: { value: 'cal_1234' }, event_type_id: 1, event_type_slug: 's', event_type_title: 't', duration_minutes: 30, timezone: 'Europe/Paris' } },
        { kind: 'transfer_call', name: 'xfer', description: 'x', transfer: { destination: '+15550100000', webhook_url: 'https://hooks.example.com/t' } },
      ],
      tools: ['check_stock'],
      webhook_url: 'https://hooks.example.com/agent',
      carrier: 'twilio',
      transfer_number: '+15550100001',
      metadata: { team: 'ops' },
    };
    const created = await api.post('/v1/agents', input);
    expect(created.status).toBe(201);
    const dir = mkdtempSync(join(tmpdir(), 'openapi-client-'));
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify((await platform.api().get('/openapi.json')).body));
    const root = resolve(__dirname, '..', '..', '..');
    execFileSync(join(root, 'node_modules/.bin/openapi-typescript'), [join(dir, 'openapi.json'), '-o', join(dir, 'api.ts'), '--default-non-nullable', 'false'], { stdio: 'pipe' });
    writeFileSync(
      join(dir, 'client.ts'),
      [
        "import type { components } from './api';",
        `export const input: components['schemas']['AgentInputDto'] = ${JSON.stringify(input)};`,
        `export const agent: components['schemas']['AgentDto'] = ${JSON.stringify(created.body)};`,
        '',
      ].join('\n'),
    );
    execFileSync(join(root, 'node_modules/.bin/tsc'), ['--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--moduleResolution', 'node', join(dir, 'client.ts')], {
      stdio: 'pipe',
    });
  });

  it('lists the registered functions', async () => {
    const res = await api.get('/v1/functions');
    expect(res.body).toEqual({
      object: 'list',
      has_more: false,
      data: [
        {
          object: 'function',
          name: 'check_stock',
          description: 'Stock level of a product',
          parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] },
        },
      ],
    });
  });

  it('tests post-call analysis through the language model, with typed extracted values', async () => {
    llm.reply(() => JSON.stringify({ summary: 'Caller booked a table.', extracted: { party_size: '4', vip: 'yes', mood: 'Happy' } }));
    const agent = await create({
      post_call: {
        model: 'gpt-analysis',
        extraction: [
          { name: 'party_size', description: 'How many people', type: 'number' },
          { name: 'vip', description: 'Is the caller a VIP', type: 'boolean' },
          { name: 'mood', description: 'Caller mood', type: 'enum', options: ['happy', 'angry', 'unclear'] },
        ],
      },
    });
    const res = await api.post(`/v1/agents/${agent.body.id}/post_call/test`, {
      transcript: [
        { role: 'assistant', text: 'Hello, how can I help?' },
        { role: 'user', text: 'A table for four please, I am a VIP.' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'post_call_test', summary: 'Caller booked a table.', extracted: { party_size: 4, vip: true, mood: 'happy' } });
    expect(llm.requests.at(-1)?.body.model).toBe('gpt-analysis');
  });
});
