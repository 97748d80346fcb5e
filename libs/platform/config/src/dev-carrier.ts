/** The settings that decide whether the dev carrier runs. */
type DevCarrierSettings = { DEV_CARRIER: string; TWILIO_ACCOUNT_SID?: string; TWILIO_AUTH_TOKEN?: string };

/** Whether an account of a phone carrier is configured (a phone carrier replaces the dev carrier as the default). */
export function hasPhoneCarrier(config: DevCarrierSettings): boolean {
  return !!(config.TWILIO_ACCOUNT_SID && config.TWILIO_AUTH_TOKEN);
}

/**
 * DEV_CARRIER with `auto` decided for the run mode: on in standalone mode when no phone carrier is configured, off
 * otherwise (distributed, `auto` is off: the switch's state lives in one gateway replica, so an operator turns it on
 * knowingly). The standalone process resolves it once, before its services start.
 */
export function resolveDevCarrier(config: DevCarrierSettings, mode: 'standalone' | 'distributed'): 'on' | 'off' {
  if (config.DEV_CARRIER === 'on' || config.DEV_CARRIER === 'off') return config.DEV_CARRIER;
  return mode === 'standalone' && !hasPhoneCarrier(config) ? 'on' : 'off';
}

/** Whether this process runs the dev carrier: `on`, or `auto` already resolved to on (see resolveDevCarrier). */
export function devCarrierOn(config: DevCarrierSettings): boolean {
  return config.DEV_CARRIER === 'on';
}
