/**
 * HTTP/1.1 over a raw TCP socket, for what fetch cannot express: malformed or repeated headers, no
 * Host, CONNECT, pipelined requests, a half-close, a body sent after a pause (Expect:
 * 100-continue), a client that leaves mid-request, a WebSocket peer that never answers. Every wait
 * is bounded and fails naming what it waited for and what had arrived.
 */
import { connect, type Socket } from 'node:net';

/** One HTTP answer read off the wire. */
export interface RawAnswer {
  status: number;
  /** The status line and header lines as sent (latin1), without the blank line: for checks on exact spelling. */
  head: string;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  /** The body (de-chunked), as UTF-8. */
  text: string;
  /** The body parsed as JSON, or null when it is empty or not JSON. */
  body: any;
}

/** A connection to the service with every byte it received, to write on and wait on. */
export interface RawConnection {
  socket: Socket;
  /** Writes bytes; resolves once they were handed to the system. */
  write(data: string | Buffer): Promise<void>;
  /** Writes the bytes, if any, then half-closes (sends FIN; the socket still reads). */
  end(data?: string | Buffer): Promise<void>;
  /** Every byte received so far. */
  received(): Buffer;
  /** Every byte received so far, as UTF-8. */
  text(): string;
  /** The first `count` complete answers (1xx interim answers count), or a failure once the socket closes or `ms` pass without them. */
  answers(count: number, ms?: number): Promise<RawAnswer[]>;
  /** Every byte received once the server has finished sending (or the socket closed), or a failure naming `what` after `ms`. */
  untilClosed(what?: string, ms?: number): Promise<Buffer>;
  /** Whether the socket has ended or closed. */
  closed(): boolean;
  /** Destroys the socket (a client that leaves). */
  close(): void;
}

const WAIT_MS = 15_000;

/** Opens a connection to the service at `url` (its origin: `svc.url`); the socket may be half-closed by `end()`. */
export function openRaw(url: string, ms = WAIT_MS): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
  let received = Buffer.alloc(0);
  let ended = false;
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((w) => w());
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    wake();
  });
  for (const event of ['end', 'close', 'error'])
    socket.on(event, () => {
      ended = true;
      wake();
    });
  const seen = () => JSON.stringify(received.toString('latin1').slice(0, 2000));

  /** Resolves with `value()` once it is not undefined, or fails when the socket ends first or after `ms`. */
  const until = <T>(what: string, value: () => T | undefined, ms: number) =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const found = value();
        if (found !== undefined) {
          finish();
          resolve(found);
        } else if (ended) {
          finish();
          reject(new Error(`the connection closed before ${what}; received: ${seen()}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; received: ${seen()}`));
      }, ms);
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  const connection: RawConnection = {
    socket,
    write: (data) => new Promise<void>((done, fail) => socket.write(data, (err) => (err ? fail(err) : done()))),
    end: (data) => new Promise<void>((done) => (data === undefined ? socket.end(done) : socket.end(data, done))),
    received: () => received,
    text: () => received.toString('utf8'),
    answers: (count, wait = WAIT_MS) =>
      until(
        `${count} complete answer(s)`,
        () => {
          const parsed = parseAnswers(received, ended);
          return parsed.length >= count ? parsed.slice(0, count) : undefined;
        },
        wait,
      ),
    untilClosed: (what = 'the connection to close', wait = WAIT_MS) => until(what, () => (ended ? received : undefined), wait),
    closed: () => ended,
    close: () => socket.destroy(),
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`timed out after ${ms} ms connecting to ${url}`));
    }, ms);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', reject);
      resolve(connection);
    });
    socket.once('error', reject);
  });
}

/** A part of a raw exchange: bytes to write, or work to await before the next part (given the connection, to wait on what it received). */
export type RawPart = string | Buffer | ((connection: RawConnection) => Promise<unknown>);

/**
 * Writes the parts on a new connection in turn and returns everything received (UTF-8) once the
 * server closes the connection (send `Connection: close`, or a request the server closes after).
 */
export async function rawExchange(url: string, ...parts: RawPart[]): Promise<string> {
  return (await exchangeBytes(url, parts)).toString('utf8');
}

async function exchangeBytes(url: string, parts: RawPart[]): Promise<Buffer> {
  const connection = await openRaw(url);
  try {
    for (const part of parts) {
      if (typeof part === 'function') await part(connection);
      else await connection.write(part);
    }
    return await connection.untilClosed('the server to close the connection after its answer');
  } finally {
    connection.close();
  }
}

/** The final answer (past any 1xx) to raw request bytes on a new connection that the server closes after answering. */
export async function rawRequest(url: string, request: string | Buffer): Promise<RawAnswer> {
  const received = await exchangeBytes(url, [request]);
  const answers = parseAnswers(received, true);
  const final = answers.filter((answer) => answer.status >= 200).at(-1);
  if (!final) throw new Error(`no complete answer; received: ${JSON.stringify(received.toString('latin1').slice(0, 2000))}`);
  return final;
}

/**
 * The complete answers at the start of `data`: bodies framed by Content-Length or chunked, or
 * (neither given) running to the end of the connection once `ended`. Answers to HEAD are not told
 * apart (none of these tests sends HEAD raw).
 */
export function parseAnswers(data: Buffer, ended = false): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const headEnd = data.indexOf('\r\n\r\n', at);
    if (headEnd === -1) return answers;
    const head = data.subarray(at, headEnd).toString('latin1');
    const [statusLine, ...lines] = head.split('\r\n');
    const status = Number(statusLine.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let bodyStart = headEnd + 4;
    let body: Buffer;
    if (status < 200 || status === 204 || status === 304) {
      body = Buffer.alloc(0);
    } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const chunks: Buffer[] = [];
      for (;;) {
        const sizeEnd = data.indexOf('\r\n', bodyStart);
        if (sizeEnd === -1) return answers;
        const size = parseInt(data.subarray(bodyStart, sizeEnd).toString('latin1'), 16);
        if (data.length < sizeEnd + 2 + size + 2) return answers;
        chunks.push(data.subarray(sizeEnd + 2, sizeEnd + 2 + size));
        bodyStart = sizeEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(chunks);
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (data.length < bodyStart + length) return answers;
      body = data.subarray(bodyStart, bodyStart + length);
      bodyStart += length;
    } else {
      if (!ended) return answers;
      body = data.subarray(bodyStart);
      bodyStart = data.length;
    }
    const text = body.toString('utf8');
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    answers.push({ status, head, headers, text, body: parsed });
    at = bodyStart;
  }
}

/** The text of one request: `body` sets Content-Length (and Content-Type: application/json) unless `headers` say otherwise. */
export function requestText(method: string, path: string, options: { token?: string; body?: string; headers?: Record<string, string> } = {}): string {
  const headers: Record<string, string> = { Host: 'localhost', Accept: 'application/json' };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(options.body));
  }
  Object.assign(headers, options.headers);
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n${options.body ?? ''}`;
}
