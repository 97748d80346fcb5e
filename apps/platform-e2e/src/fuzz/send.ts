import { connect } from 'node:net';
import { FuzzCase } from './requests';

/** What came back: a response, or no response at all (`error` says why). */
export type Observed =
  | { status: number; headers: Record<string, string | undefined>; body: string; error?: undefined }
  | { error: string; status?: undefined };

const TIMEOUT_MS = 30_000;

/** The bytes of a case on the wire: HTTP cases written as a client would, raw ones as they are. */
export function wireBytes(c: FuzzCase, host: string): Buffer {
  if (c.kind === 'raw') return Buffer.from(c.text, 'latin1');
  const headers = { host, ...c.headers, ...(c.body ? { 'content-length': String(c.body.length) } : {}), connection: 'close' };
  const head = `${c.method} ${c.target} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), c.body ?? Buffer.alloc(0)]);
}

/**
 * Sends each case on a connection of its own and reads until the server closes it. A socket rather than an HTTP
 * client: the answer is read even when the server answers (413, 431) and closes before taking the whole request,
 * where a client would report only its failed write.
 */
export class Sender {
  private readonly host: string;
  private readonly port: number;

  constructor(baseUrl: string) {
    const url = new URL(baseUrl);
    this.host = url.hostname;
    this.port = Number(url.port);
  }

  send(c: FuzzCase): Promise<Observed> {
    return new Promise((resolve) => {
      const socket = connect(this.port, this.host);
      const chunks: Buffer[] = [];
      let failure = '';
      socket.setTimeout(TIMEOUT_MS, () => socket.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
      socket.on('data', (d: Buffer) => chunks.push(d));
      socket.on('error', (e) => (failure ||= e.message));
      socket.on('close', () => {
        const observed = parseResponse(Buffer.concat(chunks).toString('latin1'));
        resolve(observed.error && failure ? { error: `${observed.error} (${failure})` } : observed);
      });
      // No half-close after writing: Node's server aborts a request whose client has ended its side.
      // `Connection: close` (or the protocol error itself) makes the server close once it has answered.
      socket.write(wireBytes(c, `${this.host}:${this.port}`));
    });
  }
}

/** The first HTTP/1.1 response in `text`, or why there is none. */
export function parseResponse(text: string): Observed {
  if (!text) return { error: 'the connection closed without an answer' };
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { error: `an incomplete answer: ${JSON.stringify(text.slice(0, 200))}` };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  if (!/^HTTP\/1\.[01] \d{3}/.test(statusLine)) return { error: `not an HTTP answer: ${JSON.stringify(statusLine.slice(0, 200))}` };
  const headers: Record<string, string> = {};
  for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
  let body = text.slice(end + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = unchunk(body);
  const length = Number(headers['content-length']);
  if (headers['content-length'] !== undefined && Number.isInteger(length)) body = body.slice(0, length);
  return { status: Number(statusLine.split(' ')[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8') };
}

function unchunk(text: string): string {
  let out = '';
  for (let at = 0; at < text.length; ) {
    const lineEnd = text.indexOf('\r\n', at);
    const size = parseInt(text.slice(at, lineEnd), 16);
    if (lineEnd < 0 || !size) break;
    out += text.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
  return out;
}
