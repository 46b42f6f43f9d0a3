import { randomBytes } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { startService } from '../../src/server.js';
import { createLogger } from '../../src/observability/log.js';
import { startTestService, type RequestOptions, type Reply, type TestService } from '../support/service.js';

/**
 * HTTP behaviour shared by every path (SPEC §4 paths, §6 errors): unknown paths and methods,
 * body parsing limits and media types, X-Request-Id, trailing slashes, health probes, BASE_PATH,
 * and what must never leak (secrets in logs, password/rememberToken, SQL text, stacks).
 */
let svc: TestService;
/** Every reply of this file, to check properties that must hold for all of them. */
const replies: Reply[] = [];

async function call(method: string, path: string, options?: RequestOptions): Promise<Reply> {
  const reply = await svc.request(method, path, options);
  replies.push(reply);
  return reply;
}

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

async function userCount(): Promise<number> {
  const [{ count }] = await svc.sql<{ count: string }>('select count(*) from users');
  return Number(count);
}

function expectError(res: Reply, status: number, error: string): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body).toEqual({
    code: status,
    error,
    message: expect.any(String),
    requestId: res.headers.get('x-request-id'),
    ...(res.body?.details ? { details: expect.any(Array) } : {}),
  });
  expect(res.body.message.length).toBeGreaterThan(0);
}

const newUser = async () => {
  const res = await call('POST', '/user/', { body: { firstName: 'Http', lastName: 'Test' } });
  expect(res.status).toBe(201);
  expect(res.body).toEqual(expect.any(Number));
  expect(res.headers.get('location')).toBe(`/user/${res.body}`);
  return { id: res.body as number };
};

describe('unknown paths and methods', () => {
  test.each(['/nope', '/nope/', '/users/', '/user/1/nope', '/apply/user/', '/token/1/application/', '/'])(
    'GET %s → 404 with the JSON error body',
    async (path) => {
      expectError(await call('GET', path), 404, 'NOT_FOUND');
    },
  );

  test.each<[string, string, string[], string[]]>([
    ['DELETE', '/user/', ['GET', 'POST'], ['DELETE']],
    ['PATCH', '/user', ['GET', 'POST'], ['PATCH']],
    ['PUT', '/token/', ['GET', 'POST'], ['PUT']],
    ['POST', '/user/1', ['GET', 'PUT', 'PATCH', 'DELETE'], ['POST']],
    ['POST', '/token/1', ['GET', 'PUT', 'PATCH', 'DELETE'], ['POST']],
    ['GET', '/apply/user/id/', ['POST'], ['GET']],
    ['DELETE', '/apply/token/id/', ['POST'], ['DELETE']],
    ['GET', '/user/1/status/', ['PATCH', 'PUT'], ['GET']],
    ['PATCH', '/user/1/application/', ['GET', 'POST', 'DELETE'], ['PATCH']],
    ['DELETE', '/user/1/application/2', ['GET', 'PUT'], ['DELETE']],
    ['PUT', '/user/1/role/', ['GET', 'POST', 'DELETE'], ['PUT']],
  ])('%s %s → 405 with Allow and the JSON error body', async (method, path, allowed, notAllowed) => {
    const before = await userCount();
    const res = await call(method, path, method === 'GET' || method === 'DELETE' ? {} : { body: { firstName: 'A', lastName: 'B' } });
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    const allow = (res.headers.get('allow') ?? '').split(/\s*,\s*/);
    for (const m of allowed) expect(allow).toContain(m);
    for (const m of notAllowed) expect(allow).not.toContain(m);
    expect(await userCount()).toBe(before);
  });
});

