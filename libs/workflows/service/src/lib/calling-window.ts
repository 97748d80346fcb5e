/*
 * Calling windows: when a recipient may be called, in the recipient's IANA time zone. Pure (no clock, no timers):
 * the caller passes the instant it asks about.
 *
 * A call may start at instant t when, in the zone, t's local weekday is one of `days`, t's local date is not a
 * holiday and t's local wall time is >= `start` and < `end`. nextCallableTime answers the earliest such t at or after
 * `from`. Daylight-saving changes follow from that rule rather than from special cases:
 * - spring forward: when `start` falls in the skipped hour (02:30 on 2026-03-08 in America/New_York), the opening is
 *   the first instant whose wall time is past it, the end of the gap (03:00 EDT), not luxon's shift by the gap's
 *   length (03:30); a window lying wholly inside the gap does not open that day;
 * - fall back: when `start` occurs twice (01:30 on 2026-11-01 in America/New_York), the first occurrence (EDT)
 *   opens; a window the clock re-enters after falling back opens again on re-entry.
 */
import { CallingWindow, WEEKDAYS, Weekday } from '@parley/contracts';
import { DateTime, IANAZone } from 'luxon';

export const DEFAULT_CALLING_WINDOW: Readonly<Required<CallingWindow>> = Object.freeze({
  days: ['mon', 'tue', 'wed', 'thu', 'fri'] as Weekday[],
  start: '09:00',
  end: '17:00',
  holidays: [] as string[],
});

/** How far ahead nextCallableTime looks: a year of holidays plus a week of days. */
export const MAX_SEARCH_DAYS = 366 + 7;

const HH_MM = /^([01]\d|2[0-3]):([0-5]\d)$/;
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
// Offsets in use range from -12:00 to +14:00; 15 h either side of a local time covers every instant that can bear it.
const OFFSET_REACH_MS = 15 * HOUR_MS;

/** The window with its defaults filled (copies: the result never shares arrays with the input). */
export function normalizeWindow(w: CallingWindow | undefined): Required<CallingWindow> {
  return {
    days: [...(w?.days ?? DEFAULT_CALLING_WINDOW.days)],
    start: w?.start ?? DEFAULT_CALLING_WINDOW.start,
    end: w?.end ?? DEFAULT_CALLING_WINDOW.end,
    holidays: [...(w?.holidays ?? DEFAULT_CALLING_WINDOW.holidays)],
  };
}

// A zone name, not an offset: some Intl builds accept `+05:00` as a zone, which has no daylight saving to follow.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/** True for a time zone name luxon (and so Intl) knows, such as `Europe/London` or `UTC`; never for offsets. */
export function isValidTimezone(tz: unknown): tz is string {
  return typeof tz === 'string' && ZONE_NAME.test(tz) && IANAZone.isValidZone(tz);
}

/** Minutes after local midnight of an `HH:MM` time, or undefined when it is not one. */
export function minutesOfDay(hhmm: string): number | undefined {
  const match = HH_MM.exec(hhmm);
  return match ? Number(match[1]) * 60 + Number(match[2]) : undefined;
}

interface CompiledWindow {
  days: Set<number>; // luxon weekdays, 1 = Monday
  holidays: Set<string>;
  start: number; // minutes of the day
  end: number;
}

function compile(window: CallingWindow | undefined): CompiledWindow {
  const w = normalizeWindow(window);
  const start = minutesOfDay(w.start);
  const end = minutesOfDay(w.end);
  if (start === undefined || end === undefined) throw new Error(`calling window times must be HH:MM, got ${w.start}-${w.end}`);
  if (end <= start) throw new Error(`calling window end ${w.end} must be after start ${w.start}`);
  const days = new Set(w.days.map((day) => WEEKDAYS.indexOf(day) + 1));
  if (days.has(0)) throw new Error(`calling window days must be among ${WEEKDAYS.join(', ')}`);
  if (days.size === 0) throw new Error('calling window has no days');
  return { days, holidays: new Set(w.holidays), start, end };
}

