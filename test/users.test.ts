import { startTestService, type TestService } from './support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const ada = { firstName: 'Ada', lastName: 'Lovelace', ref: 7, outKey: 'ada-1', status: 1 };

describe('POST /user/', () => {
  test('creates a user: 201, Location, the record, defaults for absent fields', async () => {
    const res = await svc.request('POST', '/user/', { body: { firstName: 'Grace', lastName: 'Hopper' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/user/${res.body.id}`);
    expect(res.body).toEqual({
      id: expect.any(Number),
      ref: 0,
      outKey: null,
      firstName: 'Grace',
      lastName: 'Hopper',
      avatarUrl: null,
      photoUrl: null,
      status: 0,
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      updatedAt: expect.stringMatching(/Z$/),
    });
    const [row] = await svc.sql('select first_name, password, remember_token from users where id = ?', [res.body.id]);
    expect(row).toEqual({ first_name: 'Grace', password: '', remember_token: null });
  });

  test('ignores fields outside the writable set, never writes password or rememberToken', async () => {
    const res = await svc.request('POST', '/user/', {
      body: { ...ada, id: 999999, password: 'secret', rememberToken: 'r', createdAt: '2000-01-01T00:00:00Z' },
    });
    expect(res.status).toBe(201);
    expect(res.body.id).not.toBe(999999);
    expect(res.body).not.toHaveProperty('password');
    expect(res.body).not.toHaveProperty('rememberToken');
    expect(res.body.createdAt).not.toBe('2000-01-01T00:00:00.000Z');
    const [row] = await svc.sql('select password, remember_token from users where id = ?', [res.body.id]);
    expect(row).toEqual({ password: '', remember_token: null });
  });

  test.each([
    [{ lastName: 'X' }, 'firstName', 'is required'],
    [{ firstName: 'X', lastName: 5 }, 'lastName', 'must be a string'],
    [{ firstName: 'X', lastName: 'Y', status: 1.5 }, 'status', 'must be an integer'],
    [{ firstName: 'X', lastName: 'Y', status: 2 ** 31 }, 'status', 'must be between'],
    [{ firstName: 'X', lastName: 'Y', ref: 2 ** 53 }, 'ref', 'must be between'],
    [{ firstName: 'x'.repeat(256), lastName: 'Y' }, 'firstName', 'at most 255'],
    [{ firstName: 'X', lastName: 'Y', avatarUrl: 'x'.repeat(2049) }, 'avatarUrl', 'at most 2048'],
    [{ firstName: 'X', lastName: null }, 'lastName', 'must not be null'],
    [{ firstName: 'X\u0000', lastName: 'Y' }, 'firstName', 'NUL'],
  ])('rejects %j with 400 naming %s, and stores nothing', async (body, field, message) => {
    const [{ count: before }] = await svc.sql<{ count: string }>('select count(*) from users');
    const res = await svc.request('POST', '/user/', { body });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 400, error: 'BAD_REQUEST', requestId: expect.any(String) });
    expect(res.body.details).toEqual(expect.arrayContaining([{ field, message: expect.stringContaining(message) }]));
    const [{ count: after }] = await svc.sql<{ count: string }>('select count(*) from users');
    expect(after).toBe(before);
  });

  test('lengths count characters, as PostgreSQL does: 255 emoji fit in a 255-character field, 256 do not', async () => {
    const fits = '😀'.repeat(255);
    const res = await svc.request('POST', '/user/', { body: { firstName: fits, lastName: 'é'.repeat(255) } });
    expect(res.status).toBe(201);
    expect(res.body.firstName).toBe(fits);
    const [row] = await svc.sql<{ n: number }>('select char_length(first_name) as n from users where id = ?', [res.body.id]);
    expect(Number(row.n)).toBe(255);
    const over = await svc.request('POST', '/user/', { body: { firstName: '😀'.repeat(256), lastName: 'X' } });
    expect(over.status).toBe(400);
    expect(over.body.details).toEqual([{ field: 'firstName', message: 'must be at most 255 characters' }]);
  });

  test('a body that is not an object is a 400', async () => {
    const res = await svc.request('POST', '/user/', { body: [1, 2] });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/JSON object/);
  });
});

describe('GET /user/{id}', () => {
  test('returns the record; unknown id 404; malformed id 400', async () => {
    const created = await svc.request('POST', '/user/', { body: ada });
    const res = await svc.request('GET', `/user/${created.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
    expect((await svc.request('GET', '/user/987654')).status).toBe(404);
    const bad = await svc.request('GET', '/user/abc');
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ field: 'id', message: 'must be a positive integer' }]);
  });
});

describe('PUT /user/{id}', () => {
  test('replaces every writable field (absent → default) and keeps createdAt', async () => {
    const created = await svc.request('POST', '/user/', { body: ada });
    const res = await svc.request('PUT', `/user/${created.body.id}`, { body: { firstName: 'A', lastName: 'B' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.body.id, firstName: 'A', lastName: 'B', ref: 0, outKey: null, status: 0 });
    expect(res.body.createdAt).toBe(created.body.createdAt);
    const [row] = await svc.sql('select out_key, status from users where id = ?', [created.body.id]);
    expect(row).toEqual({ out_key: null, status: 0 });
  });

  test('on an id that was never handed out answers 404 and creates nothing', async () => {
    const res = await svc.request('PUT', '/user/5000000', { body: { firstName: 'A', lastName: 'B' } });
    expect(res.status).toBe(404);
    expect(await svc.sql('select id from users where id = 5000000')).toEqual([]);
  });

  test('invalid body: 400 and the record is unchanged', async () => {
    const created = await svc.request('POST', '/user/', { body: ada });
    const res = await svc.request('PUT', `/user/${created.body.id}`, { body: { firstName: 'A' } });
    expect(res.status).toBe(400);
    expect((await svc.request('GET', `/user/${created.body.id}`)).body).toEqual(created.body);
  });
});

describe('apply id, then PUT', () => {
  test('reserves the next id; PUT creates it once (201), then updates (200)', async () => {
    const applied = await svc.request('POST', '/apply/user/id/');
    expect(applied.status).toBe(201);
    expect(applied.body).toEqual({ id: expect.any(Number) });
    const id = applied.body.id;
    expect((await svc.request('GET', `/user/${id}`)).status).toBe(404);

    const first = await svc.request('PUT', `/user/${id}`, { body: { firstName: 'Late', lastName: 'Comer' } });
    expect(first.status).toBe(201);
    expect(first.headers.get('location')).toBe(`/user/${id}`);
    expect(first.body).toMatchObject({ id, firstName: 'Late' });

    const again = await svc.request('PUT', `/user/${id}`, { body: { firstName: 'Late', lastName: 'Comer' } });
    expect(again.status).toBe(200);
    expect(await svc.sql('select count(*)::int as n from users where id = ?', [id])).toEqual([{ n: 1 }]);
  });

  test('ids are never handed out twice, by apply or create', async () => {
    const a = await svc.request('POST', '/apply/user/id/', { body: { anything: true } });
    const created = await svc.request('POST', '/user/', { body: ada });
    const b = await svc.request('POST', '/apply/user/id/');
    expect(new Set([a.body.id, created.body.id, b.body.id]).size).toBe(3);
    expect(created.body.id).toBeGreaterThan(a.body.id);
    expect(b.body.id).toBeGreaterThan(created.body.id);
  });
});

describe('PATCH /user/{id}', () => {
  test('with Attrs changes only the named fields', async () => {
    const created = await svc.request('POST', '/user/', { body: ada });
    const res = await svc.request('PATCH', `/user/${created.body.id}`, {
      body: { lastName: 'Byron', firstName: 'ignored', status: 9 },
      headers: { attrs: 'lastName' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ firstName: 'Ada', lastName: 'Byron', status: 1 });
  });

  test('without Attrs changes the fields present in the body', async () => {
    const created = await svc.request('POST', '/user/', { body: ada });
    const res = await svc.request('PATCH', `/user/${created.body.id}`, { body: { status: 3, outKey: null } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ firstName: 'Ada', status: 3, outKey: null, ref: 7 });
  });

  test('an unknown name in Attrs is a 400 and changes nothing', async () => {
    const created = await svc.request('POST', '/user/', { body: ada });
    const res = await svc.request('PATCH', `/user/${created.body.id}`, {
      body: { lastName: 'X', password: 'p' },
      headers: { Attrs: 'lastName,password' },
    });
    expect(res.status).toBe(400);
    expect(res.body.details[0]).toMatchObject({ field: 'Attrs' });
    expect((await svc.request('GET', `/user/${created.body.id}`)).body.lastName).toBe('Lovelace');
  });
});

describe('status', () => {
  test.each(['PATCH', 'PUT'])('%s /user/{id}/status/ sets the status', async (method) => {
    const created = await svc.request('POST', '/user/', { body: ada });
    const res = await svc.request(method, `/user/${created.body.id}/status/`, { body: { status: 42 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.body.id, status: 42, firstName: 'Ada' });
    const bad = await svc.request(method, `/user/${created.body.id}/status/`, { body: { status: 'x' } });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ field: 'status', message: 'must be an integer' }]);
    const missing = await svc.request(method, `/user/${created.body.id}/status`, { body: {} });
    expect(missing.status).toBe(400);
  });
});

describe('DELETE /user/{id}', () => {
  test('soft-deletes: 204, gone from reads and lists, row kept, second delete 404', async () => {
    const created = await svc.request('POST', '/user/', { body: { ...ada, outKey: 'to-delete' } });
    const id = created.body.id;
    const res = await svc.request('DELETE', `/user/${id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await svc.request('GET', `/user/${id}`)).status).toBe(404);
    const list = await svc.request('GET', `/user/?filter=${encodeURIComponent(JSON.stringify({ outKey: 'to-delete' }))}`);
    expect(list.body.total).toBe(0);
    const [row] = await svc.sql<{ deleted: boolean }>('select deleted_at is not null as deleted from users where id = ?', [id]);
    expect(row.deleted).toBe(true);
    expect((await svc.request('DELETE', `/user/${id}`)).status).toBe(404);
    expect((await svc.request('PUT', `/user/${id}`, { body: { firstName: 'A', lastName: 'B' } })).status).toBe(404);
  });

  test("a deleted user's tokens stop authenticating", async () => {
    const user = await svc.request('POST', '/user/', { body: ada });
    await svc.request('POST', '/token/', { body: { userID: user.body.id, accessToken: `t-${user.body.id}-x`, scope: 'user:read' } });
    expect((await svc.request('GET', '/user/', { token: `t-${user.body.id}-x` })).status).toBe(200);
    await svc.request('DELETE', `/user/${user.body.id}`);
    const res = await svc.request('GET', '/user/', { token: `t-${user.body.id}-x` });
    expect(res.status).toBe(401);
  });
});

describe('hot path', () => {
  test('authenticating a request is one query, on the unique index of live tokens', async () => {
    const created = await svc.request('POST', '/user/', { body: ada });
    svc.queries.length = 0;
    const res = await svc.request('GET', `/user/${created.body.id}`);
    expect(res.status).toBe(200);
    // One statement authenticates, one reads the user.
    expect(svc.queries).toHaveLength(2);
    expect(svc.queries[0]).toMatch(/access_token_hash/);
    const plan = await svc.sql<{ 'QUERY PLAN': string }>(
      `explain select t.id from tokens t join users u on u.id = t.user_id
       where t.access_token_hash = utf8_sha256('x') and t.deleted_at is null and u.deleted_at is null`,
    );
    expect(JSON.stringify(plan)).toMatch(/tokens_access_token_hash_live_uq/);
  });
});
