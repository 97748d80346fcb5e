import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

export interface CalRequest {
  method: string;
  /** Path and query, as received. */
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface FakeBooking {
  uid: string;
  start: string;
  end: string;
  eventTypeId: number;
  attendee: { name: string; email?: string; timeZone: string; phoneNumber?: string };
}

/**
 * Cal.com API v2 on 127.0.0.1 for tests (allow it with the egress allowlist `127.0.0.1`), speaking the wire shapes
 * of the two endpoints the calendar tools use:
 * - `GET /v2/slots?eventTypeId&start&end&timeZone` → `{status:"success", data:{"YYYY-MM-DD":[{start}]}}`, the
 *   scripted slots of that event type whose day falls in start..end;
 * - `POST /v2/bookings` `{start, eventTypeId, attendee, lengthInMinutes?}` → 201 `{status:"success", data:{uid,
 *   start, end, status:"accepted", …}}`; a start that is not an open slot (or already booked) → 400, as Cal.com
 *   answers a taken time.
 * Every request needs `Authorization: Bearer <apiKey>` (else 401) and a `cal-api-version` header (else 400).
 * Requests are recorded; `failNextBooking` scripts one failure.
 */
export class FakeCalCom {
  readonly requests: CalRequest[] = [];
  readonly bookings: FakeBooking[] = [];
  /** Open slots (ISO starts with offset) by event type id. */
  slots: Record<number, string[]> = {};
  /** Length of a booking when the request gives none. */
  lengthMinutes = 30;
  private failure: { status: number; message: string } | undefined;
  private server: Server | undefined;

  constructor(readonly apiKey = 'cal_live_test_key_1234') {}

  failNextBooking(status: number, message: string): this {
    this.failure = { status, message };
    return this;
  }

  reset(): void {
    this.requests.length = 0;
    this.bookings.length = 0;
    this.slots = {};
    this.failure = undefined;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        this.requests.push(request);
        this.handle(request, res);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private handle(request: CalRequest, res: ServerResponse): void {
    const send = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const error = (status: number, code: string, message: string): void => send(status, { status: 'error', timestamp: new Date().toISOString(), path: request.url, error: { code, message } });
    if (request.headers.authorization !== `Bearer ${this.apiKey}`) return error(401, 'UnauthorizedException', 'Invalid API Key.');
    if (!request.headers['cal-api-version']) return error(400, 'BadRequestException', 'cal-api-version header is required');
    const url = new URL(request.url, 'http://calcom.test');

    if (request.method === 'GET' && url.pathname === '/v2/slots') {
      const eventTypeId = Number(url.searchParams.get('eventTypeId'));
      const start = url.searchParams.get('start') ?? '';
      const end = url.searchParams.get('end') ?? '';
      const timeZone = url.searchParams.get('timeZone') || 'UTC';
      if (!eventTypeId || !start || !end) return error(400, 'BadRequestException', 'eventTypeId, start and end are required');
      const day = (iso: string) => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(iso));
      const data: Record<string, { start: string }[]> = {};
      for (const slot of this.slots[eventTypeId] ?? []) {
        const d = day(slot);
        if (d < start.slice(0, 10) || d > end.slice(0, 10) || this.bookings.some((b) => Date.parse(b.start) === Date.parse(slot))) continue;
        (data[d] ??= []).push({ start: slot });
      }
      return send(200, { status: 'success', data });
    }

    if (request.method === 'POST' && url.pathname === '/v2/bookings') {
      let body: { start?: string; eventTypeId?: number; lengthInMinutes?: number; attendee?: FakeBooking['attendee'] };
      try {
        body = JSON.parse(request.body);
      } catch {
        return error(400, 'BadRequestException', 'Invalid JSON');
      }
      if (this.failure) {
        const { status, message } = this.failure;
        this.failure = undefined;
        return error(status, status === 409 ? 'ConflictException' : 'BadRequestException', message);
      }
      if (!body.start || !body.eventTypeId || !body.attendee?.name || !body.attendee.timeZone) {
        return error(400, 'BadRequestException', 'start, eventTypeId, attendee.name and attendee.timeZone are required');
      }
      const open = (this.slots[body.eventTypeId] ?? []).some((s) => Date.parse(s) === Date.parse(body.start as string));
      if (!open || this.bookings.some((b) => Date.parse(b.start) === Date.parse(body.start as string))) {
        return error(400, 'BadRequestException', 'User either already has booking at this time or is not available');
      }
      const start = new Date(body.start);
      const booking: FakeBooking = {
        uid: `bk_${this.bookings.length + 1}`,
        start: start.toISOString(),
        end: new Date(start.getTime() + (body.lengthInMinutes ?? this.lengthMinutes) * 60_000).toISOString(),
        eventTypeId: body.eventTypeId,
        attendee: body.attendee,
      };
      this.bookings.push(booking);
      return send(201, {
        status: 'success',
        data: { id: this.bookings.length, uid: booking.uid, status: 'accepted', start: booking.start, end: booking.end, eventTypeId: booking.eventTypeId, attendees: [booking.attendee] },
      });
    }
    return error(404, 'NotFoundException', `Cannot ${request.method} ${url.pathname}`);
  }
}
