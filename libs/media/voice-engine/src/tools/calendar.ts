import type { ToolDefinition } from '@parley/llm';
import { checkParameters, parseArguments, refused, ToolArguments } from './arguments';
import { DEFAULT_TIMEOUT_SECONDS, toolExchange } from './http';
import { CalendarToolConfig, ToolOutcome, ToolParameter, ToolRuntime } from './types';

/** CALENDAR_BASE_URL's default. */
export const DEFAULT_CALENDAR_BASE_URL = 'https://api.cal.com';
/** The `cal-api-version` header per endpoint (Cal.com API v2 pins request and response shapes by this header). */
export const CAL_SLOTS_API_VERSION = '2024-09-04';
export const CAL_BOOKINGS_API_VERSION = '2024-08-13';
/** The most slots read to the model; it can ask again for another day. */
export const MAX_SLOTS_OFFERED = 6;
/** The longest range asked about at once. */
export const MAX_RANGE_DAYS = 14;
/** A slots answer for two weeks runs to a few KB of JSON: read it whole. */
const MAX_CALENDAR_BYTES = 256 * 1024;
const TIMEOUT_MS = DEFAULT_TIMEOUT_SECONDS * 1000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

const AVAILABILITY_PARAMETERS: ToolParameter[] = [
  { name: 'start_date', type: 'string', required: true, description: 'First day the caller asks about, YYYY-MM-DD.' },
  { name: 'end_date', type: 'string', description: `Last day of the range, YYYY-MM-DD (at most ${MAX_RANGE_DAYS} days after start_date); omit for one day.` },
];

const BOOKING_PARAMETERS: ToolParameter[] = [
  { name: 'start', type: 'string', required: true, description: 'Start of the appointment: the ISO 8601 time of one of the offered slots, exactly as given.' },
  { name: 'name', type: 'string', required: true, description: "The caller's full name." },
  { name: 'email', type: 'string', description: "The caller's email address, if they gave one." },
  { name: 'phone', type: 'string', description: "The caller's phone number in E.164 form, if they gave one." },
];

const schema = (parameters: ToolParameter[]): Record<string, unknown> => ({
  type: 'object',
  properties: Object.fromEntries(parameters.map((p) => [p.name, { type: p.type, description: p.description }])),
  required: parameters.filter((p) => p.required).map((p) => p.name),
  additionalProperties: false,
});

/** A calendar tool is offered only with what executing it needs: an event type and an (unsealed) key. */
export function calendarUsable(config: CalendarToolConfig): boolean {
  return !!config.calendar?.event_type_id && !!config.calendar.api_key?.value;
}

export function calendarDefinition(config: CalendarToolConfig): ToolDefinition {
  return {
    name: config.name,
    description: config.description,
    parameters: schema(config.kind === 'calendar_availability' ? AVAILABILITY_PARAMETERS : BOOKING_PARAMETERS),
  };
}

/** The configured zone when the runtime knows it, else UTC. */
export function calendarTimeZone(config: CalendarToolConfig): string {
  const zone = config.calendar?.timezone;
  if (!zone) return 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return zone;
  } catch {
    return 'UTC';
  }
}

function base(rt: ToolRuntime): string {
  return (rt.calendarBaseUrl || DEFAULT_CALENDAR_BASE_URL).replace(/\/+$/, '');
}

function headers(config: CalendarToolConfig, version: string): Record<string, string> {
  return {
    'user-agent': 'Parley-Tools/1',
    authorization: `Bearer ${config.calendar?.api_key?.value ?? ''}`,
    'cal-api-version': version,
  };
}

/** "Monday, March 2, 9:30 AM" in the zone. */
export function speakableTime(iso: string, timeZone: string): string {
  // Assembled from parts: the joining words of a whole format differ between ICU versions.
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'long', month: 'long', day: 'numeric' }).formatToParts(new Date(iso));
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('weekday')}, ${part('month')} ${part('day')}, ${clockTime(iso, timeZone)}`;
}

/** "9:30 AM" in the zone. */
function clockTime(iso: string, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, hour: 'numeric', minute: '2-digit', hour12: true }).formatToParts(new Date(iso));
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('hour')}:${part('minute')} ${part('dayPeriod').toUpperCase()}`;
}