describe('request bodies', () => {
  test.each(['{"firstName":', '{firstName: "A"}', '{"firstName":"A",}', "{'a':1}", '\u0000'])(
    'malformed JSON %j → 400 BAD_REQUEST, nothing stored',
    async (raw) => {
      const before = await userCount();
      const res = await call('POST', '/user/', { rawBody: raw, headers: { 'Content-Type': 'application/json' } });
      expectError(res, 400, 'BAD_REQUEST');
      expect(res.body.message).toMatch(/JSON/);
      expect(await userCount()).toBe(before);
    },
  );

  test('a malformed body on PATCH changes nothing', async () => {
    const user = await newUser();
    const res = await call('PATCH', `/user/${user.id}`, { rawBody: '{"firstName": "Changed"', headers: { 'Content-Type': 'application/json' } });
    expectError(res, 400, 'BAD_REQUEST');
    expect((await call('GET', `/user/${user.id}`)).body.firstName).toBe('Http');
  });

  test('a body over 1 MiB → 413 PAYLOAD_TOO_LARGE, nothing stored', async () => {
    const before = await userCount();
    const body = JSON.stringify({ firstName: 'Big', lastName: 'Body', outKey: 'x'.repeat(1024 * 1024 + 16) });
    const res = await call('POST', '/user/', { rawBody: body, headers: { 'Content-Type': 'application/json' } });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(await userCount()).toBe(before);
  });

  test('a body just under 1 MiB is read (and then validated: 400 naming the field, not 413)', async () => {
    const before = await userCount();
    const res = await call('POST', '/user/', { body: { firstName: 'Big', lastName: 'Body', outKey: 'x'.repeat(1000 * 1000) } });
    expectError(res, 400, 'BAD_REQUEST');
    expect(res.body.details).toEqual([{ field: 'outKey', message: expect.stringContaining('at most 255') }]);
    expect(await userCount()).toBe(before);
  });

  test.each<[string, string]>([
    ['text/plain', '{"firstName":"A","lastName":"B"}'],
    ['text/plain; charset=utf-8', '{"firstName":"A","lastName":"B"}'],
    ['application/x-www-form-urlencoded', 'firstName=A&lastName=B'],
    ['multipart/form-data; boundary=xyz', '--xyz\r\nContent-Disposition: form-data; name="firstName"\r\n\r\nA\r\n--xyz--\r\n'],
    ['application/xml', '<user><firstName>A</firstName></user>'],
  ])('Content-Type %s → 415 UNSUPPORTED_MEDIA_TYPE, nothing stored', async (type, raw) => {
    const before = await userCount();
    const res = await call('POST', '/user/', { rawBody: raw, headers: { 'Content-Type': type } });
    expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(await userCount()).toBe(before);
  });

  test('a non-JSON body on PUT and on a link call → 415, nothing changed', async () => {
    const user = await newUser();
    const put = await call('PUT', `/user/${user.id}`, { rawBody: 'firstName=X&lastName=Y', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expectError(put, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect((await call('GET', `/user/${user.id}`)).body.firstName).toBe('Http');
    const link = await call('POST', `/user/${user.id}/role/`, { rawBody: '[1]', headers: { 'Content-Type': 'text/plain' } });
    expectError(link, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('a "__proto__" key is valid JSON: dropped like any field outside the writable set', async () => {
    const res = await call('POST', '/user/', {
      rawBody: '{"firstName":"Proto","lastName":"Key","__proto__":{"status":5},"x":{"__proto__":1}}',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(expect.any(Number));
    expect((await call('GET', `/user/${res.body}`)).body).toMatchObject({ id: res.body, firstName: 'Proto', lastName: 'Key', status: 0 });
    expect(({} as Record<string, unknown>).status).toBeUndefined();
  });

  test('application/json with a charset is accepted', async () => {
    const res = await call('POST', '/user/', {
      rawBody: '{"firstName":"Char","lastName":"Set"}',
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(expect.any(Number));
    expect((await call('GET', `/user/${res.body}`)).body).toMatchObject({ id: res.body, firstName: 'Char', lastName: 'Set' });
  });
});

describe('X-Request-Id', () => {
  test("the caller's id is echoed on success and on every kind of failure", async () => {
    const user = await newUser();
    const cases: [string, string, RequestOptions, number][] = [
      ['GET', '/user/', {}, 200],
      ['GET', `/user/${user.id}`, {}, 200],
      ['POST', '/user/', { body: { firstName: 'R', lastName: 'Id' } }, 201],
      ['POST', '/user/', { body: { firstName: 'R' } }, 400],
      ['GET', '/user/', { token: null }, 401],
      ['GET', '/user/', { token: 'no-such-token' }, 401],
      ['GET', '/user/99999999', {}, 404],
      ['GET', '/nowhere', {}, 404],
      ['DELETE', '/user/', {}, 405],
      ['POST', '/user/', { rawBody: 'x', headers: { 'Content-Type': 'text/plain' } }, 415],
      ['POST', '/user/', { rawBody: '{', headers: { 'Content-Type': 'application/json' } }, 400],
      ['GET', '/healthz', { token: null }, 200],
      ['GET', '/readyz', { token: null }, 200],
    ];
    for (const [method, path, options, status] of cases) {
      const id = `req-${randomBytes(6).toString('hex')}`;
      const res = await call(method, path, { ...options, headers: { ...options.headers, 'X-Request-Id': id } });
      expect({ method, path, status: res.status, requestId: res.headers.get('x-request-id') }).toEqual({ method, path, status, requestId: id });
      if (status >= 400) expect(res.body.requestId).toBe(id);
    }
    const destroyed = await call('DELETE', `/user/${user.id}`, { headers: { 'X-Request-Id': 'delete-1' } });
    expect(destroyed.status).toBe(200);
    expect(destroyed.body).toBe(1);
    expect(destroyed.headers.get('x-request-id')).toBe('delete-1');
  });

  test('without one, each response gets its own id, also a 401', async () => {
    const a = await call('GET', '/user/');
    const b = await call('GET', '/user/', { token: null });
    expect(b.status).toBe(401);
    expect(b.headers.get('www-authenticate')).toBe('Bearer');
    const idA = a.headers.get('x-request-id');
    const idB = b.headers.get('x-request-id');
    expect(idA).toMatch(/\S{8,}/);
    expect(idB).toMatch(/\S{8,}/);
    expect(idA).not.toBe(idB);
    expect(b.body.requestId).toBe(idB);
  });
});

describe('trailing slashes', () => {
  test('collection paths answer with and without the trailing slash', async () => {
    const withSlash = await call('GET', '/user/?orderBy=-id&pageSize=5');
    const without = await call('GET', '/user?orderBy=-id&pageSize=5');
    expect(withSlash.status).toBe(200);
    expect(without.status).toBe(200);
    expect(without.body).toEqual(withSlash.body);
    expect((await call('GET', '/token')).status).toBe(200);
    expect((await call('GET', '/token/')).status).toBe(200);

    const created = await call('POST', '/user', { body: { firstName: 'No', lastName: 'Slash' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual(expect.any(Number));
    expect(created.headers.get('location')).toBe(`/user/${created.body}`);
    const uid = created.body as number;

    const applied = await call('POST', '/apply/user/id');
    expect(applied.status).toBe(201);
    expect(applied.body).toEqual(expect.any(Number));
    const appliedToken = await call('POST', '/apply/token/id');
    expect(appliedToken.status).toBe(201);

    const token = await call('POST', '/token', { body: { userID: uid, accessToken: `slash-${randomBytes(8).toString('hex')}` } });
    expect(token.status).toBe(201);

    for (const [path, value] of [
      [`/user/${uid}/status`, 4],
      [`/user/${uid}/status/`, 5],
    ] as const) {
      const res = await call('PATCH', path, { body: { status: value } });
      const userStatus = (await call('GET', `/user/${uid}`)).body.status;
      expect({ path, status: res.status, body: res.body, userStatus }).toEqual({ path, status: 200, body: 1, userStatus: value });
    }
    const app = await call('POST', '/application', { body: { name: `slash-app-${randomBytes(4).toString('hex')}` } });
    expect(app.status).toBe(201);
    const linked = await call('POST', `/user/${uid}/application`, { body: [app.body] });
    expect({ status: linked.status, body: linked.body }).toEqual({ status: 201, body: 1 });
    for (const path of [`/user/${uid}/application`, `/user/${uid}/application/`]) {
      const res = await call('GET', path);
      expect({ path, status: res.status, total: res.headers.get('x-total-count'), ids: res.body.map((a: { id: number }) => a.id) }).toEqual({
        path,
        status: 200,
        total: '1',
        ids: [app.body],
      });
    }
    expect((await call('GET', `/user/${uid}/role`)).status).toBe(200);
    expect((await call('GET', `/user/${uid}/role/`)).status).toBe(200);
  });
});

describe('health', () => {
  test.each(['/healthz', '/readyz'])('GET %s answers 200 without a token', async (path) => {
    const res = await call('GET', path, { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  test('an invalid token does not matter to the probes', async () => {
    expect((await call('GET', '/healthz', { token: 'bogus' })).status).toBe(200);
  });
});

describe('BASE_PATH', () => {
  test('REST paths move under the prefix; Location carries it; the bare paths are 404', async () => {
    const other = await startTestService({ BASE_PATH: '/api' });
    try {
      expect(other.config.basePath).toBe('/api');
      const auth = { Authorization: `Bearer ${other.adminToken}`, Accept: 'application/json' };
      const raw = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(other.url + path, {
          method,
          headers: body === undefined ? auth : { ...auth, 'Content-Type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        const reply: Reply = { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : null };
        replies.push(reply);
        return reply;
      };

      const list = await raw('GET', '/api/user/');
      expect(list.status).toBe(200);
      expect(list.body).toEqual(expect.any(Array));
      expect(list.headers.get('x-total-count')).toBe(String(list.body.length));
      // The page links are the request's own path, prefix included.
      expect(list.headers.get('link')).toBe('</api/user/?page=1>; rel="first", </api/user/?page=1>; rel="last"');
      expect((await raw('GET', '/api/user')).status).toBe(200);

      const user = await raw('POST', '/api/user/', { firstName: 'Based', lastName: 'Path' });
      expect(user.status).toBe(201);
      expect(user.body).toEqual(expect.any(Number));
      expect(user.headers.get('location')).toBe(`/api/user/${user.body}`);
      expect((await raw('GET', `/api/user/${user.body}`)).body).toMatchObject({ id: user.body, firstName: 'Based', lastName: 'Path' });

      const token = await raw('POST', '/api/token/', { userID: user.body, accessToken: `based-${randomBytes(8).toString('hex')}` });
      expect(token.status).toBe(201);
      expect(token.headers.get('location')).toBe(`/api/token/${token.body}`);

      const applied = await raw('POST', '/api/apply/user/id/');
      expect(applied.status).toBe(201);
      expect(applied.body).toEqual(expect.any(Number));
      const put = await raw('PUT', `/api/user/${applied.body}`, { firstName: 'Applied', lastName: 'Then Put' });
      expect(put.status).toBe(201);
      expect(put.body).toBe(1);
      expect(put.headers.get('location')).toBe(`/api/user/${applied.body}`);

      for (const path of ['/user/', '/user', `/user/${user.body}`, '/token/', '/apply/user/id/']) {
        const res = await raw(path.startsWith('/apply') ? 'POST' : 'GET', path);
        expect({ path, status: res.status, error: res.body?.error }).toEqual({ path, status: 404, error: 'NOT_FOUND' });
        expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
      }
      // Nothing was created through the bare paths.
      const [{ count }] = await other.sql<{ count: string }>('select count(*) from users where first_name = ?', ['Applied']);
      expect(Number(count)).toBe(1);
    } finally {
      await other.stop();
    }
  });
});

describe('no secret leaks', () => {
  test('bearer values and accessToken values never reach the log; responses never echo them in errors', async () => {
    const secret = (label: string) => `${label}-${randomBytes(12).toString('hex')}`;
    const stored = secret('stored');
    const replaced = secret('replaced');
    const rejected = secret('rejected');
    const bogus = secret('bogus');
    const reader = await svc.tokenWith('user:read token:read');
    const owner = await newUser();

    const created = await call('POST', '/token/', { body: { userID: owner.id, accessToken: stored, scope: 'user:read', refreshToken: secret('refresh') } });
    expect(created.status).toBe(201);

    // 409 on a duplicate accessToken: the message does not repeat the value.
    const duplicate = await call('POST', '/token/', { body: { userID: owner.id, accessToken: stored } });
    expectError(duplicate, 409, 'CONFLICT');
    expect(duplicate.text).not.toContain(stored);

    // 400s with secrets in the body.
    const badOwner = await call('POST', '/token/', { body: { userID: 99999999, accessToken: rejected } });
    expectError(badOwner, 400, 'BAD_REQUEST');
    expect(badOwner.text).not.toContain(rejected);
    const badType = await call('POST', '/token/', { body: { userID: owner.id, accessToken: rejected, expireAt: rejected } });
    expectError(badType, 400, 'BAD_REQUEST');
    expect(badType.text).not.toContain(rejected);
    const malformed = await call('POST', '/token/', { rawBody: `{"accessToken":"${rejected}"`, headers: { 'Content-Type': 'application/json' } });
    expectError(malformed, 400, 'BAD_REQUEST');
    expect(malformed.text).not.toContain(rejected);
    const tooLong = await call('PATCH', `/token/${created.body}`, { body: { accessToken: `${rejected}${'x'.repeat(1100)}` } });
    expectError(tooLong, 400, 'BAD_REQUEST');
    expect(tooLong.text).not.toContain(rejected);

    // A list filtered by accessToken (the value sits in the query string).
    const filtered = await call('GET', `/token/?filter=${encodeURIComponent(JSON.stringify({ accessToken: stored }))}`, { token: reader });
    expect(filtered.status).toBe(200);
    expect(filtered.body.map((t: { id: number }) => t.id)).toEqual([created.body]);
    expect(filtered.headers.get('x-total-count')).toBe('1');
    const badFilter = await call('GET', `/token/?filter=${encodeURIComponent(JSON.stringify({ accessToken: { gt: 1, x: stored } }))}`);
    expectError(badFilter, 400, 'BAD_REQUEST');
    expect(badFilter.text).not.toContain(stored);

    // Using tokens as bearers: valid, forbidden, unknown, malformed header.
    expect((await call('GET', '/user/', { token: stored })).status).toBe(200);
    const forbidden = await call('POST', '/user/', { token: reader, body: { firstName: 'No', lastName: 'Write' } });
    expectError(forbidden, 403, 'FORBIDDEN');
    const unknown = await call('GET', '/user/', { token: bogus });
    expectError(unknown, 401, 'UNAUTHORIZED');
    expect(unknown.text).not.toContain(bogus);
    const odd = await call('GET', '/user/', { token: null, headers: { Authorization: `Token ${bogus}` } });
    expectError(odd, 401, 'UNAUTHORIZED');
    expect(odd.text).not.toContain(bogus);

    // Change and revoke: PUT with a new value, then the old value stops working.
    const put = await call('PUT', `/token/${created.body}`, { body: { userID: owner.id, accessToken: replaced, scope: 'user:read' } });
    expect(put.status).toBe(200);
    expect(put.body).toBe(1);
    const revoked = await call('GET', '/user/', { token: stored });
    expectError(revoked, 401, 'UNAUTHORIZED');
    const destroyed = await call('DELETE', `/token/${created.body}`);
    expect({ status: destroyed.status, body: destroyed.body }).toEqual({ status: 200, body: 1 });
    expectError(await call('GET', '/user/', { token: replaced }), 401, 'UNAUTHORIZED');

    // The log saw these requests, and none of the secrets.
    expect(svc.logLines.length).toBeGreaterThan(10);
    expect(svc.logLines.some((line) => line.includes('/token'))).toBe(true);
    const log = svc.logLines.join('\n');
    for (const value of [stored, replaced, rejected, bogus, reader, svc.adminToken]) {
      expect(log).not.toContain(value);
    }
    expect(log).not.toMatch(/Bearer\s+\S/i);
    expect(log).not.toMatch(/accessToken/);
  });

  test('password and rememberToken never appear in a response, even when set in the table', async () => {
    const user = await newUser();
    await svc.sql('update users set password = ?, remember_token = ? where id = ?', ['hunter2-hash', 'remember-me-please', user.id]);
    const probes = [
      await call('GET', `/user/${user.id}`),
      await call('GET', `/user/?filter=${encodeURIComponent(JSON.stringify({ id: user.id }))}`),
      // The writes answer the record (Prefer), so there is a record in which the secrets could show.
      await call('PUT', `/user/${user.id}`, {
        body: { firstName: 'P', lastName: 'W', password: 'x', rememberToken: 'y' },
        headers: { Prefer: 'return=representation' },
      }),
      // Attrs naming a read-only field: the name is skipped (SPEC §4), so nothing is written.
      await call('PATCH', `/user/${user.id}`, { body: { password: 'x' }, headers: { Attrs: 'password', Prefer: 'return=representation' } }),
      await call('PATCH', `/user/${user.id}/status/`, { body: { status: 2 }, headers: { Prefer: 'return=representation' } }),
      await call('GET', `/user/?filter=${encodeURIComponent(JSON.stringify({ password: 'hunter2-hash' }))}`),
    ];
    expect(probes.map((p) => p.status)).toEqual([200, 200, 200, 200, 200, 400]);
    expect(probes.slice(2, 5).map((p) => p.body)).toEqual([
      expect.objectContaining({ id: user.id, firstName: 'P', lastName: 'W' }),
      expect.objectContaining({ id: user.id, firstName: 'P', lastName: 'W' }),
      expect.objectContaining({ id: user.id, status: 2 }),
    ]);
    for (const probe of probes) {
      expect(probe.text).not.toContain('hunter2-hash');
      expect(probe.text).not.toContain('remember-me-please');
    }
    const [row] = await svc.sql('select password, remember_token from users where id = ?', [user.id]);
    expect(row).toEqual({ password: 'hunter2-hash', remember_token: 'remember-me-please' });
    expect(svc.logLines.join('\n')).not.toMatch(/hunter2-hash|remember-me-please/);
  });
});

/** Sends raw bytes and reads the whole answer (the server closes the connection after it). */
async function rawRequest(head: string): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  const { port } = new URL(svc.url);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => (data += chunk));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
  const [headText, body] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = headText.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

describe('requests the HTTP parser refuses still get the JSON error body', () => {
  test('a header with a control character → 400 BAD_REQUEST with X-Request-Id', async () => {
    const res = await rawRequest(`GET /user/ HTTP/1.1\r\nHost: x\r\nX-Client: a\u0001b\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ code: 400, error: 'BAD_REQUEST', message: expect.stringMatching(/HTTP/), requestId: res.headers['x-request-id'] });
  });

  test('headers over 64 KiB → 431 HEADERS_TOO_LARGE with X-Request-Id', async () => {
    const res = await rawRequest(`GET /user/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.body).toEqual({ code: 431, error: 'HEADERS_TOO_LARGE', message: expect.any(String), requestId: res.headers['x-request-id'] });
  });
});

describe('a database that goes away', () => {
  // The service reaches PostgreSQL through a TCP proxy that the test cuts, as a network fault would.
  const external = process.env.DATABASE_URL ? test : test.skip;
  external('requests answer 503 UNAVAILABLE (REST and GraphQL), /readyz 503; they recover when it is back', async () => {
    const target = new URL(process.env.DATABASE_URL!);
    const sockets = new Set<Socket>();
    let open = true;
    const proxy = createServer((client) => {
      if (!open) return client.destroy();
      const upstream = connect(Number(target.port || 5432), target.hostname);
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const close = () => (client.destroy(), upstream.destroy());
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as AddressInfo;
    // A database of its own on the same server, reached through the proxy.
    const name = `uts_outage_${randomBytes(4).toString('hex')}`;
    const admin = async (sql: string) => {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
      await client.query(sql);
      await client.end();
    };
    await admin(`create database ${name}`);
    const url = new URL(process.env.DATABASE_URL!);
    url.host = `127.0.0.1:${port}`;
    url.pathname = `/${name}`;
    const lines: string[] = [];
    const config = loadConfig({
      PORT: '0',
      DATABASE_URL: url.toString(),
      BOOTSTRAP_TOKEN: 'outage-admin',
      TOKEN_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'info',
      DB_POOL_SIZE: '2',
    });
    const running = await startService(
      config,
      createLogger('info', (l) => lines.push(l)),
    );
    const get = (path: string, init: RequestInit = {}) =>
      fetch(running.url + path, { ...init, headers: { Authorization: 'Bearer outage-admin', 'Content-Type': 'application/json', ...init.headers } });
    try {
      expect((await get('/user/')).status).toBe(200);
      open = false;
      for (const socket of sockets) socket.destroy();
      for (const [path, init] of [
        ['/user/', {}],
        ['/user/', { method: 'POST', body: JSON.stringify({ firstName: 'A', lastName: 'B' }) }],
      ] as const) {
        const res = await get(path, init);
        expect(res.status).toBe(503);
        expect(await res.json()).toMatchObject({ code: 503, error: 'UNAVAILABLE' });
      }
      const gql = await get('/graphql', { method: 'POST', body: JSON.stringify({ query: '{ users { total } }' }) });
      expect(gql.status).toBe(503);
      expect(((await gql.json()) as any).errors[0].extensions.code).toBe('UNAVAILABLE');
      expect((await fetch(running.url + '/readyz')).status).toBe(503);
      open = true;
      let status = 0;
      for (let i = 0; i < 20 && status !== 200; i++) {
        status = (await get('/user/')).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 250));
      }
      expect(status).toBe(200);
    } finally {
      open = true;
      await running.stop();
      proxy.close();
      for (const socket of sockets) socket.destroy();
      await admin(`drop database if exists ${name} with (force)`);
    }
    expect(lines.join('\n')).not.toContain('outage-admin');
  });
});

describe('connections that PostgreSQL terminates while requests use them', () => {
  const external = process.env.DATABASE_URL ? test : test.skip;
  external('answers 503 meanwhile (never a 500) and serves again at once: no connection stays checked out', async () => {
    const database = new URL(svc.config.databaseUrl!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    const statuses: number[] = [];
    const graphQLCodes = new Set<string>();
    let running = true;
    // REST writes, nested GraphQL reads, and mutations of several root fields (their shared
    // transaction may fail to begin, commit or roll back on a terminated connection).
    const requests = [
      (k: number, i: number) => svc.request('POST', '/token/', { body: { userID: 1, accessToken: `killed-${k}-${i}-${randomBytes(4).toString('hex')}` } }),
      () => svc.graphql('{ users(pageSize: 30) { data { id tokens { total } roles { total } } } }'),
      (k: number, i: number) =>
        svc.graphql(`mutation { a: createUser(input: {firstName: "K", lastName: "A"}) { id } b: createRole(input: {name: "killed-${k}-${i}"}) { id } }`),
    ];
    const load = Array.from({ length: 6 }, async (_, k) => {
      for (let i = 0; running; i++) {
        const reply = await requests[k % requests.length]!(k, i);
        statuses.push(reply.status);
        for (const error of (reply.body as { errors?: { extensions?: { code?: string } }[] })?.errors ?? []) graphQLCodes.add(String(error.extensions?.code));
      }
    });
    try {
      await new Promise((r) => setTimeout(r, 300));
      for (let i = 0; i < 8; i++) {
        await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
        await new Promise((r) => setTimeout(r, 150));
      }
    } finally {
      running = false;
      await Promise.all(load);
      await admin.end();
    }
    expect(statuses.filter((s) => ![200, 201, 503].includes(s))).toEqual([]);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0); // the kills did hit requests
    expect([...graphQLCodes].filter((code) => code !== 'UNAVAILABLE')).toEqual([]);
    // More requests than the pool has connections (4 here): none waits for a leaked one.
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${svc.url}/user/?pageSize=1`, { headers: { Authorization: `Bearer ${svc.adminToken}` }, signal: AbortSignal.timeout(5_000) });
      expect(res.status).toBe(200);
    }
    expect((await fetch(`${svc.url}/readyz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
  });
});

describe('every reply of this file', () => {
  test('X-Request-Id everywhere; no 500; no password/rememberToken keys; no SQL text or stack in error bodies', () => {
    expect(replies.length).toBeGreaterThan(80);
    const hasKey = (value: unknown): boolean =>
      Array.isArray(value)
        ? value.some(hasKey)
        : typeof value === 'object' && value !== null
          ? Object.entries(value).some(([k, v]) => k === 'password' || k === 'rememberToken' || hasKey(v))
          : false;
    for (const reply of replies) {
      expect(reply.headers.get('x-request-id')).toBeTruthy();
      expect(reply.status).toBeLessThan(500);
      expect(hasKey(reply.body)).toBe(false);
      expect(reply.text).not.toMatch(/"(password|rememberToken)"\s*:/);
      if (reply.status >= 400) {
        expect(reply.body).toMatchObject({ code: reply.status, error: expect.any(String), message: expect.any(String) });
        expect(reply.text).not.toMatch(/\bselect\b|\binsert\s+into\b|\bdelete\s+from\b|\bupdate\s+"?\w+"?\s+set\b/i);
        expect(reply.text).not.toMatch(/\n\s+at |\.[tj]s:\d+|node_modules|Error:/);
      }
    }
  });
});

describe('bounded waits on PostgreSQL (DB_LOCK_TIMEOUT_MS, DB_STATEMENT_TIMEOUT_MS)', () => {
  const external = process.env.DATABASE_URL ? test : test.skip;

  /**
   * On a service of its own (env: its timeouts), runs `check` on a fresh user while another session
   * holds that user FOR UPDATE in an open transaction; then nothing may have changed.
   */
  async function whileUserLocked(env: Record<string, string>, check: (target: TestService, id: number) => Promise<void>): Promise<void> {
    const target = await startTestService(env);
    try {
      const id = (await target.request('POST', '/user/', { body: { firstName: 'Locked', lastName: 'Row' } })).body as number;
      expect(id).toEqual(expect.any(Number));
      const before = await target.snapshot();
      const holder = new pg.Client({ connectionString: target.config.databaseUrl });
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query('select id from users where id = $1 for update', [id]);
        await check(target, id);
      } finally {
        await holder.query('rollback').catch(() => {});
        await holder.end();
      }
      expect(await target.snapshot()).toEqual(before);
    } finally {
      await target.stop();
    }
  }

  external(
    'a write that waits longer than the lock timeout for a locked row: 409 CONFLICT (REST and GraphQL); nothing changes; the pool recovers',
    async () => {
      await whileUserLocked({ DB_LOCK_TIMEOUT_MS: '300', DB_POOL_SIZE: '2' }, async (quick, id) => {
        const started = Date.now();
        const rest = await quick.request('PATCH', `/user/${id}`, { body: { firstName: 'Never' }, headers: { Attrs: 'firstName' } });
        expect(rest.status).toBe(409);
        expect(rest.body).toEqual({
          code: 409,
          error: 'CONFLICT',
          message: 'the records are being changed by another request; try again',
          requestId: expect.any(String),
        });
        const gql = await quick.graphql(`mutation { patchUser(id: "${id}", input: { firstName: "Never" }) { id } }`);
        expect(gql.body.errors[0].extensions.code).toBe('CONFLICT');
        expect(Date.now() - started).toBeLessThan(5_000);
        // Requests that need no lock are served meanwhile, with both pool connections free again.
        const reads = await Promise.all([1, 2, 3].map(() => quick.request('GET', `/user/${id}`)));
        expect(reads.map((r) => r.status)).toEqual([200, 200, 200]);
        expect(quick.logLines.join('\n')).not.toMatch(/"level":"error"/);
      });
    },
  );

  external('a statement that runs longer than the statement timeout: 503 UNAVAILABLE, nothing changes', async () => {
    await whileUserLocked({ DB_LOCK_TIMEOUT_MS: '0', DB_STATEMENT_TIMEOUT_MS: '300' }, async (quick, id) => {
      const rest = await quick.request('DELETE', `/user/${id}`);
      expect(rest.status).toBe(503);
      expect(rest.body).toMatchObject({ code: 503, error: 'UNAVAILABLE', message: 'the database took too long to answer; try again shortly' });
    });
  });
});

describe('graceful stop', () => {
  test('in-flight requests finish with Connection: close, idle keep-alive connections close, and the stop ends with them (not at SHUTDOWN_TIMEOUT_MS)', async () => {
    const quick = await startTestService({ SHUTDOWN_TIMEOUT_MS: '20000' });
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const url = new URL(quick.url);
    const send = (method: string, path: string, body?: string, beforeEnd?: () => Promise<void>) =>
      new Promise<{ status: number; connection: string | undefined; text: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            agent,
            host: url.hostname,
            port: url.port,
            method,
            path,
            headers: {
              Authorization: `Bearer ${quick.adminToken}`,
              'Content-Type': 'application/json',
              ...(body ? { 'Content-Length': Buffer.byteLength(body) } : {}),
            },
          },
          (res) => {
            let text = '';
            res.on('data', (chunk) => (text += chunk)).on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, text }));
          },
        );
        req.on('error', reject);
        if (!body) return void req.end();
        req.write(body.slice(0, 5));
        void (beforeEnd ?? (async () => {}))().then(() => req.end(body.slice(5)));
      });
    try {
      const warm = await send('GET', '/user/1');
      expect(warm).toMatchObject({ status: 200, connection: 'keep-alive' });
      let stopping: Promise<void> | undefined;
      const started = Date.now();
      const inFlight = await send('POST', '/user/', JSON.stringify({ firstName: 'Late', lastName: 'Comer' }), async () => {
        await new Promise((resolve) => setTimeout(resolve, 100)); // the server is reading the body
        stopping = quick.running.stop();
        await new Promise((resolve) => setTimeout(resolve, 200));
      });
      expect(inFlight.status).toBe(201);
      expect(inFlight.connection).toBe('close');
      await stopping;
      expect(Date.now() - started).toBeLessThan(5_000);
      // Nothing listens any more.
      await expect(fetch(`${quick.url}/healthz`)).rejects.toThrow();
    } finally {
      agent.destroy();
      await quick.stop();
    }
  });
});

describe('OPTIONS and repeated Authorization headers', () => {
  test.each([
    ['/user/', 'HEAD, GET, POST, OPTIONS'],
    ['/user/1', 'HEAD, GET, PUT, PATCH, DELETE, OPTIONS'],
    ['/user/1/status/', 'PATCH, PUT, OPTIONS'],
  ])('OPTIONS %s: 204 listing every method served there, OPTIONS included; no token needed', async (path, allow) => {
    const res = await svc.request('OPTIONS', path, { token: null });
    expect(res.status).toBe(204);
    expect((res.headers.get('allow') ?? '').split(', ').sort()).toEqual(allow.split(', ').sort());
    expect(res.text).toBe('');
  });

  test('a method no route serves (TRACE, PROPFIND) on an unknown path is a 404; on a known path a 405 with Allow', async () => {
    for (const [method, path] of [
      ['TRACE', '/nope'],
      ['PROPFIND', '/'],
      ['TRACE', '/user/1/nope'],
    ]) {
      const res = await rawRequest(`${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect({ method, path, status: res.status, allow: res.headers.allow, error: res.body.error }).toEqual({
        method,
        path,
        status: 404,
        allow: undefined,
        error: 'NOT_FOUND',
      });
    }
    const known = await rawRequest('TRACE /user/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(known.status).toBe(405);
    expect(known.headers.allow).toBe('HEAD, GET, POST');
  });

  test('OPTIONS /graphql: 204 with GET, HEAD, POST, OPTIONS; OPTIONS on an unknown path stays a 404', async () => {
    const graphql = await fetch(`${svc.url}/graphql`, { method: 'OPTIONS' });
    expect(graphql.status).toBe(204);
    expect(graphql.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    const unknown = await svc.request('OPTIONS', '/nope', { token: null });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 404, error: 'NOT_FOUND' });
  });

  test('two Authorization headers: 400 BAD_REQUEST on REST and GraphQL, whichever comes first; nothing is written', async () => {
    const before = await svc.snapshot();
    const two = `Authorization: Bearer ${svc.adminToken}\r\nAuthorization: Bearer other-value\r\n`;
    const body = JSON.stringify({ firstName: 'Two', lastName: 'Headers' });
    const rest = await rawRequest(
      `POST /user/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${two}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({ code: 400, error: 'BAD_REQUEST', message: 'send one Authorization header, not 2', requestId: rest.headers['x-request-id'] });
    const query = JSON.stringify({ query: 'mutation { createRole(input: { name: "two-headers" }) { id } }' });
    const graphql = await rawRequest(
      `POST /graphql HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${two}Content-Type: application/json\r\nContent-Length: ${query.length}\r\n\r\n${query}`,
    );
    expect(graphql.status).toBe(400);
    expect(graphql.body.errors[0]).toMatchObject({ message: 'send one Authorization header, not 2', extensions: { code: 'BAD_REQUEST' } });
    expect(await svc.snapshot()).toEqual(before);
    expect(JSON.stringify([rest, graphql])).not.toContain(svc.adminToken);
  });
});
