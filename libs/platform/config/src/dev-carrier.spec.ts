import 'reflect-metadata';
import { devCarrierOn, loadConfig, resolveDevCarrier, ServiceConfig } from './index';

const TWILIO = { TWILIO_ACCOUNT_SID: `AC${'0'.repeat(32)}`, TWILIO_AUTH_TOKEN: 'token' };

describe('DEV_CARRIER', () => {
  it('is auto by default and takes only auto, on or off, checked at boot', () => {
    expect(loadConfig(ServiceConfig, {}).DEV_CARRIER).toBe('auto');
    expect(() => loadConfig(ServiceConfig, { DEV_CARRIER: 'yes' })).toThrow(/DEV_CARRIER/);
    expect(() => loadConfig(ServiceConfig, { DEV_CARRIER_URL: 'ftp://gateway' })).toThrow(/DEV_CARRIER_URL/);
    expect(loadConfig(ServiceConfig, { DEV_CARRIER_URL: 'http://gateway:8080' }).DEV_CARRIER_URL).toBe('http://gateway:8080');
  });

  it('auto: on in standalone mode without a phone carrier; a configured phone carrier, or distributed mode, leaves it off', () => {
    const auto = loadConfig(ServiceConfig, {});
    expect(resolveDevCarrier(auto, 'standalone')).toBe('on');
    expect(resolveDevCarrier({ ...auto, ...TWILIO }, 'standalone')).toBe('off');
    expect(resolveDevCarrier(auto, 'distributed')).toBe('off');
    // Not resolved (a distributed service process): auto is off.
    expect(devCarrierOn(auto)).toBe(false);
  });

  it('on and off are what the operator says, whatever the mode and the carriers', () => {
    expect(resolveDevCarrier({ DEV_CARRIER: 'on', ...TWILIO }, 'distributed')).toBe('on');
    expect(resolveDevCarrier({ DEV_CARRIER: 'off' }, 'standalone')).toBe('off');
    expect(devCarrierOn({ DEV_CARRIER: resolveDevCarrier({ DEV_CARRIER: 'auto' }, 'standalone') })).toBe(true);
  });
});
