import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, chromium } from 'playwright-core';
import { encodeWav } from '@parley/audio';
import { mespeakWav } from '@parley/speech';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/**
 * The microphone Chromium's fake capture device plays, in a loop: `leadSeconds` of silence (the greeting plays
 * meanwhile), `text` spoken by eSpeak, then 8 s of silence in which the agent answers.
 */
function microphoneWav(text: string, leadSeconds: number): string {
  const speech = mespeakWav(text);
  const rate = speech.sampleRate;
  const lead = Math.round(rate * leadSeconds);
  const samples = new Int16Array(lead + speech.samples.length + rate * 8);
  samples.set(speech.samples, lead);
  const path = join(tmpdir(), `parley-mic-${process.pid}-${Date.now()}.wav`);
  writeFileSync(path, encodeWav(samples, rate));
  return path;
}

/**
 * Debian's Chromium, headless, with a fake microphone saying `text` (after `leadSeconds` of silence, from when the
 * page opens the microphone) and the permission prompt granted.
 */
export function launchChromium(text: string, leadSeconds = 4): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`The browser tests need Chromium at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM_PATH.`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--autoplay-policy=no-user-gesture-required',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${microphoneWav(text, leadSeconds)}`,
    ],
  });
}
