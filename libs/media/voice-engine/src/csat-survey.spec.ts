import { ManualClock } from './clock';
import { CsatSurvey } from './csat-survey';

function rig() {
  const clock = new ManualClock();
  const said: [string, number][] = [];
  const keys: string[] = [];
  const recorded: number[] = [];
  let interrupts = 0;
  let ended = false;
  let stopSaying: (() => void) | undefined;
  const survey = new CsatSurvey({
    clock,
    prompt: 'How satisfied were you, from 1 to 5? Press a key.',
    thanks: 'Thank you. Goodbye.',
    timeoutSeconds: 4,
    // Each line takes two seconds to say; an interrupt stops it at once.
    say: (line) =>
      new Promise<{ interrupted: boolean }>((resolve) => {
        said.push([line, clock.now()]);
        const timer = clock.setTimeout(() => resolve({ interrupted: false }), 2000);
        stopSaying = () => (clock.clearTimeout(timer), resolve({ interrupted: true }));
      }),
    interrupt: () => (interrupts++, stopSaying?.()),
    onKey: (digit) => void keys.push(digit),
    record: (score) => void recorded.push(score),
    ended: () => ended,
  });
  return { clock, survey, said, keys, recorded, interrupts: () => interrupts, end: () => (ended = true) };
}

describe('CsatSurvey (the end-of-call keypad survey)', () => {
  it('asks, takes a key in range after the prompt, records it, thanks and resolves with it', async () => {
    const { clock, survey, said, keys, recorded } = rig();
    const done = survey.run();
    expect(survey.active).toBe(true);
    await clock.advance(3000);
    survey.press('4');
    await clock.advance(2000);
    await expect(done).resolves.toBe(4);
    expect(said).toEqual([
      ['How satisfied were you, from 1 to 5? Press a key.', 0],
      ['Thank you. Goodbye.', 3000],
    ]);
    expect(keys).toEqual(['4']);
    expect(recorded).toEqual([4]);
  });

  it('takes a key pressed during the prompt, stopping it', async () => {
    const { clock, survey, said, recorded, interrupts } = rig();
    const done = survey.run();
    await clock.advance(500);
    survey.press('5');
    await clock.advance(2000);
    await expect(done).resolves.toBe(5);
    expect(interrupts()).toBe(1);
    expect(said.map(([line, at]) => [line, at])).toEqual([
      ['How satisfied were you, from 1 to 5? Press a key.', 0],
      ['Thank you. Goodbye.', 500],
    ]);
    expect(recorded).toEqual([5]);
  });

  it('ignores keys out of range (0, 6-9, * and #) and keeps waiting for one in range', async () => {
    const { clock, survey, keys, recorded } = rig();
    const done = survey.run();
    await clock.advance(2500);
    for (const key of ['0', '6', '9', '*', '#']) survey.press(key);
    expect(keys).toEqual([]);
    survey.press('1');
    await clock.advance(2000);
    await expect(done).resolves.toBe(1);
    expect(recorded).toEqual([1]);
  });

  it('ends without a rating when no key comes within the timeout after the prompt, and says nothing more', async () => {
    const { clock, survey, said, recorded } = rig();
    const done = survey.run();
    // The prompt (2 s) and 4 s of waiting: the wait starts once the prompt was heard.
    await clock.advance(5900);
    let settled = false;
    void done.then(() => (settled = true));
    await clock.advance(0);
    expect(settled).toBe(false);
    await clock.advance(100);
    await expect(done).resolves.toBeUndefined();
    expect(said).toHaveLength(1);
    expect(recorded).toEqual([]);
    survey.press('3');
    expect(recorded).toEqual([]);
  });

  it('takes one rating only: a second key is ignored', async () => {
    const { clock, survey, recorded } = rig();
    const done = survey.run();
    await clock.advance(2100);
    survey.press('2');
    survey.press('5');
    await clock.advance(2000);
    await expect(done).resolves.toBe(2);
    expect(recorded).toEqual([2]);
  });

  it('records nothing when the call ends while it waits (the caller hung up)', async () => {
    const { clock, survey, recorded, end } = rig();
    const done = survey.run();
    await clock.advance(2500);
    end();
    survey.stop();
    await expect(done).resolves.toBeUndefined();
    expect(recorded).toEqual([]);
  });

  it('lists its prompt and thanks for synthesis ahead', () => {
    expect(rig().survey.lines()).toEqual(['How satisfied were you, from 1 to 5? Press a key.', 'Thank you. Goodbye.']);
  });
});
