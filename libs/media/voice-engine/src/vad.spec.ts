import { EnergyVad } from './vad';

const tone = (amplitude: number) => Int16Array.from({ length: 160 }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * 300 * i) / 8000)));
const noise = (amplitude: number) => Int16Array.from({ length: 160 }, () => Math.round(amplitude * (Math.random() * 2 - 1)));

function run(vad: EnergyVad, frames: Int16Array[]) {
  return frames.map((f) => vad.push(f, 20)).filter(Boolean);
}

describe('energy VAD', () => {
  it('declares speech after its start time and its end after the hangover', () => {
    const vad = new EnergyVad();
    expect(run(vad, Array(10).fill(tone(0)))).toEqual([]);
    expect(run(vad, Array(10).fill(tone(6000)))).toEqual(['speech_start']);
    expect(run(vad, Array(30).fill(tone(0)))).toEqual(['speech_end']);
  });

  it('never takes steady line noise for speech, even loud noise, yet hears speech over it', () => {
    const vad = new EnergyVad();
    const hiss = Array.from({ length: 250 }, () => noise(1500));
    expect(run(vad, hiss)).toEqual([]);
    const speech = Array.from({ length: 25 }, (_, i) => (i % 5 === 4 ? noise(1500) : tone(12000)));
    expect(run(vad, speech)).toContain('speech_start');
  });

  it('hears a caller who starts talking at once, from the first syllables', () => {
    const vad = new EnergyVad();
    const syllables = Array.from({ length: 8 }, (_, i) => (i % 4 === 0 ? tone(200) : tone(5000)));
    expect(run(vad, syllables)).toEqual(['speech_start']);
  });
});
