#!/usr/bin/env node
// MANUAL CHECK, not part of `npm test` and never in CI: the routing corpus of conversation flows
// (libs/media/voice-engine/src/flow/testing/routing-corpus.ts: 60 caller utterances on realistic flows, each with
// the edge and the typed values expected) through a REAL OpenAI-compatible model, with the platform's own provider
// (OpenAiCompatibleLlm) and routing call (modelRouter), as a call's flow routes. Prints the hit rate (edge right;
// edge and captured values right), by kind of hard case, the routing call's latency, and each miss with the
// model's answer.
//
//   LLM_BASE_URL=https://api.openai.com/v1 LLM_API_KEY=sk-… ROUTING_MODEL=gpt-4o-mini npm run check:routing
//   LLM_BASE_URL=http://127.0.0.1:11434/v1 ROUTING_MODEL=qwen2.5:7b npm run check:routing     # Ollama, no key
//
// The variables are the deployment's own (README, Configuration): LLM_BASE_URL and LLM_API_KEY; the model is
// ROUTING_MODEL (what an agent's flow.routing.model would name), else LLM_MODEL, else gpt-4o-mini. Optional:
// ROUTING_CONCURRENCY (default 4 calls at a time), ROUTING_MIN_HIT_RATE (0-1: exit 1 when the edge hit rate is
// below). Without LLM_BASE_URL or LLM_API_KEY it says what to set and exits 0.
//
// The TypeScript sources run through the project's own Jest transform (no build needed): the check is the file
// routing-corpus.live.ts, which no test tier matches.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const root = join(import.meta.dirname, '..');

if (!process.env.LLM_BASE_URL && !process.env.LLM_API_KEY) {
  console.log(`check:routing needs a real OpenAI-compatible model; nothing was run. Set:
  LLM_BASE_URL     the model's API, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (Ollama)
  LLM_API_KEY      its key (leave unset for a server that needs none)
  ROUTING_MODEL    the model to route with (default: LLM_MODEL, else gpt-4o-mini)
e.g. LLM_API_KEY=sk-… ROUTING_MODEL=gpt-4o-mini npm run check:routing`);
  process.exit(0);
}

const project = require(join(root, 'libs/media/voice-engine/jest.config.cjs'));
const config = { ...project, displayName: 'routing-check', testMatch: ['<rootDir>/src/flow/testing/routing-corpus.live.ts'] };
const env = { ...process.env };
delete env.TEST_TIER;
const jest = spawn(process.execPath, [require.resolve('jest/bin/jest'), '--config', JSON.stringify(config), '--runInBand'], { cwd: root, env, stdio: 'inherit' });
jest.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
