import { ManualClock } from './clock';
import { SilenceMonitor } from './silence-monitor';

describe('SilenceMonitor', () => {
  const monitor = (promptSeconds: number | undefined, hangupSeconds: number | undefined) => {
    const clock = new ManualClock();
    const events: [string, number][] = [];
    const silence = new SilenceMonitor({
      clock,
      promptSeconds,
      hangupSeconds,
      onPrompt: () => void events.push(['prompt', clock.now()]),
      onHangup: () => void events.push(['hangup', clock.now()]),
    });
    return { clock, events, silence };
  };

  it('prompts and hangs up at their times, both counted from the arming', async () => {
    const { clock, events, silence } = monitor(3, 6);
    await clock.advance(1000);
    silence.arm();
    await clock.advance(10_000);
    expect(events).toEqual([
      ['prompt', 4000],
      ['hangup', 7000],
    ]);
  });

  it('starts counting again when re-armed, and stays quiet once disarmed', async () => {
    const { clock, events, silence } = monitor(3, 6);
    silence.arm();
    await clock.advance(2000);
    silence.arm();
    await clock.advance(2000);
    expect(events).toEqual([]);
    await clock.advance(1000);
    expect(events).toEqual([['prompt', 5000]]);
    silence.disarm();
    await clock.advance(10_000);
    expect(events).toEqual([['prompt', 5000]]);
  });

  it('does neither when neither is configured', async () => {
    const { clock, events, silence } = monitor(undefined, undefined);
    silence.arm();
    await clock.advance(60_000);
    expect(events).toEqual([]);
  });
});