/** Cal.com's `{status:"error", error:{message}}` text, trimmed, with the key never repeated. */
function calError(text: string, config: CalendarToolConfig): string {
  let message = '';
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const raw = typeof body.error === 'object' ? body.error?.message : (body.error ?? body.message);
    message = Array.isArray(raw) ? raw.join('; ') : typeof raw === 'string' ? raw : '';
  } catch {
    message = '';
  }
  const key = config.calendar?.api_key?.value;
  if (key) message = message.split(key).join('[key]');
  return message.replace(/\s+/g, ' ').trim().slice(0, 200);
}

function failure(config: CalendarToolConfig, status: number, text: string, doing: 'availability' | 'booking'): ToolOutcome {
  if (status === 401 || status === 403) {
    return {
      ok: false,
      result: `The calendar refused this tool's credentials, so the ${doing === 'booking' ? 'appointment could not be booked' : 'open times could not be read'}. Tell the caller it cannot be done right now.`,
      error: `HTTP ${status}: calendar credentials refused`,
    };
  }
  const reason = status >= 400 && status < 500 ? calError(text, config) : '';
  if (doing === 'booking') {
    return {
      ok: false,
      result:
        status >= 400 && status < 500
          ? `The booking failed${reason ? `: ${reason}` : ''}. The time may no longer be free: offer the caller other open times.`
          : `The booking failed: the calendar answered with HTTP status ${status}.`,
      error: `HTTP ${status}${reason ? `: ${reason}` : ''}`,
    };
  }
  return {
    ok: false,
    result: `The open times could not be read${reason ? `: ${reason}` : `: the calendar answered with HTTP status ${status}`}.`,
    error: `HTTP ${status}${reason ? `: ${reason}` : ''}`,
  };
}

function check(raw: string, parameters: ToolParameter[]): { args: ToolArguments } | { outcome: ToolOutcome } {
  const parsed = parseArguments(raw);
  if ('problem' in parsed) return { outcome: refused([parsed.problem]) };
  const problems = checkParameters(parsed.args, parameters);
  return problems.length ? { outcome: refused(problems) } : { args: parsed.args };
}

/**
 * calendar_availability: GET /v2/slots for the event type over the asked days in the caller's zone; the model
 * reads the first MAX_SLOTS_OFFERED open times in words, each with the ISO start to book it by.
 */
