import { FakeOpenAiServer, OpenAiCompatibleLlm } from '@parley/llm';
import { analysePostCall } from './post-call';

// End to end through the real `openai` SDK and HTTP: analysePostCall → OpenAiCompatibleLlm → an OpenAI-protocol server.
describe('analysePostCall over an OpenAI-compatible server', () => {
  const server = new FakeOpenAiServer();
  let baseURL: string;

  beforeAll(async () => {
    baseURL = await server.start();
  });

  afterAll(async () => {
    await server.stop();
  });

  it('sends one JSON-mode chat completion and reads the answer back typed', async () => {
    server.reply(() => ({
      content: '```json\n{"summary": "The caller booked a table for four on Saturday.", "extracted": {"party_size": "4", "vip": "no", "channel": "PHONE"}}\n```',
      model: 'llama3.1:8b-instruct-q4',
    }));
    const llm = new OpenAiCompatibleLlm({ name: 'ollama', baseURL, apiKey: 'sk-local', maxRetries: 0 });

    const result = await analysePostCall(
      llm,
      {
        summary: true,
        model: 'llama3.1:8b',
        extraction: [
          { name: 'party_size', description: 'Number of guests', type: 'number' },
          { name: 'vip', description: 'Whether the caller says they are a member', type: 'boolean' },
          { name: 'channel', description: 'How the booking was made', type: 'enum', options: ['phone', 'web'] },
        ],
      },
      [
        { role: 'assistant', text: 'Luigi’s, how can I help?' },
        { role: 'user', text: 'A table for four on Saturday, please.' },
      ],
    );

    expect(result).toEqual({
      summary: 'The caller booked a table for four on Saturday.',
      extracted: { party_size: 4, vip: false, channel: 'phone' },
      model: 'llama3.1:8b-instruct-q4',
    });
    expect(server.requests).toHaveLength(1);
    const { body, headers } = server.requests[0];
    expect(headers.authorization).toBe('Bearer sk-local');
    expect(body).toMatchObject({ model: 'llama3.1:8b', temperature: 0, response_format: { type: 'json_object' } });
    expect(body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(body.messages[1].content).toBe(
      'Transcript:\nAgent: Luigi’s, how can I help?\nCaller: A table for four on Saturday, please.',
    );
  });
});
