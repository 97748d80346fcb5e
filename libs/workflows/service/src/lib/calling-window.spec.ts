import { CallingWindow, WEEKDAYS } from '@parley/contracts';
import { DEFAULT_CALLING_WINDOW, isValidTimezone, minutesOfDay, nextCallableTime, normalizeWindow } from './calling-window';

const NY = 'America/New_York';
const LONDON = 'Europe/London';
const EVERY_DAY: CallingWindow = { days: [...WEEKDAYS] };

/** Expected instants are written in UTC so the tests do not lean on the library under test. */
const at = (iso: string) => new Date(iso);
const next = (window: CallingWindow | undefined, tz: string, from: string) => nextCallableTime(window, tz, at(from)).toISOString();

describe('normalizeWindow', () => {
  it('fills mon-fri, 09:00-17:00 and no holidays when no window is given', () => {
    expect(normalizeWindow(undefined)).toEqual({ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00', holidays: [] });
  });

  it('keeps the given fields and fills only the missing ones', () => {
    expect(normalizeWindow({ start: '10:30', holidays: ['2026-12-25'] })).toEqual({
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      start: '10:30',
      end: '17:00',
      holidays: ['2026-12-25'],
    });
  });

  it('returns arrays of its own, so changing the result changes neither the input nor the defaults', () => {
    const input: CallingWindow = { days: ['sat'] };
    const normalized = normalizeWindow(input);
    normalized.days.push('sun');
    normalizeWindow(undefined).days.push('sun');

    expect(input.days).toEqual(['sat']);
    expect(DEFAULT_CALLING_WINDOW.days).toEqual(['mon', 'tue', 'wed', 'thu', 'fri']);
  });
});

describe('isValidTimezone', () => {
  it.each(['UTC', NY, LONDON, 'Asia/Kolkata', 'Etc/GMT+5'])('accepts the IANA zone %s', (tz) => {
    expect(isValidTimezone(tz)).toBe(true);
  });

  it.each(['', 'Mars/Olympus_Mons', '+05:00', 'GMT+25', 'x'.repeat(65)])('refuses %j', (tz) => {
    expect(isValidTimezone(tz)).toBe(false);
  });

  it('refuses what is not a string', () => {
    expect(isValidTimezone(undefined)).toBe(false);
    expect(isValidTimezone(5)).toBe(false);
  });
});

describe('minutesOfDay', () => {
  it('reads HH:MM from 00:00 to 23:59 and nothing else', () => {
    expect(minutesOfDay('00:00')).toBe(0);
    expect(minutesOfDay('23:59')).toBe(1439);
    expect(minutesOfDay('24:00')).toBeUndefined();
    expect(minutesOfDay('9:00')).toBeUndefined();
    expect(minutesOfDay('09:60')).toBeUndefined();
  });
});

describe('nextCallableTime', () => {
  describe('within one day', () => {
    it('answers the instant itself when a call may start then', () => {
      // Tuesday 2026-03-10 10:00 EDT.
      expect(next(undefined, NY, '2026-03-10T14:00:00.000Z')).toBe('2026-03-10T14:00:00.000Z');
    });

    it('answers the opening later the same day when asked before it', () => {
      // Tuesday 06:15 EDT -> 09:00 EDT.
      expect(next(undefined, NY, '2026-03-10T10:15:00.000Z')).toBe('2026-03-10T13:00:00.000Z');
    });

    it('opens at the start minute, not a second before', () => {
      expect(next(undefined, NY, '2026-03-10T12:59:59.000Z')).toBe('2026-03-10T13:00:00.000Z');
      expect(next(undefined, NY, '2026-03-10T13:00:00.000Z')).toBe('2026-03-10T13:00:00.000Z');
    });

    it('never starts a call at the closing time: at `end` the next opening is the next day', () => {
      // Tuesday 17:00 EDT exactly -> Wednesday 09:00 EDT.
      expect(next(undefined, NY, '2026-03-10T21:00:00.000Z')).toBe('2026-03-11T13:00:00.000Z');
    });

    it('still starts a call a millisecond before the closing time', () => {
      expect(next(undefined, NY, '2026-03-10T20:59:59.999Z')).toBe('2026-03-10T20:59:59.999Z');
    });

    it('reads the window in the recipient zone: the same instant is open in London and closed in New York', () => {
      // Tuesday 2026-03-10 12:00 UTC: 12:00 in London, 08:00 in New York.
      expect(next(undefined, LONDON, '2026-03-10T12:00:00.000Z')).toBe('2026-03-10T12:00:00.000Z');
      expect(next(undefined, NY, '2026-03-10T12:00:00.000Z')).toBe('2026-03-10T13:00:00.000Z');
    });

    it('uses the local date, not the UTC one, in a zone far from UTC', () => {
      // Friday 2026-03-06 23:30 UTC is Saturday 13:30 in Pacific/Kiritimati (+14): closed until Monday 09:00 there.
      expect(next(undefined, 'Pacific/Kiritimati', '2026-03-06T23:30:00.000Z')).toBe('2026-03-08T19:00:00.000Z');
    });

    it('handles zones with half-hour offsets', () => {
      // Tuesday 2026-03-10 03:00 UTC is 08:30 in Kolkata (+05:30) -> 09:00 IST = 03:30 UTC.
      expect(next(undefined, 'Asia/Kolkata', '2026-03-10T03:00:00.000Z')).toBe('2026-03-10T03:30:00.000Z');
    });
  });

  describe('days and holidays', () => {
    it('skips the weekend: Friday after closing opens on Monday', () => {
      // Friday 2026-03-06 18:00 EST -> Monday 2026-03-09 09:00 EDT (after the DST change on Sunday).
      expect(next(undefined, NY, '2026-03-06T23:00:00.000Z')).toBe('2026-03-09T13:00:00.000Z');
    });

    it('skips the weekend: a Saturday instant opens on Monday', () => {
      expect(next(undefined, LONDON, '2026-01-10T11:00:00.000Z')).toBe('2026-01-12T09:00:00.000Z');
    });

    it('calls on the days named, weekend included', () => {
      expect(next({ days: ['sat'] }, LONDON, '2026-01-10T11:00:00.000Z')).toBe('2026-01-10T11:00:00.000Z');
      expect(next({ days: ['sun'] }, LONDON, '2026-01-10T11:00:00.000Z')).toBe('2026-01-11T09:00:00.000Z');
    });

    it('skips a holiday that falls on a calling day', () => {
      // Monday 2026-01-05 is a holiday -> Tuesday.
      expect(next({ holidays: ['2026-01-05'] }, LONDON, '2026-01-05T10:00:00.000Z')).toBe('2026-01-06T09:00:00.000Z');
    });

    it('skips consecutive holidays and the weekend after them', () => {
      // Christmas Thursday and Friday, then the weekend -> Monday 2025-12-29.
      const window: CallingWindow = { holidays: ['2025-12-25', '2025-12-26'] };
      expect(next(window, LONDON, '2025-12-24T17:00:00.000Z')).toBe('2025-12-29T09:00:00.000Z');
    });

    it('reads holidays as local dates of the recipient zone', () => {
      // Sunday 2026-01-04 23:30 UTC is Monday 2026-01-05 08:30 in Tokyo: the Tokyo date decides, not the UTC one.
      expect(next({ holidays: ['2026-01-05'] }, 'Asia/Tokyo', '2026-01-04T23:30:00.000Z')).toBe('2026-01-06T00:00:00.000Z');
      expect(next({ holidays: ['2026-01-04'] }, 'Asia/Tokyo', '2026-01-04T23:30:00.000Z')).toBe('2026-01-05T00:00:00.000Z');
    });
  });

  describe('daylight-saving changes', () => {
    it('opens at the new local start after New York springs forward (2026-03-08)', () => {
      // Saturday 18:00 EST -> Sunday 09:00 EDT (13:00 UTC, no longer 14:00).
      expect(next(EVERY_DAY, NY, '2026-03-07T23:00:00.000Z')).toBe('2026-03-08T13:00:00.000Z');
    });

    it('opens at the new local start after New York falls back (2026-11-01)', () => {
      // Saturday 18:00 EDT -> Sunday 09:00 EST (14:00 UTC, no longer 13:00).
      expect(next(EVERY_DAY, NY, '2026-10-31T22:00:00.000Z')).toBe('2026-11-01T14:00:00.000Z');
    });

    it('opens at the new local start after London springs forward (2026-03-29)', () => {
      // Saturday 18:00 GMT -> Sunday 09:00 BST (08:00 UTC).
      expect(next(EVERY_DAY, LONDON, '2026-03-28T18:00:00.000Z')).toBe('2026-03-29T08:00:00.000Z');
    });

    it('opens at the new local start after London falls back (2026-10-25)', () => {
      // Saturday 18:00 BST -> Sunday 09:00 GMT (09:00 UTC).
      expect(next(EVERY_DAY, LONDON, '2026-10-24T17:00:00.000Z')).toBe('2026-10-25T09:00:00.000Z');
    });

    it('closes at the local end on the change day: no call at 17:00 EDT on 2026-03-08', () => {
      expect(next(EVERY_DAY, NY, '2026-03-08T20:59:00.000Z')).toBe('2026-03-08T20:59:00.000Z');
      expect(next(EVERY_DAY, NY, '2026-03-08T21:00:00.000Z')).toBe('2026-03-09T13:00:00.000Z');
    });

    it('maps a start inside the spring-forward gap to the end of the gap (02:30 -> 03:00 EDT in New York)', () => {
      const window: CallingWindow = { days: ['sun'], start: '02:30', end: '05:00' };
      // Sunday 2026-03-08 00:00 EST -> 03:00 EDT = 07:00 UTC (02:30 never happens that night).
      expect(next(window, NY, '2026-03-08T05:00:00.000Z')).toBe('2026-03-08T07:00:00.000Z');
    });

    it('maps a start inside the spring-forward gap to the end of the gap (01:30 -> 02:00 BST in London)', () => {
      const window: CallingWindow = { days: ['sun'], start: '01:30', end: '05:00' };
      expect(next(window, LONDON, '2026-03-29T00:00:00.000Z')).toBe('2026-03-29T01:00:00.000Z');
    });

    it('does not open a window that lies wholly inside the gap that day', () => {
      const window: CallingWindow = { days: [...WEEKDAYS], start: '02:05', end: '02:55' };
      // 2026-03-08 has no 02:05-02:55 in New York -> Monday 02:05 EDT = 06:05 UTC.
      expect(next(window, NY, '2026-03-08T05:00:00.000Z')).toBe('2026-03-09T06:05:00.000Z');
    });

    it('opens at the first of two identical local starts when New York falls back', () => {
      const window: CallingWindow = { days: ['sun'], start: '01:30', end: '03:00' };
      // 01:30 happens at 05:30 UTC (EDT) and again at 06:30 UTC (EST): the first one.
      expect(next(window, NY, '2026-11-01T04:00:00.000Z')).toBe('2026-11-01T05:30:00.000Z');
    });

    it('opens at the second local start when asked during the repeated hour before it', () => {
      const window: CallingWindow = { days: ['sun'], start: '01:30', end: '03:00' };
      // 06:10 UTC is 01:10 EST (the second 01:10): the second 01:30 is 06:30 UTC.
      expect(next(window, NY, '2026-11-01T06:10:00.000Z')).toBe('2026-11-01T06:30:00.000Z');
    });

    it('reopens a window the clock falls back into', () => {
      const window: CallingWindow = { days: ['sun'], start: '00:30', end: '01:30' };
      // 05:40 UTC is 01:40 EDT, past the end; at 06:00 UTC the clock shows 01:00 EST, inside the window again.
      expect(next(window, NY, '2026-11-01T05:40:00.000Z')).toBe('2026-11-01T06:00:00.000Z');
    });

    it('opens at the first of two identical local starts when London falls back', () => {
      const window: CallingWindow = { days: ['sun'], start: '01:30', end: '03:00' };
      // 01:30 BST is 00:30 UTC; 01:30 GMT would be 01:30 UTC.
      expect(next(window, LONDON, '2026-10-25T00:00:00.000Z')).toBe('2026-10-25T00:30:00.000Z');
    });
  });

  describe('refusals', () => {
    it('throws for an unknown time zone', () => {
      expect(() => nextCallableTime(undefined, 'Mars/Olympus_Mons', at('2026-03-10T14:00:00Z'))).toThrow(/time zone/);
    });

    it('throws for a window whose end is not after its start', () => {
      expect(() => nextCallableTime({ start: '10:00', end: '10:00' }, NY, at('2026-03-10T14:00:00Z'))).toThrow(/after start/);
    });

    it('throws for malformed times and unknown or missing days', () => {
      const from = at('2026-03-10T14:00:00Z');
      expect(() => nextCallableTime({ start: '9am' }, NY, from)).toThrow(/HH:MM/);
      expect(() => nextCallableTime({ days: ['funday' as never] }, NY, from)).toThrow(/days/);
      expect(() => nextCallableTime({ days: [] }, NY, from)).toThrow(/no days/);
    });

    it('throws instead of looping when every allowed day is a holiday for over a year', () => {
      const mondays: string[] = [];
      for (let day = Date.UTC(2026, 0, 5); mondays.length < 60; day += 7 * 86_400_000) mondays.push(new Date(day).toISOString().slice(0, 10));

      expect(() => nextCallableTime({ days: ['mon'], holidays: mondays }, LONDON, at('2026-01-01T00:00:00Z'))).toThrow(/does not open within/);
    });

    it('finds an opening almost a year away when holidays block everything before it', () => {
      const mondays: string[] = [];
      for (let day = Date.UTC(2026, 0, 5); mondays.length < 52; day += 7 * 86_400_000) mondays.push(new Date(day).toISOString().slice(0, 10));

      // 52 Mondays from 2026-01-05 run to 2026-12-28: the next Monday is 2027-01-04.
      expect(next({ days: ['mon'], holidays: mondays }, LONDON, '2026-01-01T00:00:00Z')).toBe('2027-01-04T09:00:00.000Z');
    });
  });
});
