import { InferenceSession, Tensor } from 'onnxruntime-node';
import { engineMetrics } from './metrics';
import { EnergyVad, HysteresisOptions, SpeechHysteresis, Vad, VadEvent, VadFactory } from './vad';

/** Where the VAD reports what it cannot do (the worker's logger). */
export interface VadLog {
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** What the model needs of an ONNX session (InferenceSession; a double in tests). */
export interface SileroSession {
  run(feeds: Record<string, Tensor>): Promise<Record<string, Tensor>>;
}

/** Silero v5's window (new samples) and context (the previous window's tail, prepended) per sample rate. */
const WINDOWS: Record<number, { samples: number; context: number }> = {
  8000: { samples: 256, context: 32 },
  16000: { samples: 512, context: 64 },
};
const STATE_SIZE = 2 * 128;

/** The model file, inside @ricky0123/vad-web (ISC; the Silero VAD v5 model itself is MIT). */
export function sileroModelPath(): string {
  return require.resolve('@ricky0123/vad-web/dist/silero_vad_v5.onnx');
}

/** An ONNX session of the model (default: the packaged file). */
export function openSileroSession(path = sileroModelPath()): Promise<InferenceSession> {
  // One thread, the caller's: the media worker's cores belong to the calls, and a window is too small to split.
  return InferenceSession.create(path, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' });
}

/**
 * When a batch runs: once `batchSize` windows wait (cut after the current round of I/O), or once the first of them
 * has waited `maxWaitMs`.
 */
export interface SileroCadence {
  batchSize?: number;
  maxWaitMs?: number;
  /**
   * A window whose RMS (PCM16 units) is under this is taken for no speech without running the model (default
   * QUIET_RMS; 0 runs every window).
   */
  quietRms?: number;
}

/**
 * While the caller is not speaking, a window quieter than this (RMS in PCM16 units, about -50 dBFS) is taken for no
 * speech without running the model. A call is quiet most of its time (the caller listens while the agent speaks), and
 * a quiet line's idle noise sits far under speech: a normal voice on a phone line is about -20 dBFS, and the energy
 * detector already takes anything under RMS 300 (-40 dBFS) for no speech. Once the caller speaks every window runs,
 * so a turn's end is Silero's own. The spec checks that turns are heard on the same windows (±2) as when every
 * window runs, for voices down to -30 dBFS; at -40 dBFS the first word's onset can be heard a few windows later.
 * The call's recurrent state stays as its last run left it.
 */
export const QUIET_RMS = 100;

/**
 * Silero VAD v5 on onnxruntime-node: one model per process, shared by every call (each call keeps its own
 * recurrent state and context). The windows of all calls that are ready are run together, one batch per sample
 * rate: a run has a fixed cost (in the worker, with its cache cold, about as much as several windows'), so
 * batching is what keeps the VAD at a small share of a call's CPU when many calls are live. A batch waits for
 * `batchSize` windows or until its first window has waited `maxWaitMs` (10 ms): the stream thread hands frames over
 * once per 5 ms cycle, so a batch gathers two or three hand-overs instead of one. A call reads a window's verdict when it
 * pushes its next frame, 20 ms after the one that completed the window, so a verdict ready within 10 ms (plus the
 * run) is read no later than before. If the model cannot be loaded or run, one error is logged and every call
 * carries on with an energy detector of its own.
 */
export class SileroModel {
  private static instance: SileroModel | undefined;
  private session: SileroSession | undefined;
  private readonly loading: Promise<void>;
  private broken = false;
  private readonly pending = new Set<SileroVad>();
  private readonly batchSize: number;
  private readonly maxWaitMs: number;
  /** Fires when the first window waiting has waited maxWaitMs. */
  private timer: NodeJS.Timeout | undefined;
  /** The windows waiting are to run now, or as soon as the running batch ends. */
  private due = false;
  /** A batch is cut: it starts after the current round of I/O. */
  private starting = false;
  private running: Promise<void> | undefined;
  private readonly rates = new Map<number, Tensor>();
  /** A window whose RMS is under this (PCM16 units) is not run (SileroCadence.quietRms). */
  readonly quietRms: number;

  constructor(
    session: SileroSession | Promise<SileroSession>,
    private readonly log: VadLog,
    { batchSize = 32, maxWaitMs = 10, quietRms = QUIET_RMS }: SileroCadence = {},
  ) {
    this.batchSize = batchSize;
    this.maxWaitMs = maxWaitMs;
    this.quietRms = quietRms;
    this.loading = Promise.resolve(session).then(
      (loaded) => void (this.session = loaded),
      (error: unknown) => this.fail('Silero VAD could not be loaded; calls use the energy VAD', error),
    );
  }

  /** The process's model, loaded on first use. */
  static shared(log: VadLog): SileroModel {
    SileroModel.instance ??= new SileroModel(openSileroSession(), log);
    return SileroModel.instance;
  }

  /** False once loading or a run failed: calls then use the energy VAD. */
  get usable(): boolean {
    return !this.broken;
  }

  /** Resolves once loaded (or found unusable). */
  ready(): Promise<void> {
    return this.loading;
  }

  /** Runs every window handed in so far without waiting for a batch to fill; resolves when they have run. */
  async settled(): Promise<void> {
    await this.loading;
    while (this.pending.size || this.starting || this.running) {
      if (this.pending.size) {
        this.due = true;
        this.start();
      }
      await (this.running ?? new Promise((resolve) => setImmediate(resolve)));
    }
  }

  /** A call's VAD at 8 or 16 kHz. */
  vad(sampleRate: number, options: HysteresisOptions = {}): SileroVad {
    return new SileroVad(this, sampleRate, options);
  }

  /** A call has a window for the model waiting. */
  enqueue(vad: SileroVad): void {
    this.pending.add(vad);
    if (this.due) return;
    if (this.pending.size >= this.batchSize) {
      // Cut after the current round of I/O, so the rest of the stream thread's hand-over joins the batch.
      this.due = true;
      this.starting = true;
      setImmediate(() => {
        this.starting = false;
        this.start();
      });
    } else {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.due = true;
        this.start();
      }, this.maxWaitMs);
    }
  }

