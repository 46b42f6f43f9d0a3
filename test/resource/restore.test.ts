import { randomBytes } from 'node:crypto';
import { startTestService, type Reply, type TestService } from '../support/service.js';
import { liveCounts } from '../support/live-counts.js';
import { ISO } from '../support/contracts.js';
import { createToken, createUser } from '../support/users.js';

/**
 * SPEC §9, restore and deleted reads, on both protocols: POST /{resource}/{id}/restore and the
 * restore mutations bring a soft-deleted record back (409 when it is not deleted, when a live record
 * holds its unique name or accessToken now, or when a token's user is deleted; what its delete took
 * with it stays deleted); lists take `deleted=only|include` and then carry `deletedAt`.
 */
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const G = `r${randomBytes(4).toString('hex')}`;
const uniq = (prefix: string) => `${G}-${prefix}-${randomBytes(4).toString('hex')}`;
const REPRESENTATION = { Prefer: 'return=representation' };

async function create(path: string, body: Record<string, unknown>): Promise<number> {
  const res = await svc.request('POST', path, { body });
  expect(res.status).toBe(201);
  return res.body as number;
}

async function destroy(path: string): Promise<void> {
  const res = await svc.request('DELETE', path);
  expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: 1 });
}

/** A user of this file's group, and the id of a new token of one. */
const newUser = (lastName = uniq('user')) => createUser(svc, { firstName: G, lastName });
const newToken = async (userID: number, fields: Record<string, unknown> = {}) => (await createToken(svc, userID, { accessToken: uniq('token'), ...fields })).id;

function expectError(res: Reply, status: number, error: string, message?: RegExp): void {
  expect({ status: res.status, code: res.body?.code, error: res.body?.error }).toEqual({ status, code: status, error });
  if (message) expect(res.body.message).toMatch(message);
}

async function deletedAt(table: string, id: number): Promise<string | null> {
  const [row] = await svc.sql<{ deleted_at: string | null }>(`select deleted_at from ${table} where id = ?`, [id]);
  return row.deleted_at;
}

