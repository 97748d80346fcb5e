import { Clock } from './clock';

/** The keypad survey's scale: one key, 1 to 5. */
export const CSAT_SURVEY_SCALE = 5;
export const CSAT_SURVEY_PROMPT = 'Before you go: how satisfied were you with this call, from 1 to 5? Press a key.';
export const CSAT_SURVEY_THANKS = 'Thank you for your rating. Goodbye.';
/** How long the survey waits for a key once its prompt was heard, when the agent sets no time. */
export const CSAT_SURVEY_TIMEOUT_SECONDS = 5;

export interface CsatSurveyOptions {
  clock: Clock;
  /** Said to ask for the rating (the agent's, variables filled; else CSAT_SURVEY_PROMPT). */
  prompt: string;
  /** Said once a rating was taken, before the call ends. */
  thanks: string;
  /** The wait for a key after the prompt was heard. */
  timeoutSeconds: number;
  /** Speaks a line (a key stops it); resolves once heard, or interrupted. */
  say(line: string): Promise<{ interrupted: boolean }>;
  /** Stops whatever the agent is saying (a key pressed during the prompt). */
  interrupt(): void;
  /** The caller's key, as a user turn. */
  onKey(digit: string): void;
  /** The rating taken (1..CSAT_SURVEY_SCALE), to record with the call (source `keypad`). */
  record(score: number): void;
  /** The call is over: nothing more happens. */
  ended(): boolean;
}

/**
 * The end-of-call keypad survey (an agent's `csat_survey`): when the agent ends the call, it asks for a rating from
 * 1 to 5, waits `timeoutSeconds` after the prompt for one key in range (a key during the prompt counts and stops
 * it; other keys are ignored), records the rating and thanks the caller. Without a key the call just ends. The
 * engine hangs up once `run` resolves.
 */
export class CsatSurvey {
  private answer: ((digit: string | undefined) => void) | undefined;
  private timer: unknown;
  private running = false;

  constructor(private readonly options: CsatSurveyOptions) {}

  /** Whether the survey is asking (the engine then answers no speech). */
  get active(): boolean {
    return this.running;
  }

  /** Every line the survey may say, for synthesis ahead of time. */
  lines(): string[] {
    return [this.options.prompt, this.options.thanks].filter(Boolean);
  }

  /** Asks for the rating and waits for it; resolves with the score taken (undefined: none) once done speaking. */
  async run(): Promise<number | undefined> {
    if (this.running || this.options.ended()) return undefined;
    this.running = true;
    const key = new Promise<string | undefined>((resolve) => (this.answer = resolve));
    await this.options.say(this.options.prompt);
    // Still waiting (no key during the prompt): the wait starts once the prompt was heard.
    if (this.options.ended()) this.settle(undefined);
    else if (this.answer) this.timer = this.options.clock.setTimeout(() => this.settle(undefined), this.options.timeoutSeconds * 1000);
    const digit = await key;
    if (digit === undefined || this.options.ended()) return undefined;
    const score = Number(digit);
    this.options.record(score);
    await this.options.say(this.options.thanks);
    return score;
  }

  /** A key the caller pressed: a rating when the survey waits for one and it is in range; ignored otherwise. */
  press(digit: string): void {
    if (!this.answer || !/^[0-9]$/.test(digit)) return;
    const score = Number(digit);
    if (score < 1 || score > CSAT_SURVEY_SCALE) return;
    this.options.onKey(digit);
    this.options.interrupt();
    this.settle(digit);
  }

  /** The call ended meanwhile: stop waiting. */
  stop(): void {
    this.settle(undefined);
  }

  private settle(digit: string | undefined): void {
    this.options.clock.clearTimeout(this.timer);
    const answer = this.answer;
    this.answer = undefined;
    answer?.(digit);
  }
}
