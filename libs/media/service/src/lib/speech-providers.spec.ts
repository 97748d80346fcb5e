/**
 * @jest-environment ../../../tools/jest/native-arrays-environment.js
 */
import 'reflect-metadata';
import { loadConfig, ServiceConfig } from '@parley/config';
import { EnergyVad, SileroVad } from '@parley/voice-engine';
import { speechProviders } from './speech-providers';

// Providers that need nothing started or warned about: the VAD is what is under test.
const QUIET = { STT_PROVIDERS: 'openai', TTS_PROVIDERS: 'openai', LLM_API_KEY: 'unused' };

describe('speechProviders', () => {
  it('gives every call a Silero VAD by default, at the phone rate and at the browser rate', () => {
    const { vad } = speechProviders(loadConfig(ServiceConfig, QUIET));

    expect(vad?.(8000)).toBeInstanceOf(SileroVad);
    expect(vad?.(16000)).toBeInstanceOf(SileroVad);
  });

  it('gives every call the energy detector with VAD=energy', () => {
    const { vad } = speechProviders(loadConfig(ServiceConfig, { ...QUIET, VAD: 'energy' }));

    expect(vad?.(8000)).toBeInstanceOf(EnergyVad);
  });
});
