/**
 * @jest-environment ../../../tools/jest/native-arrays-environment.js
 */
import { mulawToPcm16 } from '@parley/audio';
import { callerSpeechMulaw, callerSpeechPcm16 } from '@parley/speech';
import { Tensor } from 'onnxruntime-node';
import { engineMetrics } from './metrics';
import { openSileroSession, QUIET_RMS, SileroModel, SileroSession, vadFactory, VadLog } from './silero-vad';
import { EnergyVad, Vad, VadEvent } from './vad';

const QUESTION = 'Hi, I would like to book a table for two tonight.';
const phoneSpeech = mulawToPcm16(callerSpeechMulaw(QUESTION));

const silentLog = (): VadLog & { errors: string[]; warnings: string[] } => {
  const errors: string[] = [];
  const warnings: string[] = [];
  return { errors, warnings, error: (m) => errors.push(m), warn: (m) => warnings.push(m) };
};

/** `ms` of silence, then the speech, then `ms` of silence. */
function utterance(speech: Int16Array, rate: number, ms = 1000): Int16Array {
  const gap = (ms * rate) / 1000;
  const pcm = new Int16Array(gap * 2 + speech.length);
  pcm.set(speech, gap);
  return pcm;
}

/** Bursts of loud white noise, 200 ms on and 200 ms off: it rises and falls as speech does, but is no voice. */
function noiseBursts(seconds: number, rate: number): Int16Array {
  return Int16Array.from({ length: seconds * rate }, (_, i) => (Math.floor(i / (rate * 0.2)) % 2 ? 0 : Math.round(6000 * (Math.random() * 2 - 1))));
}

/** Line noise of the given RMS, the same on every run (a seeded generator). */
function lineNoise(samples: number, rms: number, seed = 1): Int16Array {
  let x = seed;
  const next = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
  return Int16Array.from({ length: samples }, () => Math.round(rms * Math.sqrt(3) * next()));
}

/** A caller's four answers at `gain`, each followed by 1.5 s of quiet, over line noise of `noiseRms` throughout. */
function conversation(rate: number, gain: number, noiseRms: number): Int16Array {
  const answers = ['Hi, I would like to book a table for two tonight.', 'Yes.', 'Can you tell me when you close on Sundays?', 'No, that is all.'];
  const speech = answers.map((a) => (rate === 8000 ? mulawToPcm16(callerSpeechMulaw(a)) : callerSpeechPcm16(a, rate)));
  const gap = rate * 1.5;
  const pcm = new Int16Array(gap + speech.reduce((n, s) => n + s.length + gap, 0));
  const noise = lineNoise(pcm.length, noiseRms);
  let at = gap;
  for (const s of speech) {
    for (let i = 0; i < s.length; i++) pcm[at + i] = Math.round(s[i] * gain);
    at += s.length + gap;
  }
  return pcm.map((v, i) => Math.max(-32768, Math.min(32767, v + noise[i])));
}

function frames(pcm: Int16Array, rate: number): Int16Array[] {
  const size = rate / 50;
  return Array.from({ length: Math.floor(pcm.length / size) }, (_, i) => pcm.subarray(i * size, (i + 1) * size));
}

/** Feeds 20 ms frames as a call does, each after the model has run what came before; the events with their time. */
async function listen(vad: Vad, model: SileroModel | undefined, pcm: Int16Array, rate: number): Promise<{ event: VadEvent; ms: number }[]> {
  const heard: { event: VadEvent; ms: number }[] = [];
  for (const [i, frame] of frames(pcm, rate).entries()) {
    const event = vad.push(frame, 20);
    if (event) heard.push({ event, ms: (i + 1) * 20 });
    await model?.settled();
  }
  return heard;
}

