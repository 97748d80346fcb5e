import { FakeTwilioServer } from '@parley/carrier-twilio';
import { FakeOpenAiServer } from '@parley/llm';
import { FakeDeepgramServer } from '@parley/speech';
import { ApiClient, RunningPlatform } from '@parley/testing';

/**
 * The running platform (standalone unless `mode` says distributed) with what a phone conversation needs, each on
 * its real protocol: Twilio (FakeTwilioServer places calls and opens their Media Streams), Deepgram and an
 * OpenAI-compatible model; the voice is the offline one. `env` adds to (or overrides) the platform's environment.
 */
export interface PhonePlatform {
  platform: RunningPlatform;
  /** The API with the owner key. */
  api: ApiClient;
  twilio: FakeTwilioServer;
  deepgram: FakeDeepgramServer;
  llm: FakeOpenAiServer;
  stop(): Promise<void>;
}

export async function startPhonePlatform(
  key: string,
  env: Record<string, string> = {},
  mode: 'standalone' | 'distributed' = 'standalone',
): Promise<PhonePlatform> {
  const twilio = new FakeTwilioServer();
  const deepgram = new FakeDeepgramServer({ apiKey: 'dg-key' });
  const llm = new FakeOpenAiServer();
  const platform = await RunningPlatform.start({
    mode,
    bootstrapKeys: [`acme:owner:${key}`],
    env: {
      EGRESS_ALLOWLIST: '127.0.0.1',
      ...(await twilio.platformEnv()),
      DEEPGRAM_API_KEY: 'dg-key',
      DEEPGRAM_BASE_URL: await deepgram.start(),
      LLM_BASE_URL: await llm.start(),
      LLM_API_KEY: 'sk-test',
      ...env,
    },
  });
  return {
    platform,
    api: platform.api(key),
    twilio,
    deepgram,
    llm,
    stop: async () => {
      await platform.stop();
      await twilio.stop();
      await deepgram.stop();
      await llm.stop();
    },
  };
}
