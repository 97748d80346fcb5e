import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@parley/config';
import { carrierPrice, decimal, loadPrices, parsePrices, unitPrice, ZERO_PRICES } from './price-table';

describe('the price table (PRICES_FILE)', () => {
  const table = parsePrices({
    currency: 'EUR',
    carrier: { twilio: 0.014, '*': '0.02' },
    stt: { deepgram: '0.0059', 'deepgram/nova-3': '0.0077' },
    llm: { 'gpt-4o-mini': { input: 0.15, output: 0.6 }, 'openai/gpt-4o': { input: '2.5', output: '10' }, '*': { input: '1' } },
    tts: { elevenlabs: '30' },
  });

  it('keeps prices as the decimal text given (numbers too), per kind and its unit', () => {
    expect(table.carrier).toEqual({ twilio: '0.014', '*': '0.02' });
    expect(table.llm['*']).toEqual({ input: '1', output: '0' });
    expect(unitPrice(table, 'stt_ms', 'deepgram', 'nova-2')).toEqual({ price: '0.0059', per: '60000' });
    expect(unitPrice(table, 'tts_characters', 'elevenlabs', 'eleven_flash_v2_5')).toEqual({ price: '30', per: '1000000' });
  });

  it('takes the most specific key: provider/model, then the model or provider alone, then *, else 0', () => {
    expect(unitPrice(table, 'stt_ms', 'deepgram', 'nova-3').price).toBe('0.0077');
    expect(unitPrice(table, 'llm_output_tokens', 'openai', 'gpt-4o').price).toBe('10');
    expect(unitPrice(table, 'llm_input_tokens', 'vllm', 'gpt-4o-mini').price).toBe('0.15');
    expect(unitPrice(table, 'llm_input_tokens', 'vllm', 'llama-3').price).toBe('1');
    expect(unitPrice(table, 'tts_characters', 'openai', 'tts-1').price).toBe('0');
    expect(carrierPrice(table, 'twilio')).toBe('0.014');
    expect(carrierPrice(table, 'web')).toBe('0.02');
    expect(carrierPrice(ZERO_PRICES, 'twilio')).toBe('0');
  });

  it('is all zeros in USD without a file', () => {
    expect(loadPrices(undefined)).toEqual({ currency: 'USD', carrier: {}, stt: {}, llm: {}, tts: {} });
  });

  it('reads a JSON file', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'prices-')), 'prices.json');
    writeFileSync(file, JSON.stringify({ currency: 'USD', carrier: { twilio: '0.0085' } }));
    expect(loadPrices(file)).toMatchObject({ currency: 'USD', carrier: { twilio: '0.0085' }, llm: {} });
  });

  it('stops start-up listing every problem: unreadable file, unknown sections and fields, bad currency and prices', () => {
    expect(() => loadPrices('/nonexistent/prices.json')).toThrow(/PRICES_FILE: cannot read/);
    let error: ConfigError | undefined;
    try {
      parsePrices({
        currency: 'usd',
        carrier: { twilio: -1 },
        stt: 'cheap',
        llm: { 'gpt-4o': { input: '1e-3', cached: '1' }, bad: 3 },
        tts: { elevenlabs: '0.00000000001' },
        storage: {},
      });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.problems).toEqual(
      expect.arrayContaining([
        'PRICES_FILE.storage: unknown; expected currency, carrier, stt, llm, tts',
        'PRICES_FILE.currency: an ISO 4217 code in capitals (USD, EUR)',
        expect.stringMatching(/^PRICES_FILE\.carrier\.twilio: a non-negative decimal/),
        'PRICES_FILE.stt: an object of prices by name',
        expect.stringMatching(/^PRICES_FILE\.llm\.gpt-4o\.input: a non-negative decimal/),
        'PRICES_FILE.llm.gpt-4o.cached: unknown; expected input, output',
        'PRICES_FILE.llm.bad: an object {input, output} (per 1 000 000 tokens)',
        expect.stringMatching(/^PRICES_FILE\.tts\.elevenlabs: a non-negative decimal/),
      ]),
    );
    expect(() => parsePrices([])).toThrow(ConfigError);
  });

  it('decimal: a numeric’s text without trailing zeros', () => {
    expect(decimal('0.0430000000')).toBe('0.043');
    expect(decimal('2.000')).toBe('2');
    expect(decimal('0')).toBe('0');
    expect(decimal('120')).toBe('120');
  });
});
