import { CarrierAdapter } from '@parley/carrier-core';
import { DevCarrier } from '@parley/carrier-dev';
import { TwilioCarrier } from '@parley/carrier-twilio';
import { devCarrierOn, resolveSecretKey, ServiceConfig } from '@parley/config';

/**
 * The carriers this deployment can use, by adapter name. An agent's `carrier` picks one; otherwise the first
 * configured is used (a phone carrier before the dev carrier). Adding Telnyx or Vonage means one more adapter here,
 * nothing else in the calls service.
 */
export class CarrierRegistry {
  private readonly byName: Map<string, CarrierAdapter>;

  constructor(adapters: CarrierAdapter[]) {
    this.byName = new Map(adapters.map((a) => [a.name, a]));
  }

  static fromConfig(config: ServiceConfig): CarrierRegistry {
    const adapters: CarrierAdapter[] = [];
    if (config.TWILIO_ACCOUNT_SID && config.TWILIO_AUTH_TOKEN) {
      adapters.push(
        new TwilioCarrier({
          accountSid: config.TWILIO_ACCOUNT_SID,
          authToken: config.TWILIO_AUTH_TOKEN,
          apiBaseUrl: config.TWILIO_API_BASE_URL,
          requestTimeoutMs: config.RPC_TIMEOUT_MS,
        }),
      );
    }
    // Last, so that a phone carrier configured beside it stays the default.
    if (devCarrierOn(config)) {
      adapters.push(
        new DevCarrier({ switchUrl: config.DEV_CARRIER_URL ?? config.PUBLIC_URL, secret: resolveSecretKey(config), requestTimeoutMs: config.RPC_TIMEOUT_MS }),
      );
    }
    return new CarrierRegistry(adapters);
  }

  get names(): string[] {
    return [...this.byName.keys()];
  }

  /** The named carrier, or the default one when `name` is empty; undefined when there is none. */
  pick(name?: string): CarrierAdapter | undefined {
    return name ? this.byName.get(name) : this.byName.values().next().value;
  }
}