export async function runCalendarAvailability(config: CalendarToolConfig, rawArguments: string, rt: ToolRuntime): Promise<ToolOutcome> {
  const checked = check(rawArguments, AVAILABILITY_PARAMETERS);
  if ('outcome' in checked) return checked.outcome;
  const start = String(checked.args['start_date']);
  const end = checked.args['end_date'] === undefined ? start : String(checked.args['end_date']);
  const problems: string[] = [];
  for (const [name, value] of [['start_date', start], ['end_date', end]] as const) {
    if (!DATE.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`))) problems.push(`"${name}" must be a date written YYYY-MM-DD`);
  }
  if (!problems.length) {
    const days = (Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / DAY_MS;
    if (days < 0) problems.push('"end_date" is before "start_date"');
    else if (days > MAX_RANGE_DAYS) problems.push(`the range may span at most ${MAX_RANGE_DAYS} days`);
  }
  if (problems.length) return refused(problems);

  const timeZone = calendarTimeZone(config);
  const url = new URL(`${base(rt)}/v2/slots`);
  url.searchParams.set('eventTypeId', String(config.calendar?.event_type_id));
  url.searchParams.set('start', start);
  url.searchParams.set('end', end);
  url.searchParams.set('timeZone', timeZone);
  if (config.calendar?.duration_minutes) url.searchParams.set('duration', String(config.calendar.duration_minutes));
  const exchange = await toolExchange(
    { url: url.href, method: 'GET', headers: headers(config, CAL_SLOTS_API_VERSION), timeoutMs: TIMEOUT_MS, allowHttp: true },
    rt,
    { maxBytes: MAX_CALENDAR_BYTES, readErrorBody: true },
  );
  if ('failed' in exchange) return exchange.failed;
  if (exchange.status < 200 || exchange.status >= 300) return failure(config, exchange.status, exchange.text, 'availability');

  let starts: string[];
  try {
    const body = JSON.parse(exchange.text) as { data?: Record<string, unknown> };
    const byDay = (body.data && typeof body.data === 'object' && 'slots' in body.data ? body.data['slots'] : body.data) as Record<string, unknown> | undefined;
    starts = Object.values(byDay ?? {})
      .flatMap((day) => (Array.isArray(day) ? day : []))
      .map((slot) => (typeof slot === 'string' ? slot : (slot as { start?: unknown; time?: unknown })?.start ?? (slot as { time?: unknown })?.time))
      .filter((s): s is string => typeof s === 'string' && !Number.isNaN(Date.parse(s)))
      .sort((a, b) => Date.parse(a) - Date.parse(b));
  } catch {
    rt.log?.('calendar answer not understood', { status: exchange.status });
    return { ok: false, result: 'The open times could not be read: the calendar gave an answer that could not be understood.', error: 'unreadable answer' };
  }
  const range = start === end ? `on ${start}` : `between ${start} and ${end}`;
  if (!starts.length) return { ok: true, result: `No open times ${range} (${timeZone}). Offer to check other days.` };
  const shown = starts.slice(0, MAX_SLOTS_OFFERED);
  const lines = shown.map((s) => `- ${speakableTime(s, timeZone)} (start: ${s})`);
  const more = starts.length > shown.length ? ` (${starts.length} in all; the earliest ${shown.length} shown)` : '';
  return {
    ok: true,
    result: `Open times ${range}, ${timeZone}${more}:\n${lines.join('\n')}\nOffer a few of them in words; to book one, pass its start exactly as given.`,
  };
}

/**
 * book_appointment: POST /v2/bookings for the event type at the chosen start, the caller as attendee in the
 * configured zone (duration_minutes as lengthInMinutes when set). The model reads the confirmation, or why it
 * failed (a taken slot: Cal.com's reason).
 */
export async function runBookAppointment(config: CalendarToolConfig, rawArguments: string, rt: ToolRuntime): Promise<ToolOutcome> {
  const checked = check(rawArguments, BOOKING_PARAMETERS);
  if ('outcome' in checked) return checked.outcome;
  const { start, name, email, phone } = checked.args as { start: string; name: string; email?: string; phone?: string };
  const problems: string[] = [];
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(start) || Number.isNaN(Date.parse(start))) problems.push('"start" must be an ISO 8601 time from the offered slots');
  if (!name.trim()) problems.push('"name" is empty');
  if (email !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) problems.push('"email" is not an email address');
  if (phone !== undefined && !/^\+[1-9]\d{6,14}$/.test(phone.replace(/[\s().-]/g, ''))) problems.push('"phone" must be a number in E.164 form (+ and country code)');
  if (problems.length) return refused(problems);

  const timeZone = calendarTimeZone(config);
  const attendee: Record<string, string> = { name: name.trim(), timeZone };
  if (email) attendee['email'] = email;
  if (phone) attendee['phoneNumber'] = phone.replace(/[\s().-]/g, '');
  const body: Record<string, unknown> = { start: new Date(start).toISOString(), eventTypeId: config.calendar?.event_type_id, attendee };
  if (config.calendar?.duration_minutes) body['lengthInMinutes'] = config.calendar.duration_minutes;
  const exchange = await toolExchange(
    {
      url: `${base(rt)}/v2/bookings`,
      method: 'POST',
      headers: { ...headers(config, CAL_BOOKINGS_API_VERSION), 'content-type': 'application/json' },
      body: JSON.stringify(body),
      timeoutMs: TIMEOUT_MS,
      allowHttp: true,
    },
    rt,
    { maxBytes: MAX_CALENDAR_BYTES, readErrorBody: true },
  );
  if ('failed' in exchange) return exchange.failed;
  if (exchange.status < 200 || exchange.status >= 300) return failure(config, exchange.status, exchange.text, 'booking');

  let booking: { uid?: unknown; start?: unknown; end?: unknown; status?: unknown } = {};
  try {
    const parsed = JSON.parse(exchange.text) as { data?: unknown };
    booking = (Array.isArray(parsed.data) ? parsed.data[0] : parsed.data) ?? {};
  } catch {
    rt.log?.('booking answer not understood', { status: exchange.status });
  }
  const at = typeof booking.start === 'string' ? booking.start : body['start'] as string;
  const until = typeof booking.end === 'string' ? ` until ${clockTime(booking.end, timeZone)}` : '';
  const pending = booking.status === 'pending' ? ' It awaits the host\'s confirmation: tell the caller they will hear back.' : '';
  const reference = typeof booking.uid === 'string' ? ` Confirmation ${booking.uid}.` : '';
  return { ok: true, result: `Booked for ${name.trim()}: ${speakableTime(at, timeZone)}${until} (${timeZone}).${reference}${pending}` };
}
