import { Clock } from './clock';

type Seconds = number | undefined | (() => number | undefined);

export interface SilenceMonitorOptions {
  clock: Clock;
  /** silence_prompt_seconds; undefined = never. A function is read at each arming (a flow node's own timer). */
  promptSeconds: Seconds;
  /** silence_hangup_seconds; undefined = never. */
  hangupSeconds: Seconds;
  /** Ask the caller whether they are still there. */
  onPrompt(): void;
  /** Say goodbye and end the call (`silence`). */
  onHangup(): void;
}

/**
 * The quiet caller: once armed, the silence prompt and the hang-up are both due at their times counted from the
 * arming (the end of the agent's turn, or of the caller's last words); speech or a new turn disarms them.
 */
export class SilenceMonitor {
  private timers: unknown[] = [];

  constructor(private readonly options: SilenceMonitorOptions) {}

  arm(): void {
    this.disarm();
    const { clock } = this.options;
    const read = (s: Seconds) => (typeof s === 'function' ? s() : s);
    const promptSeconds = read(this.options.promptSeconds);
    const hangupSeconds = read(this.options.hangupSeconds);
    if (promptSeconds !== undefined) this.timers.push(clock.setTimeout(() => this.options.onPrompt(), promptSeconds * 1000));
    if (hangupSeconds !== undefined) this.timers.push(clock.setTimeout(() => this.options.onHangup(), hangupSeconds * 1000));
  }

  disarm(): void {
    for (const t of this.timers) this.options.clock.clearTimeout(t);
    this.timers = [];
  }
}
