import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { CarrierCallStatus } from '@parley/carrier-core';

/**
 * What the dev carrier's two halves share: the calls service's DevCarrier (the REST client, the webhook reader)
 * and the DevSwitch the gateway hosts (the "network"). Both derive their keys from the deployment's SECRET_KEY, so
 * there is nothing to configure and nothing to leak: a key for one purpose never opens another.
 */

export const DEV_CARRIER_NAME = 'dev';
/**
 * The dev carrier's own number: the caller id of outbound dev calls whose request names no `from`, and the number a
 * dev phone dials when it calls an agent. 555-01xx numbers are reserved for fiction in the North American plan.
 */
export const DEV_CARRIER_NUMBER = '+15555550100';
/** The number a dev phone page calls from unless its user types another. */
export const DEV_PHONE_NUMBER = '+15555550123';

/** Paths on the gateway: the page, its socket, and the switch's REST API (what Twilio's api.twilio.com is). */
export const DEV_PHONE_PATH = '/dev/phone';
export const DEV_PHONE_SOCKET_PATH = '/dev/phone/socket';
export const DEV_SWITCH_API_PATH = '/dev/switch';

/** Header of the switch's webhook signature: HMAC-SHA256 (hex) of the URL and the sorted form fields. */
export const DEV_SIGNATURE_HEADER = 'x-parley-dev-signature';

/** The two keys, derived from SECRET_KEY with HKDF as SignedTokens derives its own (distinct purposes). */
export interface DevCarrierKeys {
  /** Bearer token of the switch's REST API (DevCarrier → switch). */
  apiKey: string;
  /** Signs the switch's webhooks (switch → gateway → DevCarrier.verifyWebhook). */
  webhookKey: Buffer;
}

export function devCarrierKeys(secret: string): DevCarrierKeys {
  const derive = (purpose: string) => Buffer.from(hkdfSync('sha256', secret, 'parley', `dev-carrier:${purpose}`, 32));
  return { apiKey: derive('api').toString('base64url'), webhookKey: derive('webhooks') };
}

/** The signature of a webhook posted to `url` (query included) with `params`. */
export function signDevWebhook(key: Buffer, url: string, params: Record<string, string>): string {
  const mac = createHmac('sha256', key).update(url, 'utf8');
  for (const name of Object.keys(params).sort()) mac.update(`\n${name}=${params[name]}`, 'utf8');
  return mac.digest('hex');
}

/** Constant-time comparison of two strings (a signature, a bearer token). */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A call as the switch's REST API shows it (GET /dev/switch/calls/{id}, and the answer to every call request). */
export interface DevCallResource {
  id: string;
  direction: 'outbound' | 'inbound';
  to: string;
  from: string;
  status: CarrierCallStatus;
  /** Seconds from answer to end, once over (0 for a call never answered). */
  duration_seconds: number | null;
  answered_by: 'human' | 'machine' | null;
  updated_at: string;
}

/** Body of POST /dev/switch/calls: PlaceCallRequest in the API's spelling. */
export interface DevPlaceCallBody {
  to: string;
  from: string;
  agent_id?: string;
  stream_url: string;
  stream_token: string;
  status_callback_url: string;
  machine_detection?: boolean;
  machine_detection_url?: string;
  timeout_seconds?: number;
}

/** Body of POST /dev/switch/calls/{id}/transfer. */
export interface DevTransferBody {
  destination: string;
  result_url?: string;
  timeout_seconds?: number;
}

/**
 * Markup: what the gateway answers an inbound-call webhook or a transfer result with. `stream`: connect the leg's
 * audio to Parley's media stream with this token; `hangup`: end the leg.
 */
export type DevMarkup = { stream: { url: string; token: string } } | { hangup: true };

/** Form fields of the switch's webhooks (like Twilio's CallSid, CallStatus, …). */
export const DEV_FIELDS = {
  callId: 'CallId',
  status: 'Status',
  direction: 'Direction',
  from: 'From',
  to: 'To',
  timestamp: 'Timestamp',
  duration: 'Duration',
  answeredBy: 'AnsweredBy',
  outcome: 'Outcome',
} as const;
