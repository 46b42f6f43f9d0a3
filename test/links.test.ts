import { startTestService, type TestService } from './support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UNKNOWN_ID = 987654321;

let counter = 0;
const fresh = (prefix: string) => `${prefix}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

async function newUser(): Promise<number> {
  const res = await svc.request('POST', '/user/', { body: { firstName: 'Linked', lastName: fresh('user') } });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function newApp(name = fresh('app')): Promise<number> {
  const res = await svc.request('POST', '/application/', { body: { name } });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function newRole(name = fresh('role')): Promise<number> {
  const res = await svc.request('POST', '/role/', { body: { name } });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function deleted(path: string, id: number): Promise<number> {
  expect((await svc.request('DELETE', `${path}/${id}`)).status).toBe(204);
  return id;
}

interface AppLinkRow {
  app: number;
  right: number;
  deleted: boolean;
}

/** Every user_applications row of a user, deleted or not. */
const appRows = (userId: number) =>
  svc.sql<AppLinkRow>(
    `select application_id::int as app, "right", deleted_at is not null as deleted
     from user_applications where user_id = ? order by application_id`,
    [userId],
  );

/** Every user_roles row of a user, deleted or not. */
const roleRows = (userId: number) =>
  svc.sql<{ role: number; deleted: boolean }>(
    `select role_id::int as role, deleted_at is not null as deleted from user_roles where user_id = ? order by role_id`,
    [userId],
  );

const live = (app: number, right = 0): AppLinkRow => ({ app, right, deleted: false });
const gone = (app: number, right = 0): AppLinkRow => ({ app, right, deleted: true });

const link = (userId: number, ids: unknown, kind = 'application') =>
  svc.request('POST', `/user/${userId}/${kind}/`, { body: ids });
const unlink = (userId: number, ids: unknown, kind = 'application') =>
  svc.request('DELETE', `/user/${userId}/${kind}/`, { body: ids });
const setRight = (userId: number, appId: number, body: unknown) =>
  svc.request('PUT', `/user/${userId}/application/${appId}`, { body });

/** Ids in a message ("no live application with id 5, 9"). */
const idsIn = (message: string) => (message.match(/\d+/g) ?? []).map(Number).sort((a, b) => a - b);

/** Bodies that are not a JSON array of at most 1000 positive integers. */
const BAD_BODIES: Array<[string, unknown]> = [
  ['an object', { ids: [1] }],
  ['a string', '1'],
  ['a number', 1],
  ['null', null],
  ['zero', [0]],
  ['a negative id', [-3]],
  ['a fraction', [1.5]],
  ['a string id', ['1']],
  ['a null id', [null]],
  ['a boolean id', [true]],
  ['a nested array', [[1]]],
  ['an id past the safe integers', [2 ** 53]],
  ['1001 ids', Array.from({ length: 1001 }, (_, i) => i + 1)],
];

describe('POST /user/{id}/application/ (link)', () => {
  test('creates the links with right 0; duplicates in the body count once', async () => {
    const user = await newUser();
    const [a, b] = [await newApp(), await newApp()];
    const res = await link(user, [a, b, b, a]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 2 });
    expect(await appRows(user)).toEqual([live(a), live(b)]);
  });

  test('ids already linked are left alone (their right is kept) and not counted', async () => {
    const user = await newUser();
    const [a, b] = [await newApp(), await newApp()];
    expect((await link(user, [a])).body).toEqual({ affected: 1 });
    expect((await setRight(user, a, { right: 5 })).status).toBe(200);

    const res = await link(user, [a, b]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 1 });
    expect(await appRows(user)).toEqual([live(a, 5), live(b)]);

    const again = await link(user, [b, a]);
    expect(again.body).toEqual({ affected: 0 });
    expect(await appRows(user)).toEqual([live(a, 5), live(b)]);
  });

  test('works without the trailing slash', async () => {
    const user = await newUser();
    const a = await newApp();
    const res = await svc.request('POST', `/user/${user}/application`, { body: [a] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 1 });
    expect(await appRows(user)).toEqual([live(a)]);
  });

  test('an empty array links nothing', async () => {
    const user = await newUser();
    const res = await link(user, []);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 0 });
    expect(await appRows(user)).toEqual([]);
  });

  test('1000 entries are accepted (the limit), duplicates still counting once', async () => {
    const user = await newUser();
    const a = await newApp();
    const res = await link(user, Array.from({ length: 1000 }, () => a));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 1 });
    expect(await appRows(user)).toEqual([live(a)]);
  });

  test('unknown or deleted application ids: 400 listing exactly those ids, and nothing is linked', async () => {
    const user = await newUser();
    const [linked, good] = [await newApp(), await newApp()];
    const removed = await deleted('/application', await newApp());
    await link(user, [linked]);

    const res = await link(user, [good, UNKNOWN_ID, removed, linked, UNKNOWN_ID]);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 400, error: 'BAD_REQUEST', requestId: expect.any(String) });
    expect(res.body.details).toHaveLength(1);
    expect(res.body.details[0].field).toBe('applicationIDs');
    expect(idsIn(res.body.details[0].message)).toEqual([removed, UNKNOWN_ID].sort((x, y) => x - y));
    expect(res.body.message).toContain(String(UNKNOWN_ID));
    expect(res.body.message).toContain(String(removed));

    expect(await appRows(user)).toEqual([live(linked)]);
    expect(await svc.sql('select 1 from user_applications where application_id in (?, ?)', [good, removed])).toEqual([]);
  });

  test.each(BAD_BODIES)('a body with %s is a 400 and links nothing', async (_label, body) => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const res = await link(user, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('BAD_REQUEST');
    expect(await appRows(user)).toEqual([live(a)]);
  });

  test('no body at all is a 400', async () => {
    const user = await newUser();
    const res = await svc.request('POST', `/user/${user}/application/`);
    expect(res.status).toBe(400);
    expect(await appRows(user)).toEqual([]);
  });

  test('a malformed user id in the path is a 400', async () => {
    const a = await newApp();
    const res = await svc.request('POST', '/user/abc/application/', { body: [a] });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ field: 'id', message: 'must be a positive integer' }]);
    expect(await svc.sql('select 1 from user_applications where application_id = ?', [a])).toEqual([]);
  });
});

describe('DELETE /user/{id}/application/ (unlink)', () => {
  test('removes the links (soft), counting each once; other links stay', async () => {
    const user = await newUser();
    const [a, b, c] = [await newApp(), await newApp(), await newApp()];
    await link(user, [a, b, c]);

    const res = await unlink(user, [a, a, b]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 2 });
    expect(await appRows(user)).toEqual([gone(a), gone(b), live(c)]);

    const list = await svc.request('GET', `/user/${user}/application/`);
    expect(list.body.data.map((x: { id: number }) => x.id)).toEqual([c]);
    expect((await svc.request('GET', `/user/${user}/application/${a}`)).status).toBe(404);
  });

  test('unlinking an absent link is a no-op (0)', async () => {
    const user = await newUser();
    const [a, never] = [await newApp(), await newApp()];
    await link(user, [a]);
    await unlink(user, [a]);

    expect((await unlink(user, [a])).body).toEqual({ affected: 0 });
    const res = await unlink(user, [never]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 0 });
    expect(await appRows(user)).toEqual([gone(a)]);
  });

  test("leaves other users' links alone", async () => {
    const [user, other] = [await newUser(), await newUser()];
    const a = await newApp();
    await link(user, [a]);
    await link(other, [a]);
    expect((await unlink(user, [a])).body).toEqual({ affected: 1 });
    expect(await appRows(other)).toEqual([live(a)]);
  });

  test('works without the trailing slash', async () => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const res = await svc.request('DELETE', `/user/${user}/application`, { body: [a] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 1 });
    expect(await appRows(user)).toEqual([gone(a)]);
  });

  test.each(BAD_BODIES)('a body with %s is a 400 and unlinks nothing', async (_label, body) => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const res = await unlink(user, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('BAD_REQUEST');
    expect(await appRows(user)).toEqual([live(a)]);
  });

  test('re-linking after unlinking creates the link again, with right 0', async () => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    expect((await setRight(user, a, { right: 9 })).body.right).toBe(9);
    await unlink(user, [a]);
    expect(await appRows(user)).toEqual([gone(a, 9)]);

    const res = await link(user, [a]);
    expect(res.body).toEqual({ affected: 1 });
    expect(await appRows(user)).toEqual([live(a, 0)]);
    const got = await svc.request('GET', `/user/${user}/application/${a}`);
    expect(got.status).toBe(200);
    expect(got.body.right).toBe(0);
  });
});

describe('GET /user/{id}/application/ (list)', () => {
  let user: number;
  let prefix: string;
  let apps: Record<'alpha' | 'beta' | 'gamma', { id: number; name: string; createdAt: string; updatedAt: string }>;

  beforeAll(async () => {
    user = await newUser();
    prefix = fresh('list');
    apps = {} as typeof apps;
    for (const [key, right] of [['beta', 5], ['gamma', 10], ['alpha', 1]] as const) {
      const created = await svc.request('POST', '/application/', { body: { name: `${prefix}-${key}` } });
      apps[key] = created.body;
      await link(user, [created.body.id]);
      await setRight(user, created.body.id, { right });
    }
    // Not in the list: an unlinked one, a deleted one, and one linked only to another user.
    const unlinked = await newApp();
    await link(user, [unlinked]);
    await unlink(user, [unlinked]);
    const removed = await newApp();
    await link(user, [removed]);
    await deleted('/application', removed);
    await link(await newUser(), [await newApp()]);
  });

  const item = (key: 'alpha' | 'beta' | 'gamma', right: number) => ({ ...apps[key], right });
  const names = (body: { data: Array<{ name: string }> }) => body.data.map((x) => x.name.slice(prefix.length + 1));
  const get = (query = '', path = `/user/${user}/application/`) => svc.request('GET', `${path}${query}`);
  const q = (filter: unknown) => `filter=${encodeURIComponent(JSON.stringify(filter))}`;

  test('answers the list envelope of the linked live applications, each with its right, by id', async () => {
    for (const path of [`/user/${user}/application/`, `/user/${user}/application`]) {
      const res = await get('', path);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        total: 3,
        page: 1,
        pageSize: 20,
        data: [item('beta', 5), item('gamma', 10), item('alpha', 1)],
      });
    }
    for (const entry of (await get()).body.data) {
      expect(Object.keys(entry).sort()).toEqual(['createdAt', 'id', 'name', 'right', 'updatedAt']);
    }
  });

  test('a user without links gets an empty page', async () => {
    const res = await get('', `/user/${await newUser()}/application/`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ total: 0, page: 1, pageSize: 20, data: [] });
  });

  test('filters on right', async () => {
    const res = await get(`?${q({ right: { gte: 5 } })}`);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
    expect(names(res.body)).toEqual(['beta', 'gamma']);
    expect(names((await get(`?${q({ right: 1 })}`)).body)).toEqual(['alpha']);
    expect(names((await get(`?${q({ right: { in: [1, 10] } })}`)).body)).toEqual(['gamma', 'alpha']);
  });

  test('filters on application fields', async () => {
    const res = await get(`?${q({ name: { like: `${prefix}-a%` } })}`);
    expect(names(res.body)).toEqual(['alpha']);
    const or = await get(`?${q({ or: [{ id: apps.alpha.id }, { name: `${prefix}-gamma` }] })}`);
    expect(or.body.total).toBe(2);
    expect(names(or.body)).toEqual(['gamma', 'alpha']);
    const both = await get(`?${q({ name: { ilike: `${prefix.toUpperCase()}%` }, right: { lt: 10 } })}`);
    expect(names(both.body)).toEqual(['beta', 'alpha']);
  });

  test('orders by application fields and by right', async () => {
    expect(names((await get('?orderBy=-name')).body)).toEqual(['gamma', 'beta', 'alpha']);
    expect(names((await get('?orderBy=name')).body)).toEqual(['alpha', 'beta', 'gamma']);
    expect(names((await get('?orderBy=-right')).body)).toEqual(['gamma', 'beta', 'alpha']);
    expect(names((await get('?orderBy=right%20asc')).body)).toEqual(['alpha', 'beta', 'gamma']);
    expect(names((await get('?orderBy=-id')).body)).toEqual(['alpha', 'gamma', 'beta']);
  });

  test('pages, with the true total', async () => {
    const page2 = await get('?orderBy=name&page=2&pageSize=2');
    expect(page2.status).toBe(200);
    expect(page2.body).toEqual({ total: 3, page: 2, pageSize: 2, data: [item('gamma', 10)] });
    const past = await get('?page=5&pageSize=2');
    expect(past.body).toEqual({ total: 3, page: 5, pageSize: 2, data: [] });
  });

  test.each([
    ['an unknown filter field', () => q({ userID: 1 })],
    ['a wrong value type for right', () => q({ right: 'five' })],
    ['an unknown operator', () => q({ right: { between: [1, 2] } })],
    ['an unknown orderBy field', () => 'orderBy=deletedAt'],
    ['page 0', () => 'page=0'],
    ['pageSize 1001', () => 'pageSize=1001'],
  ])('%s is a 400', async (_label, query) => {
    const res = await get(`?${query()}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('BAD_REQUEST');
  });
});

