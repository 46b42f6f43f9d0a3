import { startTestService, type TestService } from '../support/service.js';
import { ISO, recordOf } from '../support/contracts.js';
import { createUser } from '../support/users.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const ada = { firstName: 'Ada', lastName: 'Lovelace', ref: 7, outKey: 'ada-1', status: 1 };

const REPRESENTATION = { Prefer: 'return=representation' };

/** POST /user/ with Prefer: return=representation: the created record. */
async function createUserRecord(body: Record<string, unknown> = ada) {
  const res = await svc.request('POST', '/user/', { body, headers: REPRESENTATION });
  expect(res.status).toBe(201);
  return res.body as Record<string, any> & { id: number };
}

const getUser = async (id: number) => {
  const res = await svc.request('GET', `/user/${id}`);
  expect(res.status).toBe(200);
  return res.body as Record<string, any>;
};

describe('POST /user/', () => {
  test('creates a user: 201, Location, the new id as a bare number; defaults for absent fields', async () => {
    const res = await svc.request('POST', '/user/', { body: { firstName: 'Grace', lastName: 'Hopper' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(expect.any(Number));
    expect(res.text).toBe(String(res.body));
    expect(res.headers.get('location')).toBe(`/user/${res.body}`);
    expect(res.headers.get('vary')).toMatch(/\bPrefer\b/i);
    expect(res.headers.get('preference-applied')).toBeNull();
    expect(await getUser(res.body)).toEqual(recordOf('user', { id: res.body, firstName: 'Grace', lastName: 'Hopper' }));
    const [row] = await svc.sql('select first_name, password, remember_token from users where id = ?', [res.body]);
    expect(row).toEqual({ first_name: 'Grace', password: '', remember_token: null });
  });

  test('with Prefer: return=representation answers the created record', async () => {
    const res = await svc.request('POST', '/user/', { body: { firstName: 'Grace', lastName: 'Hopper' }, headers: REPRESENTATION });
    expect(res.status).toBe(201);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.headers.get('vary')).toMatch(/\bPrefer\b/i);
    expect(res.body).toEqual(recordOf('user', { firstName: 'Grace', lastName: 'Hopper' }));
    expect(res.headers.get('location')).toBe(`/user/${res.body.id}`);
    expect(await getUser(res.body.id)).toEqual(res.body);
  });

  test('ignores fields outside the writable set, never writes password or rememberToken', async () => {
    const res = await svc.request('POST', '/user/', {
      body: { ...ada, password: 'secret', rememberToken: 'r', createdAt: '2000-01-01T00:00:00Z' },
      headers: REPRESENTATION,
    });
    expect(res.status).toBe(201);
    expect(res.body).not.toHaveProperty('password');
    expect(res.body).not.toHaveProperty('rememberToken');
    expect(res.body.createdAt).not.toBe('2000-01-01T00:00:00.000Z');
    const stored = await getUser(res.body.id);
    expect(stored).not.toHaveProperty('password');
    expect(stored.createdAt).not.toBe('2000-01-01T00:00:00.000Z');
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
    const id = await createUser(svc, { firstName: fits, lastName: 'é'.repeat(255) });
    expect((await getUser(id)).firstName).toBe(fits);
    const [row] = await svc.sql<{ n: number }>('select char_length(first_name) as n from users where id = ?', [id]);
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

describe('POST /user/ with an id in the body', () => {
  test('an id reserved by apply and unused: the user is created with that id, once', async () => {
    const applied = await svc.request('POST', '/apply/user/id/');
    expect(applied.status).toBe(201);
    const id = applied.body as number;
    const res = await svc.request('POST', '/user/', { body: { ...ada, id } });
    expect(res.status).toBe(201);
    expect(res.body).toBe(id);
    expect(res.headers.get('location')).toBe(`/user/${id}`);
    expect(await getUser(id)).toMatchObject({ id, firstName: 'Ada', lastName: 'Lovelace', ref: 7, outKey: 'ada-1', status: 1 });
    expect(await svc.sql('select id::int as id from id_reservations where resource = ? and id = ?', ['user', id])).toEqual([]);

    // The reservation is used up: the same id again names an existing user.
    const before = await svc.snapshot({ sequences: false });
    const again = await svc.request('POST', '/user/', { body: { ...ada, id } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 409, error: 'CONFLICT' });
    expect(await svc.snapshot({ sequences: false })).toEqual(before);
  });

  test('the id of a deleted user is a 409 and nothing is created or revived', async () => {
    const id = await createUser(svc, ada);
    expect((await svc.request('DELETE', `/user/${id}`)).status).toBe(200);
    const before = await svc.snapshot({ sequences: false });
    const res = await svc.request('POST', '/user/', { body: { ...ada, id } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 409, error: 'CONFLICT' });
    expect(await svc.snapshot({ sequences: false })).toEqual(before);
    expect((await svc.request('GET', `/user/${id}`)).status).toBe(404);
  });

  test.each([
    ['never handed out', 999999],
    ['not a positive integer', -3],
    ['a string', '12'],
  ])('an id %s is a 400 naming id, and stores nothing', async (_label, id) => {
    const before = await svc.snapshot();
    const res = await svc.request('POST', '/user/', { body: { ...ada, id } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 400, error: 'BAD_REQUEST' });
    expect(res.body.details).toEqual([{ field: 'id', message: expect.any(String) }]);
    expect(await svc.snapshot()).toEqual(before);
  });

  test.each([0, null])('id %j means no id: the next id is used', async (id) => {
    const applied = (await svc.request('POST', '/apply/user/id/')).body as number;
    const res = await svc.request('POST', '/user/', { body: { ...ada, id } });
    expect(res.status).toBe(201);
    expect(res.body).toBeGreaterThan(applied);
    expect((await getUser(res.body)).firstName).toBe('Ada');
  });
});

describe('GET /user/{id}', () => {
  test('returns the record; unknown id 404; malformed id 400', async () => {
    const created = await createUserRecord();
    const res = await svc.request('GET', `/user/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
    expect((await svc.request('GET', '/user/987654')).status).toBe(404);
    const bad = await svc.request('GET', '/user/abc');
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ field: 'id', message: 'must be a positive integer' }]);
  });
});

describe('PUT /user/{id}', () => {
  test('replaces every writable field (absent → default) and keeps createdAt: 200, body 1', async () => {
    const created = await createUserRecord();
    const res = await svc.request('PUT', `/user/${created.id}`, { body: { firstName: 'A', lastName: 'B' } });
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect(res.headers.get('location')).toBeNull();
    const stored = await getUser(created.id);
    expect(stored).toMatchObject({ id: created.id, firstName: 'A', lastName: 'B', ref: 0, outKey: null, status: 0 });
    expect(stored.createdAt).toBe(created.createdAt);
    const [row] = await svc.sql('select out_key, status from users where id = ?', [created.id]);
    expect(row).toEqual({ out_key: null, status: 0 });
  });

  test('with Prefer: return=representation answers the replaced record', async () => {
    const created = await createUserRecord();
    const res = await svc.request('PUT', `/user/${created.id}`, { body: { firstName: 'C', lastName: 'D', status: 5 }, headers: REPRESENTATION });
    expect(res.status).toBe(200);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.body).toMatchObject({ id: created.id, firstName: 'C', lastName: 'D', ref: 0, outKey: null, status: 5, createdAt: created.createdAt });
    expect(await getUser(created.id)).toEqual(res.body);
  });

  test('on an id that was never handed out answers 404 and creates nothing', async () => {
    const res = await svc.request('PUT', '/user/5000000', { body: { firstName: 'A', lastName: 'B' } });
    expect(res.status).toBe(404);
    expect(await svc.sql('select id from users where id = 5000000')).toEqual([]);
  });

  test('invalid body: 400 and the record is unchanged', async () => {
    const created = await createUserRecord();
    const res = await svc.request('PUT', `/user/${created.id}`, { body: { firstName: 'A' } });
    expect(res.status).toBe(400);
    expect(await getUser(created.id)).toEqual(created);
  });
});

describe('apply id, then PUT', () => {
  test('reserves the next id; PUT creates it once (201), then updates (200)', async () => {
    const applied = await svc.request('POST', '/apply/user/id/');
    expect(applied.status).toBe(201);
    expect(applied.body).toEqual(expect.any(Number));
    expect(applied.text).toBe(String(applied.body));
    const id = applied.body as number;
    expect((await svc.request('GET', `/user/${id}`)).status).toBe(404);

    const first = await svc.request('PUT', `/user/${id}`, { body: { firstName: 'Late', lastName: 'Comer' } });
    expect(first.status).toBe(201);
    expect(first.headers.get('location')).toBe(`/user/${id}`);
    expect(first.body).toBe(1); // an update's answer, though it created
    expect(await getUser(id)).toMatchObject({ id, firstName: 'Late', lastName: 'Comer' });

    const again = await svc.request('PUT', `/user/${id}`, { body: { firstName: 'Later', lastName: 'Comer' } });
    expect(again.status).toBe(200);
    expect(again.body).toBe(1);
    expect((await getUser(id)).firstName).toBe('Later');
    expect(await svc.sql('select count(*)::int as n from users where id = ?', [id])).toEqual([{ n: 1 }]);
  });

  test('PUTs racing a POST of the same applied id, or each other: never a 404; one creates, the others update; the record as the audit log tells', async () => {
    const statuses: Record<string, number> = {};
    // Ten rounds of a POST and eight PUTs at once, then four of eight PUTs alone.
    for (let round = 0; round < 14; round++) {
      const withPost = round < 10;
      const id = (await svc.request('POST', '/apply/user/id/')).body as number;
      const [post, ...puts] = await Promise.all([
        withPost ? svc.request('POST', '/user/', { body: { id, firstName: 'Posted', lastName: `Round ${round}` } }) : null,
        ...Array.from({ length: 8 }, (_, i) => svc.request('PUT', `/user/${id}`, { body: { firstName: `Put ${i}`, lastName: `Round ${round}` } })),
      ]);
      for (const [method, reply] of [...(post ? [['POST', post] as const] : []), ...puts.map((put) => ['PUT', put] as const)]) {
        statuses[`${method} ${reply.status}`] = (statuses[`${method} ${reply.status}`] ?? 0) + 1;
      }
      // A PUT creates or updates; the POST creates, or finds the id taken by a PUT that created first (409).
      for (const put of puts) expect([200, 201]).toContain(put.status);
      if (post) expect([201, 409]).toContain(post.status);
      const creators = [...(post?.status === 201 ? [post] : []), ...puts.filter((put) => put.status === 201)];
      expect(creators).toHaveLength(1);
      // The apply, one create, then the updates that changed something: folded in order, they are the record.
      const events = await svc.sql<{ action: string; changes: Record<string, { after: unknown }> }>(
        `select action, changes from audit_events where resource = 'user' and record_id = ? order by id`,
        [id],
      );
      expect(events.map((e) => e.action)).toEqual(['apply', 'create', ...Array(events.length - 2).fill('update')]);
      const told: Record<string, unknown> = {};
      for (const { changes } of events) for (const [field, change] of Object.entries(changes)) told[field] = change.after;
      expect(await getUser(id)).toMatchObject({ id, firstName: told.firstName, lastName: `Round ${round}` });
    }
  });

  test('ids are never handed out twice, by apply or create', async () => {
    const a = await svc.request('POST', '/apply/user/id/', { body: { anything: true } });
    const created = await createUser(svc, ada);
    const b = await svc.request('POST', '/apply/user/id/');
    expect(new Set([a.body, created, b.body]).size).toBe(3);
    expect(created).toBeGreaterThan(a.body);
    expect(b.body).toBeGreaterThan(created);
  });
});

describe('PATCH /user/{id}', () => {
  test('with Attrs changes only the named fields', async () => {
    const id = await createUser(svc, ada);
    const res = await svc.request('PATCH', `/user/${id}`, {
      body: { lastName: 'Byron', firstName: 'ignored', status: 9 },
      headers: { attrs: 'lastName' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect(await getUser(id)).toMatchObject({ firstName: 'Ada', lastName: 'Byron', status: 1, ref: 7, outKey: 'ada-1' });
  });

  test('Attrs names are trimmed and case-insensitive; a named field missing from the body gets its default', async () => {
    const id = await createUser(svc, ada);
    const res = await svc.request('PATCH', `/user/${id}`, {
      body: { lastName: 'Byron' },
      headers: { Attrs: ' LastName ,status,OUTKEY ' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect(await getUser(id)).toMatchObject({ firstName: 'Ada', lastName: 'Byron', status: 0, outKey: null, ref: 7 });
  });

  test('Attrs naming read-only fields skips them; password is never written', async () => {
    const created = await createUserRecord();
    const res = await svc.request('PATCH', `/user/${created.id}`, {
      body: { lastName: 'X', password: 'p', id: 3, createdAt: '2000-01-01T00:00:00Z' },
      headers: { Attrs: 'lastName,password,id,createdAt,rememberToken', ...REPRESENTATION },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.id, lastName: 'X', firstName: 'Ada', createdAt: created.createdAt });
    expect(res.body).not.toHaveProperty('password');
    const [row] = await svc.sql('select password, remember_token from users where id = ?', [created.id]);
    expect(row).toEqual({ password: '', remember_token: null });
  });

  test('without Attrs changes the fields present in the body', async () => {
    const id = await createUser(svc, ada);
    const res = await svc.request('PATCH', `/user/${id}`, { body: { status: 3, outKey: null } });
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect(await getUser(id)).toMatchObject({ firstName: 'Ada', status: 3, outKey: null, ref: 7 });
  });

  test('with Prefer: return=representation answers the patched record', async () => {
    const created = await createUserRecord();
    const res = await svc.request('PATCH', `/user/${created.id}`, { body: { status: 4 }, headers: REPRESENTATION });
    expect(res.status).toBe(200);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.body).toEqual({ ...created, status: 4, updatedAt: expect.stringMatching(ISO) });
    expect(await getUser(created.id)).toEqual(res.body);
  });

  test('an unknown name in Attrs is a 400 and changes nothing', async () => {
    const id = await createUser(svc, ada);
    const before = await getUser(id);
    const res = await svc.request('PATCH', `/user/${id}`, {
      body: { lastName: 'X', nickname: 'p' },
      headers: { Attrs: 'lastName,nickname' },
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ field: 'Attrs', message: expect.stringContaining('"nickname"') }]);
    expect(await getUser(id)).toEqual(before);
  });
});

describe('status', () => {
  test.each(['PATCH', 'PUT'])('%s /user/{id}/status/ sets the status', async (method) => {
    const id = await createUser(svc, ada);
    const res = await svc.request(method, `/user/${id}/status/`, { body: { status: 42 } });
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect(await getUser(id)).toMatchObject({ id, status: 42, firstName: 'Ada' });
    const represented = await svc.request(method, `/user/${id}/status/`, { body: { status: 43 }, headers: REPRESENTATION });
    expect(represented.status).toBe(200);
    expect(represented.headers.get('preference-applied')).toBe('return=representation');
    expect(represented.body).toMatchObject({ id, status: 43, firstName: 'Ada' });
    const bad = await svc.request(method, `/user/${id}/status/`, { body: { status: 'x' } });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ field: 'status', message: 'must be an integer' }]);
    const missing = await svc.request(method, `/user/${id}/status`, { body: {} });
    expect(missing.status).toBe(400);
    expect((await getUser(id)).status).toBe(43);
  });
});

describe('DELETE /user/{id}', () => {
  test('soft-deletes: 200 with body 1, gone from reads and lists, row kept, second delete 404', async () => {
    const id = await createUser(svc, { ...ada, outKey: 'to-delete' });
    const res = await svc.request('DELETE', `/user/${id}`);
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect(res.text).toBe('1');
    expect((await svc.request('GET', `/user/${id}`)).status).toBe(404);
    const list = await svc.request('GET', `/user/?filter=${encodeURIComponent(JSON.stringify({ outKey: 'to-delete' }))}`);
    expect(list.status).toBe(200);
    expect(list.headers.get('x-total-count')).toBe('0');
    expect(list.body).toEqual([]);
    const [row] = await svc.sql<{ deleted: boolean }>('select deleted_at is not null as deleted from users where id = ?', [id]);
    expect(row.deleted).toBe(true);
    expect((await svc.request('DELETE', `/user/${id}`)).status).toBe(404);
    expect((await svc.request('PUT', `/user/${id}`, { body: { firstName: 'A', lastName: 'B' } })).status).toBe(404);
  });

  test("a deleted user's tokens stop authenticating", async () => {
    const id = await createUser(svc, ada);
    const token = await svc.request('POST', '/token/', { body: { userID: id, accessToken: `t-${id}-x`, scope: 'user:read' } });
    expect(token.status).toBe(201);
    expect((await svc.request('GET', '/user/', { token: `t-${id}-x` })).status).toBe(200);
    expect((await svc.request('DELETE', `/user/${id}`)).body).toBe(1);
    const res = await svc.request('GET', '/user/', { token: `t-${id}-x` });
    expect(res.status).toBe(401);
  });
});

describe('hot path', () => {
  test('authenticating a request is one query, on the unique index of live tokens', async () => {
    const id = await createUser(svc, ada);
    svc.queries.length = 0;
    const res = await svc.request('GET', `/user/${id}`);
    expect(res.status).toBe(200);
    // One statement authenticates, one reads the user.
    expect(svc.queries).toHaveLength(2);
    // By the keyed hash of the bearer value (SPEC §9), never the value itself.
    expect(svc.queries[0]).toMatch(/access_token_hmac = /);
    expect(svc.queries[0]).not.toContain(svc.adminToken);
    const plan = await svc.sql<{ 'QUERY PLAN': string }>(
      `explain select t.id from tokens t join users u on u.id = t.user_id
       where t.access_token_hmac = ? and t.deleted_at is null and u.deleted_at is null`,
      [svc.hmac('x')],
    );
    expect(JSON.stringify(plan)).toMatch(/tokens_access_token_hmac_live_uq/);
  });
});

describe('what a write reads back', () => {
  /** The columns the write statement of the last request answered (its final select). */
  const answered = () => {
    const write = svc.queries.find((text) => text.includes('insert into audit_events'))!;
    // The select of the written row `n` (beside the token when the write carries its check:
    // src/auth/checked-sql.ts); an update's list ends with the flag that it lost a race (src/resource/writes.ts).
    const end = Math.max(write.lastIndexOf(' from n t'), write.lastIndexOf(' from (select * from n union all'));
    return write.slice(write.lastIndexOf('select ', end) + 'select '.length, end).replace(', false as "writeRaced"', '');
  };

  test('the bare answer (1, or the new id) reads back only the id; Prefer: return=representation reads the whole record', async () => {
    svc.queries.length = 0;
    const created = await svc.request('POST', '/user/', { body: { firstName: 'Bare', lastName: 'Answer' } });
    expect(created.status).toBe(201);
    expect(answered()).toBe('t.id as "id"');
    const id = created.body as number;
    expect(created.headers.get('location')).toMatch(new RegExp(`/user/${id}$`));
    for (const [method, body] of [
      ['PUT', { firstName: 'Bare', lastName: 'Put' }],
      ['PATCH', { lastName: 'Patch' }],
    ] as const) {
      svc.queries.length = 0;
      const res = await svc.request(method, `/user/${id}`, { body });
      expect([res.status, res.body]).toEqual([200, 1]);
      expect(answered()).toBe('t.id as "id"');
      svc.queries.length = 0;
      const whole = await svc.request(method, `/user/${id}`, { body: { ...body, outKey: `${method}-whole` }, headers: REPRESENTATION });
      expect(whole.body).toMatchObject({ id, ...body, outKey: `${method}-whole`, updatedAt: expect.stringMatching(ISO) });
      expect(answered()).toContain('t.updated_at as "updatedAt"');
    }
    // Every field given was written, whatever was read back.
    expect(await getUser(id)).toMatchObject({ firstName: 'Bare', lastName: 'Patch', outKey: 'PATCH-whole' });
  });
});