describe('Silero VAD', () => {
  let model: SileroModel;
  const log = silentLog();
  /** The batch size of every run. */
  const batches: number[] = [];
  const speechEndsAt = (rate: number, speech: Int16Array) => 1000 + (speech.length * 1000) / rate;

  beforeAll(async () => {
    const session = await openSileroSession();
    const counting: SileroSession = {
      run: (feeds) => {
        batches.push(feeds['input'].dims[0]);
        return session.run(feeds);
      },
    };
    model = new SileroModel(counting, log);
  });

  it('hears a caller on a phone line (8 kHz μ-law) start and stop speaking, and nothing in the silence around', async () => {
    const heard = await listen(model.vad(8000), model, utterance(phoneSpeech, 8000), 8000);

    expect(heard.map((h) => h.event)).toEqual(['speech_start', 'speech_end']);
    // The speech starts 1 s in; its end is declared after the 500 ms hangover (plus a window and a frame).
    expect(heard[0].ms).toBeGreaterThanOrEqual(1000);
    expect(heard[0].ms).toBeLessThan(1300);
    expect(heard[1].ms).toBeGreaterThan(speechEndsAt(8000, phoneSpeech));
    expect(heard[1].ms).toBeLessThan(speechEndsAt(8000, phoneSpeech) + 700);
    expect(log.errors).toEqual([]);
  });

  it('hears a browser caller in wideband (16 kHz) the same way', async () => {
    const wideband = callerSpeechPcm16(QUESTION, 16000);
    const heard = await listen(model.vad(16000), model, utterance(wideband, 16000), 16000);

    expect(heard.map((h) => h.event)).toEqual(['speech_start', 'speech_end']);
    expect(heard[0].ms).toBeLessThan(1300);
    expect(heard[1].ms).toBeGreaterThan(speechEndsAt(16000, wideband));
  });

  it('takes loud bursts of noise for no speech, where the energy detector hears speech', async () => {
    const bursts = noiseBursts(3, 8000);

    expect(await listen(model.vad(8000), model, bursts, 8000)).toEqual([]);
    expect((await listen(new EnergyVad(), undefined, bursts, 8000)).map((h) => h.event)).toContain('speech_start');
  });

  it('keeps each call its own state: calls heard together hear what each hears alone', async () => {
    const alone = await listen(model.vad(8000), model, utterance(phoneSpeech, 8000), 8000);
    const speaking = model.vad(8000);
    const quiet = model.vad(8000);
    const wideband = model.vad(16000);
    // Not silence, which is not run: noise, which Silero takes for no speech.
    const silence = frames(noiseBursts(Math.ceil(phoneSpeech.length / 8000) + 2, 8000), 8000);
    const widebandFrames = frames(utterance(callerSpeechPcm16(QUESTION, 16000), 16000), 16000);
    batches.length = 0;
    const together: { event: VadEvent; ms: number }[] = [];
    const quietHeard: VadEvent[] = [];
    const widebandHeard: VadEvent[] = [];
    // One batch per frame time, as the stream thread hands frames over: these three calls' windows run together.
    for (const [i, frame] of frames(utterance(phoneSpeech, 8000), 8000).entries()) {
      const event = speaking.push(frame, 20);
      if (event) together.push({ event, ms: (i + 1) * 20 });
      quietHeard.push(quiet.push(silence[i], 20));
      widebandHeard.push(wideband.push(widebandFrames[i] ?? new Int16Array(320), 20));
      await model.settled();
    }

    // The two phone calls' windows went into one run, the wideband call's into one of its own.
    expect(batches).toContain(2);
    expect(together).toEqual(alone);
    expect(quietHeard.filter(Boolean)).toEqual([]);
    expect(widebandHeard.filter(Boolean)[0]).toBe('speech_start');
  });

  it('keeps up with frames that arrive faster than the model runs, in order', async () => {
    const vad = model.vad(8000);
    const events: VadEvent[] = [];
    // A second of audio handed over at once (a paused main thread catching up), then the rest frame by frame.
    const all = frames(utterance(phoneSpeech, 8000), 8000);
    for (const frame of all.slice(0, 50)) events.push(vad.push(frame, 20));
    for (const frame of all.slice(50)) {
      events.push(vad.push(frame, 20));
      await model.settled();
    }

    expect(events.filter(Boolean)).toEqual(['speech_start', 'speech_end']);
  });

  it('runs no window of a quiet line while the caller is silent, and every window from their speech to its end', async () => {
    const vad = model.vad(8000);
    const windowsRun = () => batches.reduce((sum, b) => sum + b, 0);
    batches.length = 0;
    const silence = new Int16Array(8000);

    expect(await listen(vad, model, silence, 8000)).toEqual([]);
    expect(windowsRun()).toBe(0);

    const heard = await listen(vad, model, utterance(phoneSpeech, 8000, 0).slice(), 8000);
    const atEnd = windowsRun();
    expect(heard.map((h) => h.event)).toEqual(['speech_start']);
    // The speech's windows and nothing like the whole second of silence before it.
    expect(atEnd).toBeGreaterThanOrEqual(Math.floor(phoneSpeech.length / 256) - 10);
    expect(atEnd).toBeLessThan(Math.ceil(phoneSpeech.length / 256) + 2);

    // The rest of the hangover's quiet windows are run (the caller is still speaking), then none after its end.
    const after = await listen(vad, model, new Int16Array(8000), 8000);
    expect(after.map((h) => h.event)).toEqual(['speech_end']);
    expect(windowsRun() - atEnd).toBeLessThanOrEqual(Math.ceil(500 / 32));
    const atSpeechEnd = windowsRun();
    expect(await listen(vad, model, new Int16Array(8000), 8000)).toEqual([]);
    expect(windowsRun()).toBe(atSpeechEnd);
  });

  // The test voice speaks at about -20 dBFS (a normal level on a phone line); gain 0.3 is -30 dBFS, 0.1 is -40 dBFS.
  it.each([
    [8000, 1, 70, 64],
    [8000, 0.3, 70, 64],
    [16000, 1, 30, 64],
    // A talker 20 dB under normal: the first word's onset can sit under the floor for a few windows.
    [8000, 0.1, 70, 250],
  ])(
    'hears the same turns at %i Hz (speech at gain %f, line noise RMS %i) as when every window is run, each within %i ms',
    async (rate, gain, noiseRms, within) => {
      const everyWindow = new SileroModel(openSileroSession(), log, { quietRms: 0 });
      const pcm = conversation(rate, gain, noiseRms);

      const skipping = await listen(model.vad(rate), model, pcm, rate);
      const running = await listen(everyWindow.vad(rate), everyWindow, pcm, rate);

      expect(skipping.map((h) => h.event)).toEqual(running.map((h) => h.event));
      expect(skipping.map((h) => h.event)).toHaveLength(8);
      skipping.forEach((h, i) => expect(Math.abs(h.ms - running[i].ms)).toBeLessThanOrEqual(within));
    },
  );

  it('hears nothing of speech quieter than the floor (a whisper 46 dB under a normal voice), as the energy detector', async () => {
    expect(QUIET_RMS).toBeLessThan(300);
    const whisper = Int16Array.from(phoneSpeech, (v) => Math.round(v / 200));

    expect(await listen(model.vad(8000), model, utterance(whisper, 8000), 8000)).toEqual([]);
    expect(await listen(new EnergyVad(), undefined, utterance(whisper, 8000), 8000)).toEqual([]);
  });
});

