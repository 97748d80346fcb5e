import { FakeLlm } from '@parley/llm';
import { CSAT_SURVEY_PROMPT, CSAT_SURVEY_THANKS } from './csat-survey';
import { settings, setup } from './testing/engine-harness';

const endCall = { id: 'e1', name: 'end_call', arguments: '{}' };

/** A conversation agent whose model says goodbye and ends the call on the caller's first turn. */
function surveyed(survey: Record<string, unknown> | undefined) {
  const llm = new FakeLlm([{ deltas: ['Glad I could help. Goodbye.'], toolCalls: [endCall] }]);
  const ratings: number[] = [];
  const h = setup(settings(survey ? { csat_survey: survey } : {}), { llm, host: { recordRating: (score) => void ratings.push(score) } });
  const said = () => h.turns.filter((t) => t.role === 'assistant').map((t) => t.text);
  return { ...h, ratings, said };
}

describe('the end-of-call survey in the engine (csat_survey)', () => {
  it('asks after the agent ends the call, records the key, thanks, then hangs up (agent)', async () => {
    const h = surveyed({ enabled: true });
    void h.engine.start();
    await h.clock.advance(2500);
    await h.ask('That is all, thanks.');
    await h.pumpUntil(() => h.said().includes(CSAT_SURVEY_PROMPT));
    expect(h.hangups).toEqual([]);
    // Waiting for the key (5 s after the prompt by default): the call stays up.
    await h.clock.advance(3000);
    expect(h.hangups).toEqual([]);
    h.engine.pushDtmf('4');
    await h.pumpUntil(() => h.hangups.length === 1);
    expect(h.ratings).toEqual([4]);
    expect(h.hangups).toEqual(['agent']);
    expect(h.said().slice(-2)).toEqual([CSAT_SURVEY_PROMPT, CSAT_SURVEY_THANKS]);
    expect(h.turns.filter((t) => t.role === 'user').map((t) => t.text)).toEqual(['That is all, thanks.', '4']);
  });

  it('says the agent’s own prompt and thanks, variables filled', async () => {
    const h = surveyed({ enabled: true, prompt: 'One last thing, {{name}}: rate us from 1 to 5.', thanks: 'Thanks, bye.' });
    void h.engine.start();
    await h.clock.advance(2500);
    await h.ask('Bye.');
    await h.pumpUntil(() => h.said().includes('One last thing, Sam: rate us from 1 to 5.'));
    h.engine.pushDtmf('5');
    await h.pumpUntil(() => h.hangups.length === 1);
    expect(h.said().at(-1)).toBe('Thanks, bye.');
    expect(h.ratings).toEqual([5]);
  });

  it('ends the call without a rating when no key comes within the timeout', async () => {
    const h = surveyed({ enabled: true, timeout_seconds: 3 });
    void h.engine.start();
    await h.clock.advance(2500);
    await h.ask('Bye.');
    await h.pumpUntil(() => h.hangups.length === 1, 30_000);
    expect(h.ratings).toEqual([]);
    expect(h.hangups).toEqual(['agent']);
    expect(h.said().at(-1)).toBe(CSAT_SURVEY_PROMPT);
  });

  it('does not answer words said during the survey (the model is not asked again)', async () => {
    const h = surveyed({ enabled: true, timeout_seconds: 10 });
    void h.engine.start();
    await h.clock.advance(2500);
    await h.ask('Bye.');
    await h.pumpUntil(() => h.said().includes(CSAT_SURVEY_PROMPT));
    await h.ask('Um, five I guess.');
    expect(h.llm.requests).toHaveLength(1);
    h.engine.pushDtmf('5');
    await h.pumpUntil(() => h.hangups.length === 1);
    expect(h.ratings).toEqual([5]);
  });

  it('is not asked when the caller hangs up (the engine is stopped), nor without the option', async () => {
    const stopped = surveyed({ enabled: true });
    void stopped.engine.start();
    await stopped.clock.advance(2500);
    await stopped.engine.stop();
    await stopped.clock.advance(10_000);
    expect(stopped.said()).not.toContain(CSAT_SURVEY_PROMPT);

    const plain = surveyed(undefined);
    void plain.engine.start();
    await plain.clock.advance(2500);
    await plain.ask('Bye.');
    await plain.pumpUntil(() => plain.hangups.length === 1);
    expect(plain.said()).not.toContain(CSAT_SURVEY_PROMPT);
    plain.engine.pushDtmf('4');
    expect(plain.ratings).toEqual([]);
  });

  it('is off on agents that are not conversation agents', () => {
    expect(settings({ mode: 'keypad', csat_survey: { enabled: true } }).csatSurvey).toBeUndefined();
    expect(settings({ csat_survey: { enabled: false } }).csatSurvey).toBeUndefined();
    expect(settings({ csat_survey: { enabled: true } }).csatSurvey).toEqual({ prompt: '', thanks: '', timeoutSeconds: 5 });
  });
});