  /** Runs the windows waiting, unless a batch is running (it starts them when it ends): a call's next window needs the state its previous one left. */
  private start(): void {
    if (!this.due || this.running) return;
    this.due = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.loading
      .then(() => this.runPending())
      .catch((error: unknown) => this.fail('Silero VAD failed; calls use the energy VAD', error))
      .finally(() => {
        this.running = undefined;
        this.start();
      });
  }

  /** One batch per sample rate with each waiting call's next window; calls with more wait for the next round. */
  private async runPending(): Promise<void> {
    const byRate = new Map<number, SileroVad[]>();
    for (const vad of this.pending) {
      if (!vad.windowReady()) continue;
      const group = byRate.get(vad.sampleRate) ?? [];
      group.push(vad);
      byRate.set(vad.sampleRate, group);
    }
    this.pending.clear();
    for (const [rate, vads] of byRate) await this.runBatch(rate, vads);
  }

  private async runBatch(rate: number, vads: SileroVad[]): Promise<void> {
    const { samples, context } = WINDOWS[rate];
    const width = context + samples;
    const batch = vads.length;
    engineMetrics.vadBatch.observe(batch);
    const input = new Float32Array(batch * width);
    const state = new Float32Array(batch * STATE_SIZE);
    vads.forEach((vad, b) => vad.takeWindow(input.subarray(b * width, (b + 1) * width), state, b, batch));
    const session = this.session;
    let probabilities: Float32Array | undefined;
    let next: Float32Array | undefined;
    if (session && !this.broken) {
      try {
        const out = await session.run({
          input: new Tensor('float32', input, [batch, width]),
          state: new Tensor('float32', state, [2, batch, 128]),
          sr: this.rateTensor(rate),
        });
        probabilities = out['output'].data as Float32Array;
        next = out['stateN'].data as Float32Array;
      } catch (error) {
        this.fail('Silero VAD failed; calls use the energy VAD', error);
      }
    }
    vads.forEach((vad, b) => {
      if (probabilities && next) vad.verdict(probabilities[b], next, b, batch);
      // A call that was behind (a paused main thread's frames, handed over at once) has waited enough already.
      if (!this.broken && vad.needsModel()) {
        this.pending.add(vad);
        this.due = true;
      }
    });
  }

  private rateTensor(rate: number): Tensor {
    let tensor = this.rates.get(rate);
    if (!tensor) this.rates.set(rate, (tensor = new Tensor('int64', BigInt64Array.from([BigInt(rate)]), [])));
    return tensor;
  }

