import { connect } from 'node:net';

export interface RawHttpAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends hand-written HTTP/1.1 over a raw socket and reads the whole answer until the server closes, so requests no
 * client library would send (bad percent-encoding, conflicting lengths, a missing Host) reach the server as written.
 */
export function rawHttp(port: number, text: string): Promise<RawHttpAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.on('data', (d) => (out += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = out.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.write(text);
  });
}
