import { mulawToPcm16 } from '@parley/audio';
import { mespeakWav } from '../local-tts';
import { callerSpeechMulaw, callerSpeechPcm16, silenceMulaw } from './caller-speech';

const SENTENCE = 'Hi, I would like to book a table for two tonight.';

describe('callerSpeechMulaw', () => {
  it('speaks the text as 8 kHz μ-law as long as the synthesized speech', () => {
    const mulaw = callerSpeechMulaw(SENTENCE);
    const spoken = mespeakWav(SENTENCE);

    const seconds = mulaw.length / 8000;
    expect(seconds).toBeCloseTo(spoken.samples.length / spoken.sampleRate, 2);
    expect(seconds).toBeGreaterThan(2);
    expect(seconds).toBeLessThan(6);
    expect(rms(mulawToPcm16(mulaw))).toBeGreaterThan(500);
  });

  it('speaks with the voice asked for', () => {
    const male = callerSpeechMulaw('Good evening.');
    const female = callerSpeechMulaw('Good evening.', { voice: 'en/en-us+f3' });
    const french = callerSpeechMulaw('Bonsoir.', { voice: 'fr-FR' });

    expect(female.equals(male)).toBe(false);
    expect(rms(mulawToPcm16(female))).toBeGreaterThan(500);
    expect(rms(mulawToPcm16(french))).toBeGreaterThan(500);
  });

  it('keeps the phone band: little energy left above 3.6 kHz', () => {
    const pcm = mulawToPcm16(callerSpeechMulaw(SENTENCE));
    // A first difference boosts high frequencies: with the band limited it stays well below the signal itself.
    const diff = new Int16Array(pcm.length - 1);
    for (let i = 1; i < pcm.length; i++) diff[i - 1] = Math.max(-32768, Math.min(32767, pcm[i] - pcm[i - 1]));

    expect(rms(diff)).toBeLessThan(rms(pcm));
  });
});

describe('callerSpeechPcm16', () => {
  it('speaks the text as PCM16 at the rate asked for, as long as the synthesized speech', () => {
    const wideband = callerSpeechPcm16(SENTENCE, 16000);
    const spoken = mespeakWav(SENTENCE);

    expect(wideband.length / 16000).toBeCloseTo(spoken.samples.length / spoken.sampleRate, 2);
    expect(rms(wideband)).toBeGreaterThan(500);
  });
});

describe('silenceMulaw', () => {
  it('is 8 bytes per millisecond of μ-law silence', () => {
    const silence = silenceMulaw(20);

    expect(silence).toHaveLength(160);
    expect(mulawToPcm16(silence).every((s) => s === 0)).toBe(true);
  });
});

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}