function callableAt(w: CompiledWindow, local: DateTime): boolean {
  if (!w.days.has(local.weekday) || w.holidays.has(local.toISODate() ?? '')) return false;
  const minutes = local.hour * 60 + local.minute + (local.second * 1000 + local.millisecond) / MINUTE_MS;
  return minutes >= w.start && minutes < w.end;
}

/**
 * The instants that could open the window on one local date (`dayMs`: that date's midnight as if it were UTC): each
 * instant whose wall time is that date's `start` (none in a spring-forward gap, two when falling back), and each
 * offset change whose new wall time falls on that date (the clock may jump into the window). The earliest callable
 * instant after a non-callable `from` is always one of these: being callable only begins where the wall time reaches
 * `start` or jumps.
 */
function openingCandidates(zone: IANAZone, w: CompiledWindow, dayMs: number): number[] {
  const candidates: number[] = [];
  const naive = dayMs + w.start * MINUTE_MS;
  const offsets = new Set([zone.offset(naive - OFFSET_REACH_MS), zone.offset(naive), zone.offset(naive + OFFSET_REACH_MS)]);
  for (const offset of offsets) {
    const instant = naive - offset * MINUTE_MS;
    if (zone.offset(instant) === offset) candidates.push(instant);
  }
  const transition = offsetChangeBetween(zone, dayMs - OFFSET_REACH_MS, dayMs + DAY_MS + OFFSET_REACH_MS);
  if (transition !== undefined && localDateMs(zone, transition) === dayMs) candidates.push(transition);
  return candidates;
}

/** The first millisecond with a new offset in (lo, hi], when the offsets at lo and hi differ (one change assumed). */
function offsetChangeBetween(zone: IANAZone, lo: number, hi: number): number | undefined {
  const before = zone.offset(lo);
  if (zone.offset(hi) === before) return undefined;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (zone.offset(mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The instant's local date in the zone, as that date's midnight as if it were UTC. */
function localDateMs(zone: IANAZone, instant: number): number {
  const local = new Date(instant + zone.offset(instant) * MINUTE_MS);
  return Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate());
}

/**
 * `from` itself when a call may start then, else the next instant the window opens in `timezone`. Throws for an
 * unknown zone, a malformed window (times, days, end not after start), or when nothing opens within MAX_SEARCH_DAYS
 * (every allowed day a holiday): validation refuses such windows, this only guards against looping.
 */
export function nextCallableTime(window: CallingWindow | undefined, timezone: string, from: Date): Date {
  if (!isValidTimezone(timezone)) throw new Error(`unknown time zone ${JSON.stringify(timezone)}`);
  const fromMs = from.getTime();
  if (Number.isNaN(fromMs)) throw new Error('from is not a valid date');
  const w = compile(window);
  const zone = IANAZone.create(timezone);
  const at = (ms: number) => DateTime.fromMillis(ms, { zone });
  if (callableAt(w, at(fromMs))) return new Date(fromMs);

  const firstDay = localDateMs(zone, fromMs);
  let best: number | undefined;
  let lastDayToLook = firstDay + MAX_SEARCH_DAYS * DAY_MS;
  for (let dayMs = firstDay; dayMs <= lastDayToLook; dayMs += DAY_MS) {
    const date = DateTime.fromMillis(dayMs, { zone: 'utc' });
    // Every candidate of a date has that local date, so a date the window excludes has none worth computing.
    if (!w.days.has(date.weekday) || w.holidays.has(date.toISODate() ?? '')) continue;
    for (const candidate of openingCandidates(zone, w, dayMs)) {
      if (candidate < fromMs || (best !== undefined && candidate >= best)) continue;
      if (callableAt(w, at(candidate))) best = candidate;
    }
    // Falling back across midnight can put an instant of the next date before one of this date: look one more day.
    if (best !== undefined && lastDayToLook > dayMs + DAY_MS) lastDayToLook = dayMs + DAY_MS;
  }
  if (best === undefined) throw new Error(`the calling window does not open within ${MAX_SEARCH_DAYS} days`);
  return new Date(best);
}