describe('Silero VAD batching cadence', () => {
  /** A model double: every window gets probability `p`; each run's batch size and (fake) time are recorded. */
  function fakeModel(p = 0.9, cadence?: { batchSize?: number; maxWaitMs?: number }) {
    const runs: { at: number; batch: number }[] = [];
    const session: SileroSession = {
      run: async (feeds) => {
        const batch = feeds['input'].dims[0];
        runs.push({ at: Date.now(), batch });
        return {
          output: new Tensor('float32', new Float32Array(batch).fill(p), [batch, 1]),
          stateN: new Tensor('float32', new Float32Array(feeds['state'].data as Float32Array), feeds['state'].dims),
        };
      },
    };
    return { model: new SileroModel(session, silentLog(), cadence), runs };
  }
  /** Exactly one window of new samples at 8 kHz (256 samples, 32 ms), loud enough to be run (QUIET_RMS). */
  const window = () => new Int16Array(256).fill(2000);
  const frame = () => new Int16Array(160).fill(2000);

  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'], now: 0 }));
  afterEach(() => jest.useRealTimers());
  /** Lets `ms` of fake time pass, then the round of I/O at that time (a batch cut at its end runs too). */
  const elapse = async (ms: number) => {
    await jest.advanceTimersByTimeAsync(ms);
    await jest.advanceTimersByTimeAsync(0);
  };

  it('runs the windows that calls complete within 10 ms of the first together, 10 ms after the first', async () => {
    const { model, runs } = fakeModel();
    await model.ready();
    const calls = [model.vad(8000), model.vad(8000), model.vad(8000), model.vad(8000)];

    // Three hand-overs of the stream thread, 4 ms apart, each completing a call's window; the fourth comes too late.
    calls[0].push(window(), 32);
    await elapse(4);
    calls[1].push(window(), 32);
    await elapse(4);
    calls[2].push(window(), 32);
    await elapse(1);
    expect(runs).toEqual([]);
    await elapse(1);
    expect(runs).toEqual([{ at: 10, batch: 3 }]);

    calls[3].push(window(), 32);
    await elapse(10);
    expect(runs).toEqual([{ at: 10, batch: 3 }, { at: 20, batch: 1 }]);
  });

  it('reports the windows of each run in parley_engine_vad_batch_windows', async () => {
    const { model } = fakeModel();
    await model.ready();
    const count = async (le: number) => (await engineMetrics.vadBatch.get()).values.find((v) => v.metricName?.endsWith('_bucket') && v.labels['le'] === le)?.value ?? 0;
    const [upTo2, upTo4] = [await count(2), await count(4)];

    for (let i = 0; i < 3; i++) model.vad(8000).push(window(), 32);
    await elapse(10);

    // One run of 3 windows: in the buckets from 4 up, not in 2's.
    expect(await count(2)).toBe(upTo2);
    expect(await count(4)).toBe(upTo4 + 1);
  });

  it('runs a batch as soon as 32 windows wait, without waiting for the first to be 10 ms old', async () => {
    const { model, runs } = fakeModel();
    await model.ready();
    const calls = Array.from({ length: 40 }, () => model.vad(8000));

    for (const vad of calls.slice(0, 31)) vad.push(window(), 32);
    await elapse(2);
    expect(runs).toEqual([]);
    // The 32nd window cuts the batch after this round of I/O; the rest of the round joins it.
    for (const vad of calls.slice(31)) vad.push(window(), 32);
    await elapse(0);
    expect(runs).toEqual([{ at: 2, batch: 40 }]);
  });

  it('runs at once the windows a call fell behind by, one batch after another', async () => {
    const { model, runs } = fakeModel();
    await model.ready();
    const vad = model.vad(8000);

    // A paused main thread's frames, handed over at once: three windows of one call.
    for (let i = 0; i < 3; i++) vad.push(window(), 32);
    await elapse(10);

    // A call's next window needs the state its previous one left, so each is a run of its own, none waiting 10 ms.
    expect(runs).toEqual([
      { at: 10, batch: 1 },
      { at: 10, batch: 1 },
      { at: 10, batch: 1 },
    ]);
  });

  it('tells a call the caller started speaking on the same frame as a run after every frame would', async () => {
    /** Frames every 20 ms; the frame (1-based) whose push returned speech_start. */
    async function startHeardAt(cadence?: { batchSize: number; maxWaitMs: number }): Promise<number> {
      const { model } = fakeModel(0.9, cadence);
      await model.ready();
      const vad = model.vad(8000);
      for (let i = 1; i <= 20; i++) {
        if (vad.push(frame(), 20) === 'speech_start') return i;
        await elapse(20);
      }
      return -1;
    }

    const batched = await startHeardAt();
    // Every window run after the round of I/O that completed it (the cadence before batches waited).
    const immediate = await startHeardAt({ batchSize: 1, maxWaitMs: 0 });

    // Two voiced windows (64 ms) start speech: the 4th frame completes the second, the 5th reads its verdict.
    expect(immediate).toBe(5);
    expect(batched).toBe(immediate);
  });

  it('keeps a call\'s quiet windows behind the window it has with the model, and runs them while the caller speaks', async () => {
    const runs: number[] = [];
    // Hears a window as speech when its new samples (after the 32 of context) have any sound.
    const session: SileroSession = {
      run: async (feeds) => {
        const input = feeds['input'].data as Float32Array;
        const batch = feeds['input'].dims[0];
        const width = input.length / batch;
        runs.push(batch);
        const p = Float32Array.from({ length: batch }, (_, b) => (input.subarray(b * width + 32, (b + 1) * width).some((v) => v !== 0) ? 0.9 : 0.1));
        return { output: new Tensor('float32', p, [batch, 1]), stateN: new Tensor('float32', new Float32Array(feeds['state'].data as Float32Array), feeds['state'].dims) };
      },
    };
    const model = new SileroModel(session, silentLog());
    await model.ready();
    const vad = model.vad(8000);
    const events: VadEvent[] = [];

    // Handed over at once (a paused main thread): three windows of speech, then 20 quiet ones (640 ms).
    for (let i = 0; i < 3; i++) events.push(vad.push(window(), 32));
    for (let i = 0; i < 20; i++) events.push(vad.push(new Int16Array(256), 32));
    await elapse(10);
    // A call reads one event per frame.
    for (let i = 0; i < 2; i++) events.push(vad.push(new Int16Array(256), 32));

    expect(events.filter(Boolean)).toEqual(['speech_start', 'speech_end']);
    // The speech's 3 windows and the hangover's 16 (500 ms of quiet while speaking) ran; the rest were skipped.
    expect(runs.reduce((sum, b) => sum + b, 0)).toBe(3 + 16);
  });

  it('settles at once: waiting windows are run without waiting for their batch', async () => {
    jest.useRealTimers();
    const { model, runs } = fakeModel();
    await model.ready();
    model.vad(8000).push(window(), 32);
    const since = Date.now();

    await model.settled();

    expect(runs.map((r) => r.batch)).toEqual([1]);
    expect(runs[0].at - since).toBeLessThan(10);
  });
});

