import { connect, type Socket } from 'node:net';
import { startTestService, type TestService } from '../support/service.js';

/**
 * HTTP/1.1 on one connection (regressions of defects found by review): a GET pipelined after a
 * PATCH sees what the PATCH wrote, a half-close after a complete request still gets its answer,
 * and bytes past Content-Length still get an HTTP answer with the JSON error body. Over raw
 * sockets: fetch cannot express pipelining, a half-close or a wrong Content-Length.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1 over a socket: for what fetch cannot express (pipelining, a half-close,
// a wrong Content-Length).

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: any;
}

/** A socket to the service, with the bytes it received and a way to wait for complete answers. */
interface RawConnection {
  socket: Socket;
  write(data: string): Promise<void>;
  /** Resolves with the first `count` answers, or rejects once the socket closes or `ms` pass without them. */
  answers(count: number, ms?: number): Promise<RawAnswer[]>;
  /** Whether the server closed the connection. */
  closed(): boolean;
  close(): void;
}

function openRaw(service: TestService): Promise<RawConnection> {
  const { hostname, port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    let received = Buffer.alloc(0);
    let ended = false;
    const waiters = new Set<() => void>();
    const wake = () => waiters.forEach((w) => w());
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      wake();
    });
    socket.on('end', () => {
      ended = true;
      wake();
    });
    socket.on('close', () => {
      ended = true;
      wake();
    });
    socket.on('error', () => {
      ended = true;
      wake();
    });
    socket.once('connect', () =>
      resolve({
        socket,
        write: (data) => new Promise<void>((done, fail) => socket.write(data, (err) => (err ? fail(err) : done()))),
        closed: () => ended,
        close: () => socket.destroy(),
        answers(count, ms = 10_000) {
          return new Promise((done, fail) => {
            const check = () => {
              const parsed = parseAnswers(received);
              if (parsed.length >= count) {
                finish();
                done(parsed.slice(0, count));
              } else if (ended) {
                finish();
                fail(new Error(`connection closed after ${parsed.length} of ${count} answers; received: ${JSON.stringify(received.toString('latin1'))}`));
              }
            };
            const timer = setTimeout(() => {
              finish();
              fail(new Error(`no ${count} answers within ${ms} ms; received: ${JSON.stringify(received.toString('latin1'))}`));
            }, ms);
            const finish = () => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          });
        },
      }),
    );
    socket.once('error', reject);
  });
}

/** The complete answers (Content-Length or chunked bodies) at the start of `data`. */
function parseAnswers(data: Buffer): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const headEnd = data.indexOf('\r\n\r\n', at);
    if (headEnd === -1) return answers;
    const [statusLine, ...lines] = data.subarray(at, headEnd).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let bodyStart = headEnd + 4;
    let body: Buffer;
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
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
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (data.length < bodyStart + length) return answers;
      body = data.subarray(bodyStart, bodyStart + length);
      bodyStart += length;
    }
    const text = body.toString('utf8');
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    answers.push({ status: Number(statusLine.split(' ')[1]), headers, text, body: parsed });
    at = bodyStart;
  }
}

/** The text of one request: `body` sets Content-Length (and Content-Type: application/json) unless `headers` say otherwise. */
function requestText(method: string, path: string, options: { token?: string; body?: string; headers?: Record<string, string> } = {}): string {
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

const newUser = async (firstName: string): Promise<number> => {
  const created = await svc.request('POST', '/user/', { body: { firstName, lastName: 'Connections' } });
  expect(created.status).toBe(201);
  return created.body as number;
};

// ---------------------------------------------------------------------------------------------

describe('HTTP/1.1 connection handling', () => {
  // Defect: a pipelined GET is answered in parallel with the PATCH before it (from the read cache), showing the old value.
  test('a GET pipelined after a PATCH on one socket shows what the PATCH wrote', async () => {
    const id = await newUser('v0');
    for (let i = 0; i < 2; i++) expect((await svc.request('GET', `/user/${id}`)).body.firstName).toBe('v0');
    const seen: { round: number; patch: number; get: number; firstName: unknown }[] = [];
    const conn = await openRaw(svc);
    try {
      for (let round = 1; round <= 20; round++) {
        const body = JSON.stringify({ firstName: `v${round}` });
        await conn.write(
          requestText('PATCH', `/user/${id}`, { token: svc.adminToken, body, headers: { Attrs: 'firstName' } }) +
            requestText('GET', `/user/${id}`, { token: svc.adminToken }),
        );
        const answers = await conn.answers(2 * round);
        const [patch, get] = answers.slice(-2);
        seen.push({ round, patch: patch.status, get: get.status, firstName: get.body?.firstName });
      }
    } finally {
      conn.close();
    }
    expect(seen).toEqual(seen.map(({ round }) => ({ round, patch: 200, get: 200, firstName: `v${round}` })));
  });

  // Defect: a client that half-closes after a complete request gets no answer.
  test('a complete request followed by a half-close is still answered', async () => {
    const id = await newUser('Half');
    const conn = await openRaw(svc);
    try {
      await conn.write(requestText('GET', `/user/${id}`, { token: svc.adminToken }));
      conn.socket.end();
      const [answer] = await conn.answers(1);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ id, firstName: 'Half' });
    } finally {
      conn.close();
    }
  });

  // Defect: bytes past Content-Length make the server close the connection without answering the request.
  test('a Content-Length shorter than the body sent still gets an HTTP answer (4xx with a JSON body)', async () => {
    const body = JSON.stringify({ firstName: 'Short', lastName: 'Length-declared' });
    expect(Buffer.byteLength(body)).toBeGreaterThan(10);
    const conn = await openRaw(svc);
    try {
      await conn.write(requestText('POST', '/user/', { token: svc.adminToken, body, headers: { 'Content-Length': '10' } }));
      const [answer] = await conn.answers(1);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(answer.headers['content-type']).toMatch(/json/);
      expect(answer.body).toMatchObject({ code: answer.status });
    } finally {
      conn.close();
    }
    // Nothing was created from the part of the body after the declared length.
    expect(await svc.sql(`select id from users where first_name = 'Short'`)).toEqual([]);
  });
});