describe('REST: POST /{resource}/{id}/restore', () => {
  test.each([
    ['user', 'users', () => newUser()],
    ['application', 'applications', () => create('/application/', { name: uniq('app') })],
    ['role', 'roles', () => create('/role/', { name: uniq('role') })],
  ] as const)('a deleted %s comes back: 200 `1`, readable again, updatedAt moved on', async (resource, table, make) => {
    const id = await make();
    const before = (await svc.request('GET', `/${resource}/${id}`)).body;
    await destroy(`/${resource}/${id}`);
    expect((await svc.request('GET', `/${resource}/${id}`)).status).toBe(404);
    const res = await svc.request('POST', `/${resource}/${id}/restore`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: 1 });
    expect(await deletedAt(table, id)).toBeNull();
    const after = await svc.request('GET', `/${resource}/${id}`);
    expect(after.status).toBe(200);
    expect(after.body).not.toHaveProperty('deletedAt');
    expect({ ...after.body, updatedAt: before.updatedAt }).toEqual(before);
    expect(Date.parse(after.body.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
  });

  test('a token comes back with its values and its next version; Prefer: return=representation answers it', async () => {
    const user = await newUser();
    const id = await newToken(user, { scope: 'openid', refreshToken: 'r1' });
    const before = (await svc.request('GET', `/token/${id}`)).body;
    expect(before.version).toBe('1');
    await destroy(`/token/${id}`);
    const res = await svc.request('POST', `/token/${id}/restore`, { headers: REPRESENTATION });
    expect(res.status).toBe(200);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.headers.get('vary')).toMatch(/Prefer/);
    expect(res.body).toEqual({ ...before, version: '2', updatedAt: expect.stringMatching(ISO) });
    expect(res.body.updatedAt).not.toBe(before.updatedAt);
    expect((await svc.request('GET', `/token/${id}`)).body).toEqual(res.body);
    // The restored token authenticates again.
    const me = await svc.request('GET', `/token/?filter=${encodeURIComponent(`id eq ${id}`)}`, { token: before.accessToken });
    expect(me.status).toBe(403); // valid (not 401), but scope "openid" grants no token:read
  });

  test('the trailing slash is accepted; GET on the path is a 405', async () => {
    const id = await create('/role/', { name: uniq('role') });
    await destroy(`/role/${id}`);
    expect((await svc.request('POST', `/role/${id}/restore/`)).body).toBe(1);
    const get = await svc.request('GET', `/role/${id}/restore`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toContain('POST');
  });

  test('a restored user’s tokens and links stay deleted', async () => {
    const user = await newUser();
    const token = await newToken(user);
    const application = await create('/application/', { name: uniq('app') });
    const role = await create('/role/', { name: uniq('role') });
    expect((await svc.request('POST', `/user/${user}/application/`, { body: [application] })).body).toBe(1);
    expect((await svc.request('POST', `/user/${user}/role/`, { body: [role] })).body).toBe(1);
    await destroy(`/user/${user}`);
    expect((await svc.request('POST', `/user/${user}/restore`)).body).toBe(1);
    expect(await deletedAt('tokens', token)).not.toBeNull();
    expect((await svc.request('GET', `/token/${token}`)).status).toBe(404);
    expect((await svc.request('GET', `/user/${user}/application/`)).body).toEqual([]);
    expect((await svc.request('GET', `/user/${user}/role/`)).body).toEqual([]);
    // The token can come back on its own now that its user is live.
    expect((await svc.request('POST', `/token/${token}/restore`)).body).toBe(1);
    expect((await svc.request('GET', `/token/${token}`)).body.userID).toBe(user);
  });

  test('an application’s links stay deleted when it is restored', async () => {
    const user = await newUser();
    const application = await create('/application/', { name: uniq('app') });
    expect((await svc.request('POST', `/user/${user}/application/`, { body: [application] })).body).toBe(1);
    await destroy(`/application/${application}`);
    expect((await svc.request('POST', `/application/${application}/restore`)).body).toBe(1);
    expect((await svc.request('GET', `/user/${user}/application/`)).body).toEqual([]);
  });

  describe('refusals change nothing', () => {
    test.each(['application', 'role'] as const)('409 when a live %s holds the name now', async (resource) => {
      const name = uniq(resource);
      const old = await create(`/${resource}/`, { name });
      await destroy(`/${resource}/${old}`);
      await create(`/${resource}/`, { name });
      const before = await svc.snapshot();
      const res = await svc.request('POST', `/${resource}/${old}/restore`);
      expectError(res, 409, 'CONFLICT', /name already exists/);
      expect(res.body.details).toEqual([{ field: 'name', message: `"${name}" is already in use` }]);
      expect(await svc.snapshot()).toEqual(before);
    });

    test('409 when a live token holds the accessToken now', async () => {
      const user = await newUser();
      const accessToken = uniq('shared');
      const old = await create('/token/', { userID: user, accessToken });
      await destroy(`/token/${old}`);
      await create('/token/', { userID: user, accessToken });
      const before = await svc.snapshot();
      const res = await svc.request('POST', `/token/${old}/restore`);
      expectError(res, 409, 'CONFLICT', /accessToken already exists/);
      expect(res.body.details).toEqual([{ field: 'accessToken', message: 'is already in use' }]);
      expect(res.text).not.toContain(accessToken);
      expect(await svc.snapshot()).toEqual(before);
    });

    test('409 for a token whose user is deleted (it could never authenticate)', async () => {
      const user = await newUser();
      const token = await newToken(user);
      await destroy(`/token/${token}`);
      await destroy(`/user/${user}`);
      const before = await svc.snapshot();
      const res = await svc.request('POST', `/token/${token}/restore`);
      expectError(res, 409, 'CONFLICT', new RegExp(`user ${user} is deleted; restore the user first`));
      expect(await svc.snapshot()).toEqual(before);
    });

    test.each(['user', 'token', 'application', 'role'] as const)('409 for a %s that is not deleted', async (resource) => {
      const id =
        resource === 'user'
          ? await newUser()
          : resource === 'token'
            ? await newToken(await newUser())
            : await create(`/${resource}/`, { name: uniq(resource) });
      const before = await svc.snapshot();
      const res = await svc.request('POST', `/${resource}/${id}/restore`);
      expectError(res, 409, 'CONFLICT', new RegExp(`${resource} with id ${id} is not deleted`));
      expect(await svc.snapshot()).toEqual(before);
    });

    test('404 for an unknown id, 400 for a malformed one', async () => {
      const before = await svc.snapshot();
      for (const resource of ['user', 'token', 'application', 'role']) {
        expectError(await svc.request('POST', `/${resource}/987654321/restore`), 404, 'NOT_FOUND', new RegExp(`no ${resource} with id 987654321`));
        const bad = await svc.request('POST', `/${resource}/abc/restore`);
        expectError(bad, 400, 'BAD_REQUEST');
        expect(bad.body.details[0].field).toBe('id');
      }
      expect(await svc.snapshot()).toEqual(before);
    });

    test('403 without <resource>:write (a read scope, another resource’s write)', async () => {
      const user = await newUser();
      await destroy(`/user/${user}`);
      const callers = await Promise.all(['user:read', 'token:write application:* role:*'].map((scope) => svc.tokenWith(scope)));
      const before = await svc.snapshot();
      for (const token of callers) {
        const res = await svc.request('POST', `/user/${user}/restore`, { token });
        expectError(res, 403, 'FORBIDDEN');
        expect(res.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="user:write"');
      }
      expect(await svc.snapshot()).toEqual(before);
      const allowed = await svc.request('POST', `/user/${user}/restore`, { token: await svc.tokenWith('user:write') });
      expect(allowed.body).toBe(1);
    });

    test('403 for a token carrying a scope the caller could not grant (as for any token write)', async () => {
      const writer = await svc.tokenWith('token:write');
      const user = await newUser();
      const strong = await newToken(user, { scope: '*' });
      await destroy(`/token/${strong}`);
      const before = await svc.snapshot();
      const res = await svc.request('POST', `/token/${strong}/restore`, { token: writer });
      expectError(res, 403, 'FORBIDDEN', /cannot grant, change or revoke the scope "\*"/);
      expect(await svc.snapshot()).toEqual(before);
    });
  });

  test('live_counts stays exact through delete and restore, and unfiltered totals follow it', async () => {
    const users = [await newUser(), await newUser()];
    const token = await newToken(users[0]);
    const application = await create('/application/', { name: uniq('app') });
    const role = await create('/role/', { name: uniq('role') });
    const totals = async () =>
      Object.fromEntries(
        await Promise.all(
          ['user', 'token', 'application', 'role'].map(async (r) => [r, Number((await svc.request('GET', `/${r}/?pageSize=1`)).headers.get('x-total-count'))]),
        ),
      );
    const start = await totals();
    await destroy(`/user/${users[0]}`); // takes the token with it
    await destroy(`/user/${users[1]}`);
    await destroy(`/application/${application}`);
    await destroy(`/role/${role}`);
    const low = await totals();
    expect(low).toEqual({ user: start.user - 2, token: start.token - 1, application: start.application - 1, role: start.role - 1 });
    for (const path of [`/user/${users[0]}`, `/user/${users[1]}`, `/token/${token}`, `/application/${application}`, `/role/${role}`]) {
      expect((await svc.request('POST', `${path}/restore`)).body).toBe(1);
    }
    expect(await totals()).toEqual(start);
    const { kept, counted } = await liveCounts(svc);
    expect(kept).toEqual(counted);
    // A refused restore (409) leaves the counts as they were.
    const again = await svc.request('POST', `/role/${role}/restore`);
    expect(again.status).toBe(409);
    expect((await liveCounts(svc)).kept).toEqual(counted);
  });
});

describe('REST: deleted=only|include on the lists', () => {
  const group = uniq('list');
  const ids: number[] = [];
  const filter = encodeURIComponent(`firstName eq '${group}'`);
  beforeAll(async () => {
    for (let i = 0; i < 4; i++) ids.push(await create('/user/', { firstName: group, lastName: `L${i}` }));
    await destroy(`/user/${ids[1]}`);
    await destroy(`/user/${ids[3]}`);
  });

  test('without deleted: the live records, without deletedAt', async () => {
    const res = await svc.request('GET', `/user/?filter=${filter}`);
    expect(res.body.map((u: { id: number }) => u.id)).toEqual([ids[0], ids[2]]);
    expect(res.headers.get('x-total-count')).toBe('2');
    for (const user of res.body) expect(user).not.toHaveProperty('deletedAt');
    // An empty value is the default, as for every list parameter.
    expect((await svc.request('GET', `/user/?filter=${filter}&deleted=`)).body).toEqual(res.body);
  });

  test('deleted=only: the deleted records, each with its deletedAt', async () => {
    const res = await svc.request('GET', `/user/?filter=${filter}&deleted=only`);
    expect(res.status).toBe(200);
    expect(res.body.map((u: { id: number }) => u.id)).toEqual([ids[1], ids[3]]);
    expect(res.headers.get('x-total-count')).toBe('2');
    for (const user of res.body) {
      expect(user.deletedAt).toMatch(ISO);
      expect(Object.keys(user).at(-1)).toBe('deletedAt');
    }
    expect(res.headers.get('link')).toContain('deleted=only&page=1>; rel="first"');
  });

  test('deleted=include: every record, deletedAt null for the live ones; keywords in any case', async () => {
    const res = await svc.request('GET', `/user/?filter=${filter}&deleted=INCLUDE&orderBy=-id&pageSize=3`);
    expect(res.body.map((u: { id: number; deletedAt: string | null }) => [u.id, u.deletedAt === null])).toEqual([
      [ids[3], false],
      [ids[2], true],
      [ids[1], false],
    ]);
    expect(res.headers.get('x-total-count')).toBe('4');
    expect(res.headers.get('link')).toContain('rel="next"');
  });

  test('pages of one record walk every scope in its order: the page ids are found first, then their rows', async () => {
    const walk = async (query: string) => {
      const seen: [number, string][] = [];
      for (let page = 1; page <= 5; page++) {
        const res = await svc.request('GET', `/user/?filter=${filter}&${query}&pageSize=1&page=${page}`);
        expect(res.status).toBe(200);
        seen.push(...res.body.map((u: { id: number; lastName: string }) => [u.id, u.lastName] as [number, string]));
      }
      return seen;
    };
    expect(await walk('orderBy=-lastName')).toEqual([
      [ids[2], 'L2'],
      [ids[0], 'L0'],
    ]);
    expect(await walk('deleted=include&orderBy=-lastName')).toEqual([3, 2, 1, 0].map((i) => [ids[i], `L${i}`]));
    expect(await walk('deleted=only&orderBy=lastName')).toEqual([
      [ids[1], 'L1'],
      [ids[3], 'L3'],
    ]);
  });

  test('a later page of several records keeps the order, ties by id: its rows are ordered again after they are read by id', async () => {
    const tied = uniq('tie');
    const made: number[] = [];
    for (const lastName of ['B', 'A', 'B', 'A', 'B']) made.push(await create('/user/', { firstName: tied, lastName }));
    const byName = encodeURIComponent(`firstName eq '${tied}'`);
    const page = async (n: number) =>
      (await svc.request('GET', `/user/?filter=${byName}&orderBy=-lastName&pageSize=2&page=${n}`)).body.map((u: { id: number }) => u.id);
    // -lastName, then id ascending: B B B A A.
    expect([...(await page(1)), ...(await page(2)), ...(await page(3))]).toEqual([made[0], made[2], made[4], made[1], made[3]]);
  });

  test('the unfiltered totals of deleted lists are counted (live_counts is for live lists)', async () => {
    const [{ all, live }] = await svc.sql<{ all: string; live: string }>(
      'select count(*) as all, count(*) filter (where deleted_at is null) as live from users',
    );
    const include = await svc.request('GET', '/user/?deleted=include&pageSize=1');
    const only = await svc.request('GET', '/user/?deleted=only&pageSize=1');
    expect(Number(include.headers.get('x-total-count'))).toBe(Number(all));
    expect(Number(only.headers.get('x-total-count'))).toBe(Number(all) - Number(live));
    expect(Number((await svc.request('GET', '/user/?pageSize=1')).headers.get('x-total-count'))).toBe(Number(live));
  });

  test('every top-level list takes it, with its usual read permission', async () => {
    const user = await newUser();
    const token = await newToken(user);
    const application = await create('/application/', { name: uniq('app') });
    const role = await create('/role/', { name: uniq('role') });
    for (const [resource, id] of [
      ['token', token],
      ['application', application],
      ['role', role],
    ] as const) {
      await destroy(`/${resource}/${id}`);
      const only = await svc.request('GET', `/${resource}/?filter=${encodeURIComponent(`id eq ${id}`)}&deleted=only`, {
        token: await svc.tokenWith(`${resource}:read`),
      });
      expect(only.status).toBe(200);
      expect(only.body).toEqual([expect.objectContaining({ id, deletedAt: expect.stringMatching(ISO) })]);
      const live = await svc.request('GET', `/${resource}/?filter=${encodeURIComponent(`id eq ${id}`)}`);
      expect(live.body).toEqual([]);
    }
    const forbidden = await svc.request('GET', '/token/?deleted=only', { token: await svc.tokenWith('user:read') });
    expectError(forbidden, 403, 'FORBIDDEN');
  });

  test('a bad deleted is a 400 naming it', async () => {
    for (const query of ['deleted=yes', 'deleted=all', 'deleted=only&deleted=include']) {
      const res = await svc.request('GET', `/user/?${query}`);
      expectError(res, 400, 'BAD_REQUEST');
      expect(res.body.details).toEqual([expect.objectContaining({ field: 'deleted' })]);
    }
  });
});

describe('GraphQL: restore mutations and deleted lists', () => {
  async function gql(query: string, variables?: Record<string, unknown>, token?: string) {
    const res = await svc.graphql(query, variables, token ? { token } : {});
    expect(res.status).toBe(200);
    return res.body;
  }

  test.each([
    ['User', 'user', () => newUser()],
    ['Token', 'token', async () => newToken(await newUser())],
    ['Application', 'application', () => create('/application/', { name: uniq('app') })],
    ['Role', 'role', () => create('/role/', { name: uniq('role') })],
  ] as const)('restore%s brings the record back and answers it', async (type, resource, make) => {
    const id = await make();
    await destroy(`/${resource}/${id}`);
    const body = await gql(`mutation($id: ID!) { restore${type}(id: $id) { id updatedAt deletedAt } }`, { id });
    expect(body.errors).toBeUndefined();
    expect(body.data[`restore${type}`]).toEqual({ id: String(id), updatedAt: expect.stringMatching(ISO), deletedAt: null });
    expect((await svc.request('GET', `/${resource}/${id}`)).status).toBe(200);
    // Restoring it again: it is not deleted.
    const again = await gql(`mutation($id: ID!) { restore${type}(id: $id) { id } }`, { id });
    expect(again.errors[0].extensions.code).toBe('CONFLICT');
  });

  test('the refusals: CONFLICT (name taken, token of a deleted user), NOT_FOUND, FORBIDDEN; nothing changes', async () => {
    const name = uniq('app');
    const old = await create('/application/', { name });
    await destroy(`/application/${old}`);
    await create('/application/', { name });
    const user = await newUser();
    const token = await newToken(user);
    await destroy(`/user/${user}`);
    const reader = await svc.tokenWith('application:read token:read');
    const before = await svc.snapshot();
    const taken = await gql('mutation($id: ID!) { restoreApplication(id: $id) { id } }', { id: old });
    expect(taken.data).toBeNull();
    expect(taken.errors[0].extensions).toMatchObject({ code: 'CONFLICT', field: 'name' });
    const orphan = await gql('mutation($id: ID!) { restoreToken(id: $id) { id } }', { id: token });
    expect(orphan.errors[0].extensions).toMatchObject({ code: 'CONFLICT', field: 'userID' });
    expect(orphan.errors[0].message).toMatch(/restore the user first/);
    const unknown = await gql('mutation { restoreRole(id: "987654321") { id } }');
    expect(unknown.errors[0].extensions.code).toBe('NOT_FOUND');
    const forbidden = await gql('mutation($id: ID!) { restoreApplication(id: $id) { id } }', { id: old }, reader);
    expect(forbidden.errors[0].extensions.code).toBe('FORBIDDEN');
    expect(forbidden.errors[0].message).toContain('application:write');
    // Two restores in one operation: the second fails, so the first is rolled back with it.
    const both = await gql('mutation($u: ID!, $t: ID!) { u: restoreUser(id: $u) { id } t: restoreApplication(id: $t) { id } }', { u: user, t: old });
    expect(both.data).toBeNull();
    expect(await svc.snapshot()).toEqual(before);
  });

  test('users(deleted: ONLY | INCLUDE) and usersConnection read deleted users with deletedAt', async () => {
    const group = uniq('gql');
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) ids.push(await create('/user/', { firstName: group, lastName: `L${i}` }));
    await destroy(`/user/${ids[1]}`);
    const filter = { firstName: { eq: group } };
    const page = async (deleted?: string) =>
      (await gql(`query($f: UserFilter, $d: DeletedRecords) { users(filter: $f, deleted: $d) { total data { id deletedAt } } }`, { f: filter, d: deleted }))
        .data.users;
    expect(await page()).toEqual({
      total: 2,
      data: [
        { id: String(ids[0]), deletedAt: null },
        { id: String(ids[2]), deletedAt: null },
      ],
    });
    expect(await page('ONLY')).toEqual({ total: 1, data: [{ id: String(ids[1]), deletedAt: expect.stringMatching(ISO) }] });
    const include = await page('INCLUDE');
    expect(include.total).toBe(3);
    expect(include.data.map((u: { deletedAt: string | null }) => u.deletedAt !== null)).toEqual([false, true, false]);
    const connection = await gql(
      'query($f: UserFilter) { usersConnection(filter: $f, deleted: INCLUDE, first: 2) { totalCount edges { node { id deletedAt } } pageInfo { hasNextPage endCursor } } }',
      { f: filter },
    );
    const c = connection.data.usersConnection;
    expect(c.totalCount).toBe(3);
    expect(c.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([String(ids[0]), String(ids[1])]);
    const next = await gql(
      'query($f: UserFilter, $a: String) { usersConnection(filter: $f, deleted: INCLUDE, first: 2, after: $a) { edges { node { id } } } }',
      {
        f: filter,
        a: c.pageInfo.endCursor,
      },
    );
    expect(next.data.usersConnection.edges).toEqual([{ node: { id: String(ids[2]) } }]);
  });

  test('tokens, applications and roles take deleted too, with their read permission', async () => {
    const token = await newToken(await newUser());
    const application = await create('/application/', { name: uniq('app') });
    const role = await create('/role/', { name: uniq('role') });
    for (const [list, resource, id] of [
      ['tokens', 'token', token],
      ['applications', 'application', application],
      ['roles', 'role', role],
    ] as const) {
      await destroy(`/${resource}/${id}`);
      const reader = await svc.tokenWith(`${resource}:read`);
      const body = await gql(`query($id: ID!) { ${list}(filter: { id: { eq: $id } }, deleted: ONLY) { total data { id deletedAt } } }`, { id }, reader);
      expect(body.data[list]).toEqual({ total: 1, data: [{ id: String(id), deletedAt: expect.stringMatching(ISO) }] });
      const connection = await gql(`query($id: ID!) { ${list}Connection(filter: { id: { eq: $id } }, deleted: ONLY) { totalCount } }`, { id }, reader);
      expect(connection.data[`${list}Connection`]).toEqual({ totalCount: 1 });
    }
  });

  test('a bad deleted value is refused by the schema', async () => {
    const res = await svc.graphql('query($d: DeletedRecords) { users(deleted: $d) { total } }', { d: 'ALL' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(res.body.errors[0].message).toMatch(/DeletedRecords/);
  });
});
