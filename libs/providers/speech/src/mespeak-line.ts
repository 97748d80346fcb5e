import type { MessagePort } from 'node:worker_threads';

/** One line for mespeak with its options resolved (local-tts.ts): what a mespeak worker is asked to speak. */
export interface MespeakLine {
  text: string;
  voice: string;
  variant?: string;
  /** 80-450. */
  wordsPerMinute: number;
  /** 0-99. */
  pitch: number;
}

/** A mespeak worker's workerData: where mespeak is (resolved by the parent) and the voices to load before ready. */
export interface MespeakWorkerData {
  /** mespeak's main module, its config JSON and its voices directory. */
  main: string;
  config: string;
  voices: string;
  preload: string[];
  /** For a caller that waits synchronously: replies go to `port`, and each one increments `posted[0]` (Atomics). */
  sync?: { port: MessagePort; posted: Int32Array };
}
