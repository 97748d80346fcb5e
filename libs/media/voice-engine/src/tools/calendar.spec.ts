import { parseEgressAllowlist } from '@parley/egress';
import { ManualClock, realClock } from '../clock';
import { FakeCalCom } from '../testing/fake-calcom';
import { CAL_BOOKINGS_API_VERSION, CAL_SLOTS_API_VERSION, calendarDefinition, runBookAppointment, runCalendarAvailability } from './calendar';
import { CalendarToolConfig, ToolRuntime } from './types';

const KEY = 'cal_live_s3cret_9876';

const tool = (kind: CalendarToolConfig['kind'], calendar: Partial<NonNullable<CalendarToolConfig['calendar']>> = {}): CalendarToolConfig => ({
  kind,
  name: kind === 'calendar_availability' ? 'check_times' : 'book',
  description: kind,
  calendar: { provider: 'cal.com', api_key: { value: KEY }, event_type_id: 42, timezone: 'America/New_York', ...calendar },
});

describe('calendar tools against a fake Cal.com', () => {
  const cal = new FakeCalCom(KEY);
  let base = '';
  const runtime = (over: Partial<ToolRuntime> = {}): ToolRuntime => ({
    egress: parseEgressAllowlist('127.0.0.1').policy,
    internalHosts: [],
    clock: realClock,
    signal: new AbortController().signal,
    calendarBaseUrl: base,
    ...over,
  });
  beforeAll(async () => void (base = await cal.start()));
  afterAll(() => cal.close());
  beforeEach(() => {
    cal.reset();
    cal.slots = {
      42: ['2026-03-02T09:00:00.000-05:00', '2026-03-02T09:30:00.000-05:00', '2026-03-03T14:00:00.000-05:00'],
      7: ['2026-03-02T10:00:00.000-05:00'],
    };
  });

  it('offers closed schemas', () => {
    expect(calendarDefinition(tool('calendar_availability')).parameters).toMatchObject({ required: ['start_date'], additionalProperties: false });
    expect(calendarDefinition(tool('book_appointment')).parameters).toMatchObject({ required: ['start', 'name'], additionalProperties: false });
  });

  it('reads the open slots of the configured event type in the configured timezone', async () => {
    const outcome = await runCalendarAvailability(tool('calendar_availability'), '{"start_date":"2026-03-02"}', runtime());
    expect(outcome.ok).toBe(true);
    expect(outcome.result).toContain('Open times on 2026-03-02, America/New_York:');
    expect(outcome.result).toContain('- Monday, March 2, 9:00 AM (start: 2026-03-02T09:00:00.000-05:00)');
    expect(outcome.result).toContain('9:30 AM');
    expect(outcome.result).not.toContain('March 3');
    expect(outcome.result).not.toContain('10:00 AM');
    const [req] = cal.requests;
    const url = new URL(req.url, 'http://x');
    expect(url.pathname).toBe('/v2/slots');
    expect(Object.fromEntries(url.searchParams)).toEqual({ eventTypeId: '42', start: '2026-03-02', end: '2026-03-02', timeZone: 'America/New_York' });
    expect(req.headers).toMatchObject({ authorization: `Bearer ${KEY}`, 'cal-api-version': CAL_SLOTS_API_VERSION });
  });

  it('covers a range, caps the list, and says when nothing is open', async () => {
    cal.slots[42] = Array.from({ length: 10 }, (_, i) => `2026-03-0${2 + (i % 3)}T${String(9 + i).padStart(2, '0')}:00:00.000-05:00`);
    const outcome = await runCalendarAvailability(tool('calendar_availability', { duration_minutes: 45 }), '{"start_date":"2026-03-02","end_date":"2026-03-04"}', runtime());
    expect(outcome.result).toContain('(10 in all; the earliest 6 shown)');
    expect(outcome.result.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(6);
    expect(new URL(cal.requests[0].url, 'http://x').searchParams.get('duration')).toBe('45');
    expect((await runCalendarAvailability(tool('calendar_availability'), '{"start_date":"2026-04-01"}', runtime())).result).toBe(
      'No open times on 2026-04-01 (America/New_York). Offer to check other days.',
    );
  });

  it('refuses bad dates without a request', async () => {
    for (const args of ['{"start_date":"tomorrow"}', '{"start_date":"2026-03-05","end_date":"2026-03-01"}', '{"start_date":"2026-03-01","end_date":"2026-05-01"}', '{}']) {
      const outcome = await runCalendarAvailability(tool('calendar_availability'), args, runtime());
      expect(outcome).toMatchObject({ ok: false, result: expect.stringContaining('Refused, no request was made') });
    }
    expect(cal.requests).toHaveLength(0);
  });

  it('books the chosen slot with the event type, duration and timezone, and gives the model the confirmation', async () => {
    const outcome = await runBookAppointment(
      tool('book_appointment', { duration_minutes: 45 }),
      '{"start":"2026-03-02T09:30:00.000-05:00","name":"Ada Lovelace","email":"ada@example.com","phone":"+1 (555) 010-0200"}',
      runtime(),
    );
    expect(cal.requests).toHaveLength(1);
    const [req] = cal.requests;
    expect(req).toMatchObject({ method: 'POST', url: '/v2/bookings' });
    expect(req.headers).toMatchObject({ authorization: `Bearer ${KEY}`, 'cal-api-version': CAL_BOOKINGS_API_VERSION, 'content-type': 'application/json' });
    expect(JSON.parse(req.body)).toEqual({
      start: '2026-03-02T14:30:00.000Z',
      eventTypeId: 42,
      attendee: { name: 'Ada Lovelace', email: 'ada@example.com', phoneNumber: '+15550100200', timeZone: 'America/New_York' },
      lengthInMinutes: 45,
    });
    expect(outcome).toEqual({ ok: true, result: 'Booked for Ada Lovelace: Monday, March 2, 9:30 AM until 10:15 AM (America/New_York). Confirmation bk_1.' });
  });

  it('reports a taken slot (400) to the model with Cal.com’s reason', async () => {
    cal.failNextBooking(400, 'User either already has booking at this time or is not available');
    const outcome = await runBookAppointment(tool('book_appointment'), '{"start":"2026-03-02T09:00:00.000-05:00","name":"Ada"}', runtime());
    expect(outcome).toEqual({
      ok: false,
      result: 'The booking failed: User either already has booking at this time or is not available. The time may no longer be free: offer the caller other open times.',
      error: 'HTTP 400: User either already has booking at this time or is not available',
    });
    // A time that is not open at all is refused by the fake the same way.
    expect((await runBookAppointment(tool('book_appointment'), '{"start":"2026-03-02T11:00:00-05:00","name":"Ada"}', runtime())).error).toMatch(/^HTTP 400/);
  });

  it('says a wrong key failed, without the key', async () => {
    const wrong = tool('book_appointment', { api_key: { value: 'cal_live_wrong_5555' } });
    const booking = await runBookAppointment(wrong, '{"start":"2026-03-02T09:00:00.000-05:00","name":"Ada"}', runtime());
    const slots = await runCalendarAvailability({ ...wrong, kind: 'calendar_availability' }, '{"start_date":"2026-03-02"}', runtime());
    for (const outcome of [booking, slots]) {
      expect(outcome).toMatchObject({ ok: false, error: 'HTTP 401: calendar credentials refused' });
      expect(outcome.result).toContain("refused this tool's credentials");
      expect(JSON.stringify(outcome)).not.toMatch(/cal_live|5555|9876/);
    }
    expect(cal.bookings).toHaveLength(0);
  });

  it('refuses booking arguments that are off without a request', async () => {
    const outcome = await runBookAppointment(tool('book_appointment'), '{"start":"next tuesday","name":"Ada","email":"nope","extra":1}', runtime());
    expect(outcome.result).toContain('unknown argument "extra"');
    expect(cal.requests).toHaveLength(0);
    const again = await runBookAppointment(tool('book_appointment'), '{"start":"next tuesday","name":"Ada","email":"nope"}', runtime());
    expect(again.result).toContain('"start" must be an ISO 8601 time');
    expect(again.result).toContain('"email" is not an email address');
    expect(cal.requests).toHaveLength(0);
  });

  it('goes through the outbound-request guard and gives up after 8 s', async () => {
    const refused = await runCalendarAvailability(tool('calendar_availability'), '{"start_date":"2026-03-02"}', runtime({ egress: { allowlist: [] } }));
    expect(refused).toMatchObject({ ok: false, error: 'refused by the outbound request guard' });
    expect(cal.requests).toHaveLength(0);

    const clock = new ManualClock();
    // A server that accepts the connection and never answers.
    const { createServer } = await import('node:http');
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    const pending = runBookAppointment(tool('book_appointment'), '{"start":"2026-03-02T09:00:00.000-05:00","name":"Ada"}', runtime({ clock, calendarBaseUrl: `http://127.0.0.1:${port}` }));
    await new Promise((r) => setTimeout(r, 50));
    await clock.advance(8_000);
    expect(await pending).toEqual({ ok: false, result: 'The tool call failed: the service did not answer in time.', error: 'no answer within 8 s' });
    silent.closeAllConnections();
    await new Promise((r) => silent.close(() => r(undefined)));
  });
});
