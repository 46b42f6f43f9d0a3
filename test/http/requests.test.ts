import { randomBytes } from 'node:crypto';
import { rawRequest } from '../support/raw-http.js';
import { startTestService, type RequestOptions, type Reply, type TestService } from '../support/service.js';
import { svc, replies, call, userCount, expectError, newUser, useService } from '../support/http.js';

/**
 * HTTP behaviour shared by every path (SPEC §4 paths, §6 errors): unknown paths and methods,
 * body parsing limits and media types, X-Request-Id, trailing slashes, health probes, BASE_PATH,
 * and what must never leak (secrets in logs, password/rememberToken, SQL text, stacks).
 */
useService();

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

  // Found by review: a path that matched BASE_PATH in another letter case (/API/…) reached the
  // handler with no caller authenticated.
  describe('matched in another letter case', () => {
    let api: TestService;
    beforeAll(async () => {
      api = await startTestService({ BASE_PATH: '/api' });
    });
    afterAll(async () => {
      await api?.stop();
    });

    // DELETE last: once fixed, with the admin token it may delete user 1 (the token's own user).
    const requests: [string, string, unknown?][] = [
      ['GET', '/API/user/1'],
      ['PATCH', '/API/user/1', { firstName: 'X' }],
      ['POST', '/API/user/', { firstName: 'X', lastName: 'Y' }],
      ['GET', '/Api/token/'],
      ['GET', '/API/user/1/role/'],
      ['GET', '/aPI/audit'],
      ['POST', '/API/oauth/introspect', { token: 'not-a-token' }],
      ['DELETE', '/API/user/1'],
    ];

    /** `path` is relative to the service root, not to BASE_PATH (the request helper prepends it). */
    const send = async (method: string, path: string, body: unknown, token: string | null): Promise<Reply> => {
      const headers: Record<string, string> = { Accept: 'application/json' };
      if (token) headers.Authorization = `Bearer ${token}`;
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const response = await fetch(api.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, body: null };
    };

    // Defect: "/API/…" reaches the route handler with no caller authenticated (answers 500, or runs it).
    test('without a token: 401 (as under /api) or 404 (unknown path), never a handler run', async () => {
      expect((await send('GET', '/api/user/1', undefined, null)).status).toBe(401);
      const before = await api.snapshot();
      const seen = [];
      for (const [method, path, body] of requests) {
        const reply = await send(method, path, body, null);
        seen.push({ method, path, status: reply.status, ok: reply.status === 401 || reply.status === 404 });
      }
      expect(seen).toEqual(seen.map((s) => ({ ...s, ok: true })));
      expect(await api.snapshot()).toEqual(before);
    });

    // Defect: the same requests with a valid token must not crash either.
    test('with a valid token: never a 500', async () => {
      const seen = [];
      for (const [method, path, body] of requests) {
        const reply = await send(method, path, body, api.adminToken);
        seen.push({ method, path, status: reply.status, serverError: reply.status >= 500 });
      }
      expect(seen).toEqual(seen.map((s) => ({ ...s, serverError: false })));
    });
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

describe('requests the HTTP parser refuses still get the JSON error body', () => {
  test('a header with a control character → 400 BAD_REQUEST with X-Request-Id', async () => {
    const res = await rawRequest(svc.url, `GET /user/ HTTP/1.1\r\nHost: x\r\nX-Client: a\u0001b\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ code: 400, error: 'BAD_REQUEST', message: expect.stringMatching(/HTTP/), requestId: res.headers['x-request-id'] });
  });

  test('headers over 64 KiB → 431 HEADERS_TOO_LARGE with X-Request-Id', async () => {
    const res = await rawRequest(svc.url, `GET /user/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.body).toEqual({ code: 431, error: 'HEADERS_TOO_LARGE', message: expect.any(String), requestId: res.headers['x-request-id'] });
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
      const res = await rawRequest(svc.url, `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect({ method, path, status: res.status, allow: res.headers.allow, error: res.body.error }).toEqual({
        method,
        path,
        status: 404,
        allow: undefined,
        error: 'NOT_FOUND',
      });
    }
    const known = await rawRequest(svc.url, 'TRACE /user/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
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

  test('OPTIONS on the pages and their files (/graphiql, /docs): 204 with Allow, as GET and HEAD answer 200; another method a 405', async () => {
    for (const path of ['/graphiql', '/graphiql/', '/graphiql/graphiql.js', '/docs', '/docs/swagger-ui.css']) {
      expect({ path, status: (await fetch(`${svc.url}${path}`)).status }).toEqual({ path, status: 200 });
      expect({ path, status: (await fetch(`${svc.url}${path}`, { method: 'HEAD' })).status }).toEqual({ path, status: 200 });
      const res = await svc.request('OPTIONS', path, { token: null });
      expect({ path, status: res.status, text: res.text }).toEqual({ path, status: 204, text: '' });
      expect((res.headers.get('allow') ?? '').split(', ').sort()).toEqual(['GET', 'HEAD', 'OPTIONS']);
    }
    for (const path of ['/graphiql', '/graphiql/graphiql.js', '/docs/swagger-ui.css']) {
      const post = await svc.request('POST', path, { token: null, body: {} });
      expectError(post, 405, 'METHOD_NOT_ALLOWED');
      expect(post.headers.get('allow')).toBe('GET, HEAD');
    }
  });

  test('two Authorization headers: 400 BAD_REQUEST on REST and GraphQL, whichever comes first; nothing is written', async () => {
    const before = await svc.snapshot();
    const two = `Authorization: Bearer ${svc.adminToken}\r\nAuthorization: Bearer other-value\r\n`;
    const body = JSON.stringify({ firstName: 'Two', lastName: 'Headers' });
    const rest = await rawRequest(
      svc.url,
      `POST /user/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${two}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({ code: 400, error: 'BAD_REQUEST', message: 'send one Authorization header, not 2', requestId: rest.headers['x-request-id'] });
    const query = JSON.stringify({ query: 'mutation { createRole(input: { name: "two-headers" }) { id } }' });
    const graphql = await rawRequest(
      svc.url,
      `POST /graphql HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${two}Content-Type: application/json\r\nContent-Length: ${query.length}\r\n\r\n${query}`,
    );
    expect(graphql.status).toBe(400);
    expect(graphql.body.errors[0]).toMatchObject({ message: 'send one Authorization header, not 2', extensions: { code: 'BAD_REQUEST' } });
    expect(await svc.snapshot()).toEqual(before);
    expect(JSON.stringify([rest, graphql])).not.toContain(svc.adminToken);
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
