import { ServiceConfig } from '@parley/config';
import { CarrierRegistry } from './carrier-registry';

const config = (extra: Partial<ServiceConfig>) => Object.assign(new ServiceConfig(), { SECRET_KEY: 'k'.repeat(40), ...extra });
const TWILIO = { TWILIO_ACCOUNT_SID: `AC${'0'.repeat(32)}`, TWILIO_AUTH_TOKEN: 'token' };

describe('CarrierRegistry: which carrier places a call', () => {
  it('places calls on the dev carrier when it is on and no phone carrier is configured', () => {
    const registry = CarrierRegistry.fromConfig(config({ DEV_CARRIER: 'on' }));
    expect(registry.names).toEqual(['dev']);
    expect(registry.pick()?.name).toBe('dev');
  });

  it('keeps a configured phone carrier the default, the dev carrier still there for agents that name it', () => {
    const registry = CarrierRegistry.fromConfig(config({ DEV_CARRIER: 'on', ...TWILIO }));
    expect(registry.pick()?.name).toBe('twilio');
    expect(registry.pick('dev')?.name).toBe('dev');
  });

  it('has no carrier without a phone carrier when DEV_CARRIER is off or not resolved to on', () => {
    expect(CarrierRegistry.fromConfig(config({ DEV_CARRIER: 'off' })).pick()).toBeUndefined();
    expect(CarrierRegistry.fromConfig(config({ DEV_CARRIER: 'auto' })).pick()).toBeUndefined();
  });
});
