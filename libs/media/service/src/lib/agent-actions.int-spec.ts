import { ToolCalendar, ToolConfigOf, ToolRequest } from '@parley/contracts';
import { callerSpeechMulaw, FakeElevenLabsServer } from '@parley/speech';
import type { AgentSpec } from '@parley/voice-engine';
import { until } from './testing/caller-line';
import { closeAll, endpoint, placeCall } from './testing/phone-call';

/*
 * Scenario tests of what an agent does besides talking, over the real stack (testing/phone-call.ts, the harness of
 * conversation.int-spec.ts): the model (the real OpenAI-compatible adapter against FakeOpenAiServer) calls tools
 * a custom function served on 127.0.0.1 (allowed through the egress allowlist), a transfer with a webhook, the
 * opt-out, and the agent follows the caller into another language. Twilio's side is FakeTwilioServer; the
 * caller speaks real synthetic speech in real time.
 */

/** A conversation agent on Deepgram and ElevenLabs, quiet-line timers off. */
function conversationAgent(extra: AgentSpec = {}): AgentSpec {
  return {
    mode: 'conversation',
    languages: [{ code: 'en-US', greeting: 'Hello.', system_prompt: 'You are Ada.', stt_provider: 'deepgram', tts_provider: 'elevenlabs', voice_id: 'voice-ada' }],
    conversation: { silence_prompt_seconds: -1, silence_hangup_seconds: -1 },
    ...extra,
  };
}

/**
 * An order-lookup custom function: `{{order_id}}` in the path, a secret header, a closed schema. Without `secret`,
 * the redacted form the agent document carries; with it, the runtime read's.
 */
function orderLookup(baseUrl: string, secret: string | undefined): ToolConfigOf<ToolCalendar, ToolRequest & { secret_header_values?: Record<string, string> }> {
  return {
    kind: 'custom_function',
    name: 'lookup_order',
    description: 'Looks up an order by its number.',
    request: {
      url: `${baseUrl}/orders/{{order_id}}`,
      method: 'GET',
      headers: { accept: 'application/json' },
      ...(secret === undefined ? {} : { secret_header_values: { authorization: secret } }),
      timeout_seconds: 5,
      parameters: [{ name: 'order_id', type: 'string', required: true, in: 'path', description: 'The order number.' }],
    },
  };
}

/** The tool messages of a chat-completion request. */
const toolMessages = (body: { messages: { role: string; content: unknown; tool_call_id?: string }[] }) => body.messages.filter((m) => m.role === 'tool');

afterEach(closeAll);
afterAll(closeAll);

// ---- the scenarios ----------------------------------------------------------------------------------------