describe('Silero VAD fallback', () => {
  const tone = (amplitude: number) => Int16Array.from({ length: 160 }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / 8000)));
  const run = (vad: Vad, list: Int16Array[]) => list.map((f) => vad.push(f, 20)).filter(Boolean);

  it('uses the energy detector, with one error logged, when the model cannot be loaded', async () => {
    const log = silentLog();
    const model = new SileroModel(Promise.reject(new Error('no such file')), log);
    await model.ready();
    const calls = [model.vad(8000), model.vad(16000)];

    for (const vad of calls) {
      expect(run(vad, Array(10).fill(tone(0)))).toEqual([]);
      expect(run(vad, Array(10).fill(tone(6000)))).toEqual(['speech_start']);
      expect(run(vad, Array(30).fill(tone(0)))).toEqual(['speech_end']);
    }
    expect(model.usable).toBe(false);
    expect(log.errors).toEqual(['Silero VAD could not be loaded; calls use the energy VAD']);
  });

  it('hands a caller heard speaking to the energy detector, ending the speech it can no longer follow, when the model fails mid-call', async () => {
    const log = silentLog();
    const real = await openSileroSession();
    let runs = 0;
    // A second of silence, then the speech: the 40th window is in the middle of it.
    const failing: SileroSession = {
      run: (feeds) => (++runs > 40 ? Promise.reject(new Error('out of memory')) : real.run(feeds)),
    };
    const model = new SileroModel(failing, log);
    const vad = model.vad(8000);
    const heard = (await listen(vad, model, utterance(phoneSpeech, 8000), 8000)).map((h) => h.event);

    // Silero's start, the hand-over's end, then the energy detector's own start and end of the same speech.
    expect(heard).toEqual(['speech_start', 'speech_end', 'speech_start', 'speech_end']);
    expect(vad.speaking).toBe(false);
    expect(log.errors).toEqual(['Silero VAD failed; calls use the energy VAD']);
  });
});

describe('vadFactory', () => {
  it('gives every call an energy detector with VAD=energy, loading no model', () => {
    const vad = vadFactory('energy', silentLog())(8000);

    expect(vad).toBeInstanceOf(EnergyVad);
  });

  it('gives calls at a rate Silero does not take the energy detector, warning once per rate', () => {
    const log = silentLog();
    const model = new SileroModel(Promise.reject(new Error('unused')), log);
    const factory = vadFactory('silero', log, model);

    expect(factory(48000)).toBeInstanceOf(EnergyVad);
    expect(factory(48000)).toBeInstanceOf(EnergyVad);
    expect(factory(8000)).not.toBeInstanceOf(EnergyVad);
    expect(log.warnings).toEqual(['Silero VAD takes 8 or 16 kHz audio; calls at this rate use the energy VAD']);
  });
});
