import { readFileSync } from 'node:fs';
import { ConfigError } from '@parley/config';

/** What a usage line counts (UsageItem.kind in parley.calls.v1). */
export const USAGE_KINDS = ['stt_ms', 'llm_input_tokens', 'llm_output_tokens', 'tts_characters'] as const;
export type UsageKind = (typeof USAGE_KINDS)[number];

/**
 * The operator's unit prices (PRICES_FILE), exact decimals as strings:
 * - `carrier`: per billed minute, by carrier (`twilio`, `dev`, `web`);
 * - `stt`: per minute of audio sent to the recognizer, by provider or `provider/model`;
 * - `llm`: per 1 000 000 tokens, `{input, output}`, by model or `provider/model`;
 * - `tts`: per 1 000 000 characters sent to the synthesizer, by provider or `provider/model`.
 * The most specific key wins (`provider/model`, then the provider or model alone, then `*`); nothing matching: 0.
 */
export interface PriceTable {
  currency: string;
  carrier: Record<string, string>;
  stt: Record<string, string>;
  llm: Record<string, { input: string; output: string }>;
  tts: Record<string, string>;
}

/** Without PRICES_FILE every price is 0 (USD): the platform knows no operator's contracts; usage is still recorded. */
export const ZERO_PRICES: PriceTable = { currency: 'USD', carrier: {}, stt: {}, llm: {}, tts: {} };

/** The unit each kind's price is given for, in the usage's own unit (ms of audio, tokens, characters). */
const UNIT: Record<UsageKind, string> = { stt_ms: '60000', llm_input_tokens: '1000000', llm_output_tokens: '1000000', tts_characters: '1000000' };

/** Up to 10 decimals: every cost (a quantity times a price, rounded to 10 decimals) and every sum of them stays exact. */
const DECIMAL = /^\d{1,12}(\.\d{1,10})?$/;
const CURRENCY = /^[A-Z]{3}$/;

/** A unit price and what it is per (the usage quantity is multiplied by price / per, in PostgreSQL's numeric). */
export interface UnitPrice {
  price: string;
  per: string;
}

/** The price of one usage line: the most specific key of its kind's table. */
export function unitPrice(table: PriceTable, kind: UsageKind, provider: string, model: string): UnitPrice {
  const keys = [`${provider}/${model}`, model, provider, '*'].filter((k) => k && k !== '/');
  const per = UNIT[kind];
  if (kind === 'llm_input_tokens' || kind === 'llm_output_tokens') {
    const side = kind === 'llm_input_tokens' ? 'input' : 'output';
    const found = keys.map((k) => table.llm[k]).find((p) => p !== undefined);
    return { price: found?.[side] ?? '0', per };
  }
  const prices = kind === 'stt_ms' ? table.stt : table.tts;
  return { price: keys.map((k) => prices[k]).find((p) => p !== undefined) ?? '0', per };
}

/** The carrier's price per billed minute (the carrier's name, then `*`; else 0). */
export function carrierPrice(table: PriceTable, carrier: string | null): string {
  return (carrier ? table.carrier[carrier] : undefined) ?? table.carrier['*'] ?? '0';
}

/**
 * Reads PRICES_FILE (JSON, see PriceTable) once at boot; every problem stops start-up together, like the rest of
 * the configuration. Prices may be written as numbers or strings; they are kept as the decimal text given.
 */
export function loadPrices(file: string | undefined): PriceTable {
  if (!file) return ZERO_PRICES;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError([`PRICES_FILE: cannot read ${file} as JSON (${(error as Error).message})`]);
  }
  return parsePrices(parsed);
}

export function parsePrices(parsed: unknown): PriceTable {
  const problems: string[] = [];
  if (!isObject(parsed)) throw new ConfigError(['PRICES_FILE: must hold a JSON object (currency, carrier, stt, llm, tts)']);
  for (const key of Object.keys(parsed)) {
    if (!['currency', 'carrier', 'stt', 'llm', 'tts'].includes(key)) problems.push(`PRICES_FILE.${key}: unknown; expected currency, carrier, stt, llm, tts`);
  }
  const currency = parsed['currency'] ?? 'USD';
  if (typeof currency !== 'string' || !CURRENCY.test(currency)) problems.push('PRICES_FILE.currency: an ISO 4217 code in capitals (USD, EUR)');
  const price = (at: string, value: unknown): string => {
    const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
    if (typeof text !== 'string' || !DECIMAL.test(text)) {
      problems.push(`${at}: a non-negative decimal price (a number or a string such as "0.0085")`);
      return '0';
    }
    return text;
  };
  const flat = (section: string): Record<string, string> => {
    const value = parsed[section] ?? {};
    if (!isObject(value)) {
      problems.push(`PRICES_FILE.${section}: an object of prices by name`);
      return {};
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, price(`PRICES_FILE.${section}.${k}`, v)]));
  };
  const llmSection = parsed['llm'] ?? {};
  const llm: PriceTable['llm'] = {};
  if (!isObject(llmSection)) problems.push('PRICES_FILE.llm: an object of {input, output} prices by model');
  else {
    for (const [model, v] of Object.entries(llmSection)) {
      if (!isObject(v)) {
        problems.push(`PRICES_FILE.llm.${model}: an object {input, output} (per 1 000 000 tokens)`);
        continue;
      }
      for (const k of Object.keys(v)) if (k !== 'input' && k !== 'output') problems.push(`PRICES_FILE.llm.${model}.${k}: unknown; expected input, output`);
      llm[model] = { input: price(`PRICES_FILE.llm.${model}.input`, v['input'] ?? 0), output: price(`PRICES_FILE.llm.${model}.output`, v['output'] ?? 0) };
    }
  }
  const table: PriceTable = { currency: String(currency), carrier: flat('carrier'), stt: flat('stt'), llm, tts: flat('tts') };
  if (problems.length) throw new ConfigError(problems);
  return table;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A numeric's text without trailing zeros (`0.0430000000` → `0.043`, `2.000` → `2`). */
export function decimal(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}