describe('agent actions over the real stack', () => {
  it('calls a custom function with its templated URL and unsealed secret header, and speaks its JSON answer', async () => {
    const question = 'Where is my order one two three?';
    const { server, url } = await endpoint((req) => ({ order: req.url.split('/').pop(), status: 'shipped', eta: 'Friday' }));
    const secret = 'Bearer sk_live_unsealed';
    const c = await placeCall({
      // The agent document carries the tool redacted; the runtime read carries the secret in the clear.
      spec: conversationAgent({ tool_configs: [orderLookup(url, undefined)] }),
      runtime: { tool_configs: [orderLookup(url, secret)] },
      utterances: [question],
      llm: (body) => {
        const tool = toolMessages(body)[0];
        if (!tool) return { toolCalls: [{ id: 'call_order', name: 'lookup_order', arguments: '{"order_id":"A 123/4"}' }] };
        const answer = JSON.parse(String(tool.content)) as { status: string; eta: string };
        return `Your order has ${answer.status} and arrives ${answer.eta}.`;
      },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    const reply = await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    // The path parameter was filled percent-escaped; the secret header arrived unsealed.
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/orders/A%20123%2F4' });
    expect(server.requests[0].headers).toMatchObject({ authorization: secret, accept: 'application/json', 'user-agent': 'Parley-Tools/1' });
    // The model offered the tool with a closed schema, then got the function's JSON back as the tool result.
    const offered = c.llm.requests[0].body.tools?.find((t) => t.function.name === 'lookup_order');
    expect(offered?.function.parameters).toMatchObject({ additionalProperties: false, required: ['order_id'] });
    expect(c.llm.requests).toHaveLength(2);
    expect(toolMessages(c.llm.requests[1].body)).toEqual([
      { role: 'tool', tool_call_id: 'call_order', content: JSON.stringify({ order: 'A%20123%2F4', status: 'shipped', eta: 'Friday' }) },
    ]);
    // Spoken by ElevenLabs and heard by the caller.
    const spoken = 'Your order has shipped and arrives Friday.';
    expect(c.elevenLabs.requests.map((r) => r.body?.['text'])).toContain(spoken);
    expect(reply).toMatchObject({ text: spoken, interrupted: false });
    expect(c.control.toolCalls).toEqual([
      expect.objectContaining({ name: 'lookup_order', kind: 'custom_function', arguments_json: '{"order_id":"A 123/4"}', ok: true, error: '' }),
    ]);
    // Numbered on its stream after the greeting and the question, so a retried report is recognised.
    expect(c.control.toolCalls[0]).toMatchObject({ stream_id: expect.stringMatching(/.+/), seq: 3 });
  }, 30_000);

  it('refuses an argument outside the closed schema without a request, and tells the model', async () => {
    const question = 'Check order one two three please.';
    const { server, url } = await endpoint(() => ({ status: 'shipped' }));
    const c = await placeCall({
      spec: conversationAgent(),
      runtime: { tool_configs: [orderLookup(url, 'Bearer x')] },
      utterances: [question],
      llm: (body) =>
        toolMessages(body).length
          ? 'Sorry, I could not look that up.'
          : { toolCalls: [{ id: 'call_bad', name: 'lookup_order', arguments: '{"order_id":"123","discount":"100%"}' }] },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    expect(server.requests).toHaveLength(0);
    expect(c.llm.requests).toHaveLength(2);
    const [refusal] = toolMessages(c.llm.requests[1].body);
    expect(refusal).toMatchObject({ tool_call_id: 'call_bad' });
    expect(refusal.content).toContain('Refused, no request was made: unknown argument "discount"');
    expect(c.control.toolCalls).toEqual([
      expect.objectContaining({ name: 'lookup_order', kind: 'custom_function', ok: false, error: expect.stringContaining('unknown argument "discount"') }),
    ]);
  }, 30_000);

  it('refuses a tool URL on a private address that is not allow-listed, without connecting', async () => {
    const question = 'Check order one two three please.';
    const c = await placeCall({
      spec: conversationAgent(),
      runtime: { tool_configs: [orderLookup('http://10.0.0.1:8080', 'Bearer x')] },
      utterances: [question],
      llm: (body) =>
        toolMessages(body).length ? 'Sorry, that service is not reachable.' : { toolCalls: [{ id: 'call_private', name: 'lookup_order', arguments: '{"order_id":"123"}' }] },
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    // The outbound-request guard refused the address before any connection (no timeout, no network error).
    expect(c.control.toolCalls).toEqual([
      expect.objectContaining({ name: 'lookup_order', kind: 'custom_function', ok: false, error: 'refused by the outbound request guard' }),
    ]);
    const [result] = toolMessages(c.llm.requests[1].body);
    expect(result).toEqual({ role: 'tool', tool_call_id: 'call_private', content: 'The tool call failed: the service could not be reached.' });
    expect(String(result.content)).not.toContain('10.0.0.1');
  }, 30_000);

  it('transfers the call within 3.2 s of the transfer webhook request when the webhook never answers', async () => {
    const question = 'I want to talk to a person.';
    const { server, url } = await endpoint(); // never answers
    const c = await placeCall({
      spec: conversationAgent(),
      runtime: {
        tool_configs: [
          { kind: 'transfer_call', name: 'transfer_to_desk', description: 'Puts the caller through to the front desk.', transfer: { destination: '+15550100999', webhook_url: `${url}/hooks/transfer` } },
        ],
      },
      utterances: [question],
      llm: () => ({ content: 'Putting you through now.', toolCalls: [{ id: 'call_xfer', name: 'transfer_to_desk', arguments: '{"reason":"wants a person"}' }] }),
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    const hook = await until(() => server.requests[0], 'the transfer webhook', 15_000);
    const transfer = await until(() => c.control.transfers[0], 'the transfer', 6_000);
    await c.stream.closed;

    expect(hook).toMatchObject({ method: 'POST', url: '/hooks/transfer' });
    expect(JSON.parse(hook.body)).toEqual({ type: 'call.transfer', call_id: c.call.id, tool: 'transfer_to_desk', destination: '+15550100999', reason: 'wants a person' });
    expect(transfer.destination).toBe('+15550100999');
    expect(transfer.at - hook.at).toBeLessThanOrEqual(3200);
    expect(transfer.at - hook.at).toBeGreaterThanOrEqual(2500);
    expect(c.twilio.calls.find((r) => r.action === 'update')?.twiml).toContain('<Dial><Number>+15550100999</Number></Dial>');
    expect(c.control.ends).toEqual([]);
    await until(() => c.control.toolCalls[0], 'the tool report');
    expect(c.control.toolCalls).toEqual([expect.objectContaining({ name: 'transfer_to_desk', kind: 'transfer_call', ok: true })]);
  }, 30_000);

  it('follows the caller into French: the reply is synthesized with the fr-FR entry\'s voice', async () => {
    const question = 'Bonjour, je voudrais parler en français.';
    const answer = 'Bien sûr, parlons français.';
    const c = await placeCall({
      spec: {
        ...conversationAgent(),
        language_detection: 'follow',
        languages: [
          { code: 'en-US', greeting: 'Hello.', system_prompt: 'You are Ada.', stt_provider: 'deepgram', tts_provider: 'elevenlabs', voice_id: 'voice-ada' },
          { code: 'fr-FR', system_prompt: 'Tu es Ada.', tts_provider: 'elevenlabs', voice_id: 'voice-fr' },
        ],
      },
      utterances: [{ text: question, languages: ['fr'] }],
      llm: () => answer,
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    const reply = await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    // The recognizer detects the language (Deepgram `multi`) and said French.
    expect(c.deepgram.connections[0].params['language']).toBe('multi');
    const final = c.deepgram.connections[0].sent.find((m) => m['is_final'] === true && m['type'] === 'Results');
    expect((final?.['channel'] as { alternatives: { languages?: string[] }[] }).alternatives[0].languages).toEqual(['fr']);
    // The greeting in the English voice; the reply in the French one, with the French prompt.
    expect(c.elevenLabs.requests.map((r) => [r.body?.['text'], FakeElevenLabsServer.voiceIdOf(r)])).toEqual([
      ['Hello.', 'voice-ada'],
      [answer, 'voice-fr'],
    ]);
    const conversation = c.llm.requests.filter((r) => r.body.stream);
    expect(conversation[0].body.messages[0]).toEqual({ role: 'system', content: 'Tu es Ada.' });
    // Moving to French also has the model write the built-in lines (silence prompt, goodbye) in French.
    expect(c.llm.requests.filter((r) => !r.body.stream).map((r) => String(r.body.messages[0].content))).toEqual([
      expect.stringContaining('in the language fr-FR, asking a caller who has gone quiet'),
      expect.stringContaining('in the language fr-FR, saying goodbye'),
    ]);
    expect(c.control.turnsOf('user')[0]).toMatchObject({ text: question, language: 'fr-FR' });
    expect(reply).toMatchObject({ text: answer, language: 'fr-FR' });
  }, 30_000);

  it('records the opt-out with the calls service when the model calls record_opt_out', async () => {
    const question = 'Please do not call me again.';
    const c = await placeCall({
      spec: conversationAgent(),
      utterances: [question],
      llm: (body) => (toolMessages(body).length ? 'Done, you will not hear from us again.' : { toolCalls: [{ id: 'call_opt', name: 'record_opt_out', arguments: '{}' }] }),
    });
    await until(() => c.control.turns[0], 'the greeting');
    await c.line.say(callerSpeechMulaw(question));
    await until(() => c.control.optOuts[0], 'the opt-out', 15_000);
    await until(() => c.control.turnsOf('assistant')[1], 'the answer', 15_000);

    expect(c.control.optOuts).toEqual([expect.objectContaining({ account_id: 'acc_1', call_id: c.call.id })]);
    expect(c.control.toolCalls).toEqual([expect.objectContaining({ name: 'record_opt_out', kind: 'record_opt_out', ok: true })]);
    expect(toolMessages(c.llm.requests[1].body)[0].content).toContain('will not be contacted again');
  }, 30_000);
});
