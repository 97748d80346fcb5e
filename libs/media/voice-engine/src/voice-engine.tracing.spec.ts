import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { FakeLlm } from '@parley/llm';
import { recordSpans, SpanRecorder } from '@parley/tracing/testing';
import { settings, setup, speech } from './testing/engine-harness';

let recorder: SpanRecorder;
beforeAll(() => (recorder = recordSpans()));
afterAll(() => recorder.stop());
beforeEach(() => recorder.reset());

const ms = (time: [number, number]) => time[0] * 1000 + time[1] / 1e6;
const named = (name: string) => recorder.named(name);
const childrenOf = (parent: ReadableSpan) => recorder.childrenOf(parent);

describe('voice engine traces', () => {
  it('records an answered turn as parley.turn with its call and agent, and stt, llm and tts children in order', async () => {
    const llm = new FakeLlm(['We open at nine.']);
    const { engine, ask, turns, pumpUntil } = setup(settings(), { llm, engine: { callId: 'call_traced', agentId: 'agt_traced' } });
    void engine.start();
    await pumpUntil(() => turns.length === 1); // the greeting: no caller turn, so no turn span
    expect(named('parley.turn')).toEqual([]);

    await ask('When do you open?');
    await pumpUntil(() => turns.some((t) => t.role === 'assistant' && t.text === 'We open at nine.'));

    const [turn] = named('parley.turn');
    expect(turn).toBeDefined();
    expect(turn.parentSpanContext).toBeUndefined();
    expect(turn.attributes).toEqual({ 'parley.call_id': 'call_traced', 'parley.agent_id': 'agt_traced', 'parley.interrupted': false });
    const children = childrenOf(turn);
    expect(children.map((s) => s.name).sort()).toEqual(['llm', 'stt', 'tts']);
    const [stt, model, tts] = ['stt', 'llm', 'tts'].map((name) => children.find((s) => s.name === name) as ReadableSpan);
    // Caller speaks (turn start) → end of speech → final (stt end) → model → first audio (tts end) → answer heard.
    expect(ms(turn.startTime)).toBeLessThan(ms(stt.startTime));
    expect(ms(stt.startTime)).toBeLessThanOrEqual(ms(stt.endTime));
    expect(ms(stt.endTime)).toBeLessThanOrEqual(ms(model.startTime));
    expect(model.attributes['parley.llm.round']).toBe(0);
    expect(model.attributes['parley.llm.first_token_ms']).toEqual(expect.any(Number));
    expect(model.events.map((e) => e.name)).toEqual(['first_token']);
    expect(ms(tts.startTime)).toBeLessThanOrEqual(ms(tts.endTime));
    expect(ms(tts.endTime)).toBeLessThanOrEqual(ms(turn.endTime));
    // The answer takes about a second to play: the turn ends when it was heard, not when it was generated.
    expect(ms(turn.endTime) - ms(tts.endTime)).toBeGreaterThan(500);
  });

  it('ends the turn marked interrupted when the caller barges in', async () => {
    const long = 'Our opening hours are long and detailed. ' + 'We are open on many days of the week and at many times. '.repeat(4);
    const llm = new FakeLlm([long]);
    const { engine, ask, clock, stt, turns, pumpUntil, feed } = setup(settings({}, { interrupt_words: 1 }), { llm, engine: { callId: 'call_cut' } });
    void engine.start();
    await pumpUntil(() => turns.length === 1);
    await ask('Tell me your hours');
    await clock.advance(1500); // into the answer
    stt[0].emit({ type: 'partial', text: 'stop' });
    await feed(100, speech);
    await pumpUntil(() => turns.some((t) => t.role === 'assistant' && t.interrupted));

    const [turn] = named('parley.turn');
    expect(turn.attributes).toMatchObject({ 'parley.call_id': 'call_cut', 'parley.interrupted': true });
    expect(childrenOf(turn).map((s) => s.name).sort()).toEqual(['llm', 'stt', 'tts']);
  });

  it('puts each turn of a call in a trace of its own', async () => {
    const llm = new FakeLlm(['Nine.', 'Five.']);
    const { engine, ask, turns, pumpUntil } = setup(settings(), { llm, engine: { callId: 'call_two' } });
    void engine.start();
    await pumpUntil(() => turns.length === 1);
    await ask('When do you open?');
    await pumpUntil(() => turns.some((t) => t.text === 'Nine.'));
    await ask('And close?');
    await pumpUntil(() => turns.some((t) => t.text === 'Five.'));

    const spans = named('parley.turn');
    expect(spans.map((s) => s.attributes['parley.call_id'])).toEqual(['call_two', 'call_two']);
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(2);
  });
});
