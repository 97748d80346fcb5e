import { pcm16ToMulaw, Resampler } from '@parley/audio';
import { mespeakWav } from '../local-tts';

const PHONE_RATE = 8000;
// Below the Nyquist limit (half the rate), with room for the filter's roll-off: 3.6 kHz at the phone rate
// (telephony keeps 300-3400 Hz).
const CUTOFF_OF_RATE = 0.45;

/**
 * Real synthetic speech as a caller's phone sends it, for scenario tests: mespeak speaks `text` (voice: a mespeak
 * voice such as `en/en-us+f3`, or a BCP 47 language; default `en/en-us`), low-passed and resampled to 8 kHz, then
 * G.711 μ-law: the bytes a Twilio-protocol test client streams into a call (160 per 20 ms).
 */
export function callerSpeechMulaw(text: string, options: { voice?: string } = {}): Buffer {
  return pcm16ToMulaw(callerSpeechPcm16(text, PHONE_RATE, options));
}

/** The same speech as PCM16 at `sampleRate` (8000 for a phone line, 16000 for a browser's wideband audio). */
export function callerSpeechPcm16(text: string, sampleRate: number, options: { voice?: string } = {}): Int16Array {
  const wav = mespeakWav(text, { voice: options.voice });
  // The Resampler only interpolates: without the low-pass, eSpeak's energy above the new Nyquist limit would fold
  // back as hiss.
  const filtered = lowPass(wav.samples, wav.sampleRate, CUTOFF_OF_RATE * sampleRate);
  return new Resampler(wav.sampleRate, sampleRate).process(filtered);
}

/** `ms` of silence as 8 kHz μ-law (0xFF, the code for 0). */
export function silenceMulaw(ms: number): Buffer {
  return pcm16ToMulaw(new Int16Array(Math.round((ms * PHONE_RATE) / 1000)));
}

/** A 63-tap Hamming-windowed sinc low-pass with unity gain at DC. */
function lowPass(samples: Int16Array, sampleRate: number, cutoffHz: number, taps = 63): Int16Array {
  const fc = cutoffHz / sampleRate;
  const half = (taps - 1) / 2;
  const kernel = new Float64Array(taps);
  let sum = 0;
  for (let i = 0; i < taps; i++) {
    const n = i - half;
    const sinc = n === 0 ? 2 * fc : Math.sin(2 * Math.PI * fc * n) / (Math.PI * n);
    kernel[i] = sinc * (0.54 - 0.46 * Math.cos((2 * Math.PI * i) / (taps - 1)));
    sum += kernel[i];
  }
  for (let i = 0; i < taps; i++) kernel[i] /= sum;
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    let acc = 0;
    for (let k = 0; k < taps; k++) {
      const j = i + k - half;
      if (j >= 0 && j < samples.length) acc += samples[j] * kernel[k];
    }
    out[i] = Math.max(-32768, Math.min(32767, Math.round(acc)));
  }
  return out;
}