describe('GET /user/{id}/application/{applicationID}', () => {
  test('answers the link', async () => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const res = await svc.request('GET', `/user/${user}/application/${a}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      userID: user,
      applicationID: a,
      right: 0,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
  });

  test('404 for an application not linked, unknown, or unlinked; 400 for a malformed id', async () => {
    const user = await newUser();
    const [a, b] = [await newApp(), await newApp()];
    await link(user, [a]);
    await unlink(user, [a]);
    for (const id of [a, b, UNKNOWN_ID]) {
      const res = await svc.request('GET', `/user/${user}/application/${id}`);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 404, error: 'NOT_FOUND' });
    }
    const bad = await svc.request('GET', `/user/${user}/application/x1`);
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ field: 'applicationID', message: 'must be a positive integer' }]);
  });
});

describe('PUT /user/{id}/application/{applicationID}', () => {
  test('updates the right and answers the updated link; other body fields are ignored', async () => {
    const user = await newUser();
    const [a, other] = [await newApp(), await newApp()];
    await link(user, [a, other]);
    const before = (await svc.request('GET', `/user/${user}/application/${a}`)).body;

    const res = await setRight(user, a, { right: 7, userID: 1, applicationID: other, createdAt: '2000-01-01T00:00:00Z' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      userID: user,
      applicationID: a,
      right: 7,
      createdAt: before.createdAt,
      updatedAt: expect.stringMatching(ISO),
    });
    expect((await svc.request('GET', `/user/${user}/application/${a}`)).body).toEqual(res.body);
    expect(await appRows(user)).toEqual([live(a, 7), live(other, 0)]);
  });

  test.each([2147483647, -2147483648, 0])('accepts the 32-bit value %d', async (right) => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const res = await setRight(user, a, { right });
    expect(res.status).toBe(200);
    expect(res.body.right).toBe(right);
    expect(await appRows(user)).toEqual([live(a, right)]);
  });

  test.each<[string, unknown, string]>([
    ['no right', {}, 'is required'],
    ['a null right', { right: null }, 'must not be null'],
    ['a fraction', { right: 1.5 }, 'must be an integer'],
    ['a string', { right: '5' }, 'must be an integer'],
    ['2^31', { right: 2 ** 31 }, 'must be between'],
    ['-2^31 - 1', { right: -(2 ** 31) - 1 }, 'must be between'],
  ])('%s is a 400 naming right, and the link is unchanged', async (_label, body, message) => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    await setRight(user, a, { right: 3 });
    const res = await setRight(user, a, body);
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ field: 'right', message: expect.stringContaining(message) }]);
    expect(await appRows(user)).toEqual([live(a, 3)]);
  });

  test('a body that is not an object is a 400', async () => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const res = await setRight(user, a, [5]);
    expect(res.status).toBe(400);
    expect(await appRows(user)).toEqual([live(a, 0)]);
  });

  test('never creates: 404 on a link that does not exist, or was unlinked', async () => {
    const user = await newUser();
    const [never, unlinked] = [await newApp(), await newApp()];
    await link(user, [unlinked]);
    await setRight(user, unlinked, { right: 4 });
    await unlink(user, [unlinked]);

    for (const id of [never, unlinked, UNKNOWN_ID]) {
      const res = await setRight(user, id, { right: 8 });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('NOT_FOUND');
    }
    expect(await appRows(user)).toEqual([gone(unlinked, 4)]);
  });
});

describe('/user/{id}/role/', () => {
  test('link: creates, duplicates count once, already linked ones left alone', async () => {
    const user = await newUser();
    const [r1, r2] = [await newRole(), await newRole()];
    const res = await link(user, [r1, r2, r2], 'role');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 2 });
    expect((await link(user, [r2, r1], 'role')).body).toEqual({ affected: 0 });
    expect(await roleRows(user)).toEqual([
      { role: r1, deleted: false },
      { role: r2, deleted: false },
    ]);
    const bare = await svc.request('POST', `/user/${user}/role`, { body: [await newRole()] });
    expect(bare.status).toBe(200);
    expect(bare.body).toEqual({ affected: 1 });
  });

  test('unknown or deleted role ids: 400 listing them, nothing linked', async () => {
    const user = await newUser();
    const good = await newRole();
    const removed = await deleted('/role', await newRole());
    const res = await link(user, [good, removed, UNKNOWN_ID], 'role');
    expect(res.status).toBe(400);
    expect(res.body.details).toHaveLength(1);
    expect(res.body.details[0].field).toBe('roleIDs');
    expect(idsIn(res.body.details[0].message)).toEqual([removed, UNKNOWN_ID].sort((x, y) => x - y));
    expect(await roleRows(user)).toEqual([]);
  });

  test.each(BAD_BODIES)('a link body with %s is a 400 and links nothing', async (_label, body) => {
    const user = await newUser();
    const res = await link(user, body, 'role');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('BAD_REQUEST');
    expect(await roleRows(user)).toEqual([]);
  });

  test('unlink: soft, counted, absent ones a no-op; re-link creates again', async () => {
    const user = await newUser();
    const [r1, r2, r3] = [await newRole(), await newRole(), await newRole()];
    await link(user, [r1, r2], 'role');

    const res = await unlink(user, [r1, r1, r3], 'role');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ affected: 1 });
    expect(await roleRows(user)).toEqual([
      { role: r1, deleted: true },
      { role: r2, deleted: false },
    ]);
    expect((await unlink(user, [r1], 'role')).body).toEqual({ affected: 0 });
    const bare = await svc.request('DELETE', `/user/${user}/role`, { body: [r2] });
    expect(bare.body).toEqual({ affected: 1 });

    expect((await unlink(user, [0], 'role')).status).toBe(400);
    expect((await link(user, [r1], 'role')).body).toEqual({ affected: 1 });
    expect(await roleRows(user)).toEqual([
      { role: r1, deleted: false },
      { role: r2, deleted: true },
    ]);
  });

  test('list: envelope of roles (no right), filter/orderBy/page on role fields', async () => {
    const user = await newUser();
    const prefix = fresh('roles');
    const made: Record<string, { id: number; name: string; createdAt: string; updatedAt: string }> = {};
    for (const key of ['b', 'c', 'a']) {
      const res = await svc.request('POST', '/role/', { body: { name: `${prefix}-${key}` } });
      made[key] = res.body;
      await link(user, [res.body.id], 'role');
    }
    const dropped = await newRole();
    await link(user, [dropped], 'role');
    await unlink(user, [dropped], 'role');

    for (const path of [`/user/${user}/role/`, `/user/${user}/role`]) {
      const res = await svc.request('GET', path);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ total: 3, page: 1, pageSize: 20, data: [made.b, made.c, made.a] });
    }
    const desc = await svc.request('GET', `/user/${user}/role/?orderBy=-name`);
    expect(desc.body.data).toEqual([made.c, made.b, made.a]);
    const filtered = await svc.request(
      'GET',
      `/user/${user}/role/?filter=${encodeURIComponent(JSON.stringify({ name: { in: [`${prefix}-a`, `${prefix}-c`] } }))}&orderBy=name`,
    );
    expect(filtered.body).toEqual({ total: 2, page: 1, pageSize: 20, data: [made.a, made.c] });
    const paged = await svc.request('GET', `/user/${user}/role/?orderBy=name&page=2&pageSize=1`);
    expect(paged.body).toEqual({ total: 3, page: 2, pageSize: 1, data: [made.b] });

    // A role link has no right.
    const byRight = await svc.request('GET', `/user/${user}/role/?filter=${encodeURIComponent('{"right":1}')}`);
    expect(byRight.status).toBe(400);
    expect((await svc.request('GET', `/user/${user}/role/?orderBy=right`)).status).toBe(400);
  });

  test('deleting a role removes it from the list', async () => {
    const user = await newUser();
    const [r1, r2] = [await newRole(), await newRole()];
    await link(user, [r1, r2], 'role');
    await deleted('/role', r1);
    const res = await svc.request('GET', `/user/${user}/role/`);
    expect(res.body.total).toBe(1);
    expect(res.body.data.map((r: { id: number }) => r.id)).toEqual([r2]);
  });
});

describe('unknown or deleted user in the path', () => {
  let app: number;
  let role: number;
  let deletedUser: number;

  beforeAll(async () => {
    app = await newApp();
    role = await newRole();
    deletedUser = await newUser();
    await link(deletedUser, [app]);
    await link(deletedUser, [role], 'role');
    await deleted('/user', deletedUser);
  });

  const routes: Array<[string, string, (user: number) => string, () => unknown]> = [
    ['GET', 'application list', (u) => `/user/${u}/application/`, () => undefined],
    ['POST', 'application link', (u) => `/user/${u}/application/`, () => [app]],
    ['DELETE', 'application unlink', (u) => `/user/${u}/application/`, () => [app]],
    ['GET', 'application link', (u) => `/user/${u}/application/${app}`, () => undefined],
    ['PUT', 'application link', (u) => `/user/${u}/application/${app}`, () => ({ right: 1 })],
    ['GET', 'role list', (u) => `/user/${u}/role/`, () => undefined],
    ['POST', 'role link', (u) => `/user/${u}/role/`, () => [role]],
    ['DELETE', 'role unlink', (u) => `/user/${u}/role/`, () => [role]],
  ];

  test.each(routes)('%s %s answers 404 and changes nothing', async (method, _label, path, body) => {
    for (const user of [UNKNOWN_ID, deletedUser]) {
      const res = await svc.request(method, path(user), { body: body() });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 404, error: 'NOT_FOUND', requestId: expect.any(String) });
    }
    expect(await svc.sql('select 1 from user_applications where user_id = ?', [UNKNOWN_ID])).toEqual([]);
    expect(await svc.sql('select 1 from user_roles where user_id = ?', [UNKNOWN_ID])).toEqual([]);
    // The deleted user's links were soft-deleted with it and stay so.
    expect(await appRows(deletedUser)).toEqual([gone(app)]);
    expect(await roleRows(deletedUser)).toEqual([{ role, deleted: true }]);
  });
});

describe('permissions', () => {
  test('reads need user:read, writes need user:write', async () => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const reader = await svc.tokenWith('user:read');
    expect((await svc.request('GET', `/user/${user}/application/`, { token: reader })).status).toBe(200);
    expect((await svc.request('GET', `/user/${user}/application/${a}`, { token: reader })).status).toBe(200);
    expect((await svc.request('GET', `/user/${user}/role/`, { token: reader })).status).toBe(200);

    const b = await newApp();
    const denied = await svc.request('POST', `/user/${user}/application/`, { token: reader, body: [b] });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('www-authenticate')).toContain('scope="user:write"');
    expect((await svc.request('PUT', `/user/${user}/application/${a}`, { token: reader, body: { right: 2 } })).status).toBe(403);
    expect((await svc.request('DELETE', `/user/${user}/application/`, { token: reader, body: [a] })).status).toBe(403);
    expect(await appRows(user)).toEqual([live(a)]);

    const appsOnly = await svc.tokenWith('application:*');
    expect((await svc.request('GET', `/user/${user}/application/`, { token: appsOnly })).status).toBe(403);

    const writer = await svc.tokenWith('user:write');
    expect((await svc.request('POST', `/user/${user}/application/`, { token: writer, body: [b] })).body).toEqual({ affected: 1 });
    expect(await appRows(user)).toEqual([live(a), live(b)]);
  });
});

describe('concurrent writes (on PostgreSQL they race for row locks)', () => {
  test('links and unlinks naming the same ids in opposite orders all succeed; the counts add up', async () => {
    const apps: number[] = [];
    for (let i = 0; i < 8; i++) apps.push(await newApp());
    const roles: number[] = [];
    for (let i = 0; i < 8; i++) roles.push(await newRole());
    for (let round = 0; round < 5; round++) {
      const userId = await newUser();
      const order = (ids: number[], i: number) => (i % 2 ? [...ids].reverse() : ids);
      // 20 application calls (every fourth an unlink) and 10 role links, all at once.
      const [appReplies, roleReplies] = await Promise.all([
        Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            svc.request(i % 4 === 3 ? 'DELETE' : 'POST', `/user/${userId}/application/`, { body: order(apps, i) }),
          ),
        ),
        Promise.all(Array.from({ length: 10 }, (_, i) => svc.request('POST', `/user/${userId}/role/`, { body: order(roles, i) }))),
      ]);
      expect([...appReplies, ...roleReplies].map((r) => r.status)).toEqual(Array(30).fill(200));
      // Every role link was made exactly once, whatever the interleaving.
      expect(roleReplies.reduce((sum, r) => sum + r.body.affected, 0)).toBe(roles.length);
      expect(await roleRows(userId)).toHaveLength(roles.length);
      // Links made minus links removed is what is linked now.
      const made = appReplies.filter((_, i) => i % 4 !== 3).reduce((sum, r) => sum + r.body.affected, 0);
      const removed = appReplies.filter((_, i) => i % 4 === 3).reduce((sum, r) => sum + r.body.affected, 0);
      expect((await svc.request('GET', `/user/${userId}/application/`)).body.total).toBe(made - removed);
    }
  });

  test("setting a link's right while its application is deleted: 200 or 404, never a 500; the link ends unlinked", async () => {
    for (let round = 0; round < 5; round++) {
      const [userId, appId] = [await newUser(), await newApp()];
      expect((await svc.request('POST', `/user/${userId}/application/`, { body: [appId] })).status).toBe(200);
      const [put, del] = await Promise.all([
        svc.request('PUT', `/user/${userId}/application/${appId}`, { body: { right: 5 } }),
        svc.request('DELETE', `/application/${appId}`),
      ]);
      expect([200, 404]).toContain(put.status);
      expect(del.status).toBe(204);
      expect((await svc.request('GET', `/user/${userId}/application/${appId}`)).status).toBe(404);
    }
  });
});

describe('row locks', () => {
  // The embedded database runs one session: a transaction held open here would block every other.
  const onPostgreSQL = process.env.DATABASE_URL ? test : test.skip;
  onPostgreSQL("setting a link's right locks the link row only: it does not wait for a transaction holding the application FOR SHARE (as a link request does)", async () => {
    const [userId, appId] = [await newUser(), await newApp()];
    expect((await link(userId, [appId])).status).toBe(200);
    const holder = svc.running.db.orm.em.fork();
    await holder.begin();
    try {
      await holder.execute('select id from applications where id = ? for share', [appId]);
      svc.queries.length = 0;
      const put = await Promise.race([
        setRight(userId, appId, { right: 7 }),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 3000)),
      ]);
      expect(put?.status).toBe(200);
      expect(svc.queries.find((q) => /for update/i.test(q))).toMatch(/for update of "?u0"?$/i);
    } finally {
      await holder.rollback();
    }
    expect(await appRows(userId)).toEqual([live(appId, 7)]);
  });
});