  private fail(message: string, error: unknown): void {
    if (!this.broken) this.log.error(message, { err: error instanceof Error ? error.message : String(error) });
    this.broken = true;
    this.pending.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * One call's Silero VAD: 20 ms frames are buffered into the model's windows (256 samples at 8 kHz, 512 at 16 kHz,
 * each after the previous window's tail), and each window's speech probability goes through the same hysteresis
 * as the energy detector (60 ms to start, 500 ms hangover), so the turn detector sees the same events. A window is
 * voiced at 0.5 and, once the caller speaks, stays voiced down to 0.35 (Silero's own thresholds).
 */
export class SileroVad implements Vad {
  private buffer: Float32Array;
  /** Samples in the buffer: the context, then new samples. */
  private filled: number;
  private readonly state = new Float32Array(STATE_SIZE);
  private readonly hysteresis: SpeechHysteresis;
  private readonly events: Exclude<VadEvent, undefined>[] = [];
  private reported = false;
  private readonly windowMs: number;
  private readonly window: { samples: number; context: number };
  private readonly quietSumOfSquares: number;
  private energy: EnergyVad | undefined;
  /** A window of this call is with the model (waiting or running): the windows behind it wait their turn. */
  private queued = false;

  constructor(
    private readonly model: SileroModel,
    readonly sampleRate: number,
    private readonly options: HysteresisOptions = {},
  ) {
    const window = WINDOWS[sampleRate];
    if (!window) throw new Error(`Silero VAD takes 8000 or 16000 Hz audio, not ${sampleRate}`);
    this.window = window;
    this.windowMs = (window.samples * 1000) / sampleRate;
    this.buffer = new Float32Array(window.context + window.samples * 2);
    this.filled = window.context;
    this.hysteresis = new SpeechHysteresis(options);
    this.quietSumOfSquares = (model.quietRms / 32768) ** 2 * window.samples;
  }

  get speaking(): boolean {
    return this.energy ? this.energy.speaking : this.reported;
  }

  push(frame: Int16Array, ms: number): VadEvent {
    if (!this.model.usable) return this.pushEnergy(frame, ms);
    if (this.filled + frame.length > this.buffer.length) {
      const grown = new Float32Array(Math.max(this.buffer.length * 2, this.filled + frame.length));
      grown.set(this.buffer.subarray(0, this.filled));
      this.buffer = grown;
    }
    for (let i = 0; i < frame.length; i++) this.buffer[this.filled + i] = frame[i] / 32768;
    this.filled += frame.length;
    if (!this.queued && this.needsModel()) this.model.enqueue(this);
    const event = this.events.shift();
    if (event) this.reported = event === 'speech_start';
    return event;
  }

  /** Whether a whole window of new samples is waiting. */
  windowReady(): boolean {
    return this.filled >= this.window.context + this.window.samples;
  }

  /**
   * Takes the quiet windows at the front for no speech, in order; true (and the call marked as queued) when the next
   * window needs the model.
   */
  needsModel(): boolean {
    this.queued = false;
    const { context, samples } = this.window;
    while (this.windowReady()) {
      // While the caller speaks every window runs: no need to weigh it.
      if (this.hysteresis.speaking) return (this.queued = true);
      let sum = 0;
      for (let i = context; i < context + samples; i++) sum += this.buffer[i] * this.buffer[i];
      if (sum >= this.quietSumOfSquares) return (this.queued = true);
      this.shift();
      this.hear(false);
    }
    return false;
  }

  /** Copies the next window (context included) into `row` and this call's state into slot `b` of a batch's state. */
  takeWindow(row: Float32Array, batchState: Float32Array, b: number, batch: number): void {
    row.set(this.buffer.subarray(0, row.length));
    this.shift();
    for (let layer = 0; layer < 2; layer++) batchState.set(this.state.subarray(layer * 128, (layer + 1) * 128), (layer * batch + b) * 128);
  }

  /** The model's verdict on this call's window in slot `b`, and the state it carries on with. */
  verdict(probability: number, batchState: Float32Array, b: number, batch: number): void {
    for (let layer = 0; layer < 2; layer++) this.state.set(batchState.subarray((layer * batch + b) * 128, (layer * batch + b + 1) * 128), layer * 128);
    this.hear(probability >= (this.hysteresis.speaking ? 0.35 : 0.5));
  }

  /** Drops the front window's new samples; their tail becomes the next window's context. */
  private shift(): void {
    this.buffer.copyWithin(0, this.window.samples, this.filled);
    this.filled -= this.window.samples;
  }

  private hear(voiced: boolean): void {
    const event = this.hysteresis.update(voiced, this.windowMs);
    if (event) this.events.push(event);
  }

  /** The model is unusable: an energy detector takes over, and a caller heard speaking is first heard to stop. */
  private pushEnergy(frame: Int16Array, ms: number): VadEvent {
    if (!this.energy) {
      this.energy = new EnergyVad(this.options);
      if (this.reported) {
        this.energy.push(frame, ms);
        return 'speech_end';
      }
    }
    return this.energy.push(frame, ms);
  }
}

export type VadKind = 'silero' | 'energy';

/**
 * The worker's VAD for each call: Silero (its model loaded now, once per process) for 8 and 16 kHz audio, the
 * energy detector for other rates (logged once per rate) or when VAD=energy.
 */
export function vadFactory(kind: VadKind, log: VadLog, model?: SileroModel): VadFactory {
  if (kind === 'energy') return () => new EnergyVad();
  const silero = model ?? SileroModel.shared(log);
  const warned = new Set<number>();
  return (sampleRate) => {
    if (WINDOWS[sampleRate]) return silero.vad(sampleRate);
    if (!warned.has(sampleRate)) log.warn('Silero VAD takes 8 or 16 kHz audio; calls at this rate use the energy VAD', { sampleRate });
    warned.add(sampleRate);
    return new EnergyVad();
  };
}
