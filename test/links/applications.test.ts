import {
  svc,
  ISO,
  UNKNOWN_ID,
  fresh,
  createRecord,
  newUser,
  newApp,
  deleted,
  appRows,
  live,
  gone,
  link,
  unlink,
  setRight,
  linksOf,
  expectedLinks,
  idsIn,
  BAD_BODIES,
  useService,
} from '../support/links.js';

/** /user/{id}/application/: link, unlink, list, get, and PUT of the right (REST). */
useService();

describe('POST /user/{id}/application/ (link)', () => {
  test('creates the links with right 0; duplicates in the body count once', async () => {
    const user = await newUser();
    const [a, b] = [await newApp(), await newApp()];
    const res = await link(user, [a, b, b, a]);
    expect(res.status).toBe(201);
    expect(res.body).toBe(2);
    expect(await appRows(user)).toEqual([live(a), live(b)]);
  });

  test('ids already linked are left alone (their right is kept) and not counted', async () => {
    const user = await newUser();
    const [a, b] = [await newApp(), await newApp()];
    expect((await link(user, [a])).body).toBe(1);
    expect((await setRight(user, a, { right: 5 })).status).toBe(200);

    const res = await link(user, [a, b]);
    expect(res.status).toBe(201);
    expect(res.body).toBe(1);
    expect(await appRows(user)).toEqual([live(a, 5), live(b)]);

    const again = await link(user, [b, a]);
    expect(again.body).toBe(0);
    expect(await appRows(user)).toEqual([live(a, 5), live(b)]);
  });

  test('works without the trailing slash', async () => {
    const user = await newUser();
    const a = await newApp();
    const res = await svc.request('POST', `/user/${user}/application`, { body: [a] });
    expect(res.status).toBe(201);
    expect(res.body).toBe(1);
    expect(await appRows(user)).toEqual([live(a)]);
  });

  test('an empty array links nothing', async () => {
    const user = await newUser();
    const res = await link(user, []);
    expect(res.status).toBe(201);
    expect(res.body).toBe(0);
    expect(await appRows(user)).toEqual([]);
  });

  test('1000 entries are accepted (the limit), duplicates still counting once', async () => {
    const user = await newUser();
    const a = await newApp();
    const res = await link(
      user,
      Array.from({ length: 1000 }, () => a),
    );
    expect(res.status).toBe(201);
    expect(res.body).toBe(1);
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
    expect(res.body).toBe(2);
    expect(await appRows(user)).toEqual([gone(a), gone(b), live(c)]);

    const list = await svc.request('GET', `/user/${user}/application/`);
    expect(list.body.map((x: { id: number }) => x.id)).toEqual([c]);
    expect(list.headers.get('x-total-count')).toBe('1');
    expect((await svc.request('GET', `/user/${user}/application/${a}`)).status).toBe(404);
  });

  test('unlinking an absent link is a no-op (0)', async () => {
    const user = await newUser();
    const [a, never] = [await newApp(), await newApp()];
    await link(user, [a]);
    await unlink(user, [a]);

    expect((await unlink(user, [a])).body).toBe(0);
    const res = await unlink(user, [never]);
    expect(res.status).toBe(200);
    expect(res.body).toBe(0);
    expect(await appRows(user)).toEqual([gone(a)]);
  });

  test("leaves other users' links alone", async () => {
    const [user, other] = [await newUser(), await newUser()];
    const a = await newApp();
    await link(user, [a]);
    await link(other, [a]);
    expect((await unlink(user, [a])).body).toBe(1);
    expect(await appRows(other)).toEqual([live(a)]);
  });

  test('works without the trailing slash', async () => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const res = await svc.request('DELETE', `/user/${user}/application`, { body: [a] });
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
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
    expect((await setRight(user, a, { right: 9 })).body).toBe(1);
    await unlink(user, [a]);
    expect(await appRows(user)).toEqual([gone(a, 9)]);

    const res = await link(user, [a]);
    expect(res.body).toBe(1);
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
    for (const [key, right] of [
      ['beta', 5],
      ['gamma', 10],
      ['alpha', 1],
    ] as const) {
      const created = await createRecord<(typeof apps)['alpha']>('/application', { name: `${prefix}-${key}` });
      apps[key] = created;
      expect((await link(user, [created.id])).body).toBe(1);
      expect((await setRight(user, created.id, { right })).body).toBe(1);
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
  const names = (body: Array<{ name: string }>) => body.map((x) => x.name.slice(prefix.length + 1));
  const get = (query = '', path = `/user/${user}/application/`) => svc.request('GET', `${path}${query}`);
  const q = (filter: unknown) => `filter=${encodeURIComponent(JSON.stringify(filter))}`;
  const total = (res: { headers: Headers }) => res.headers.get('x-total-count');

  test('answers a bare array of the linked live applications, each with its right, by id; total and pages in headers', async () => {
    for (const path of [`/user/${user}/application/`, `/user/${user}/application`]) {
      const res = await get('', path);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([item('beta', 5), item('gamma', 10), item('alpha', 1)]);
      expect(total(res)).toBe('3');
      expect(linksOf(res)).toEqual(expectedLinks(path, '', { first: 1, last: 1 }));
    }
    for (const entry of (await get()).body) {
      expect(Object.keys(entry).sort()).toEqual(['createdAt', 'id', 'name', 'right', 'updatedAt']);
    }
  });

  test('a user without links gets an empty array', async () => {
    const path = `/user/${await newUser()}/application/`;
    const res = await get('', path);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(total(res)).toBe('0');
    expect(linksOf(res)).toEqual(expectedLinks(path, '', { first: 1, last: 1 }));
  });

  test('filters on right', async () => {
    const res = await get(`?${q({ right: { gte: 5 } })}`);
    expect(res.status).toBe(200);
    expect(total(res)).toBe('2');
    expect(names(res.body)).toEqual(['beta', 'gamma']);
    expect(names((await get(`?${q({ right: 1 })}`)).body)).toEqual(['alpha']);
    expect(names((await get(`?${q({ right: { in: [1, 10] } })}`)).body)).toEqual(['gamma', 'alpha']);
  });

  test('filters on application fields', async () => {
    const res = await get(`?${q({ name: { like: `${prefix}-a%` } })}`);
    expect(names(res.body)).toEqual(['alpha']);
    const or = await get(`?${q({ or: [{ id: apps.alpha.id }, { name: `${prefix}-gamma` }] })}`);
    expect(total(or)).toBe('2');
    expect(names(or.body)).toEqual(['gamma', 'alpha']);
    const both = await get(`?${q({ name: { ilike: `${prefix.toUpperCase()}%` }, right: { lt: 10 } })}`);
    expect(names(both.body)).toEqual(['beta', 'alpha']);
  });

  test('filters in the expression form, field names in any case', async () => {
    const expr = (text: string) => `filter=${encodeURIComponent(text)}`;
    const res = await get(`?${expr('right ge 5')}`);
    expect(res.status).toBe(200);
    expect(total(res)).toBe('2');
    expect(names(res.body)).toEqual(['beta', 'gamma']);
    const or = await get(`?${expr(`Right eq 1 or NAME eq '${prefix}-gamma'`)}`);
    expect(names(or.body)).toEqual(['gamma', 'alpha']);
    const json = await get(`?${q({ RIGHT: { lt: 10 }, Name: { like: `${prefix}-%` } })}`);
    expect(names(json.body)).toEqual(['beta', 'alpha']);
  });

  test('orders by application fields and by right', async () => {
    expect(names((await get('?orderBy=-name')).body)).toEqual(['gamma', 'beta', 'alpha']);
    expect(names((await get('?orderBy=name')).body)).toEqual(['alpha', 'beta', 'gamma']);
    expect(names((await get('?orderBy=-right')).body)).toEqual(['gamma', 'beta', 'alpha']);
    expect(names((await get('?orderBy=right%20asc')).body)).toEqual(['alpha', 'beta', 'gamma']);
    expect(names((await get('?orderBy=-id')).body)).toEqual(['alpha', 'gamma', 'beta']);
    // Field names and keywords in any case.
    expect(names((await get('?orderBy=RIGHT%20DESC')).body)).toEqual(['gamma', 'beta', 'alpha']);
    expect(names((await get('?orderBy=-Name')).body)).toEqual(['gamma', 'beta', 'alpha']);
  });

  test('pages, with the true total in X-Total-Count and the pages in Link', async () => {
    const path = `/user/${user}/application/`;
    const page2 = await get('?orderBy=name&page=2&pageSize=2');
    expect(page2.status).toBe(200);
    expect(page2.body).toEqual([item('gamma', 10)]);
    expect(total(page2)).toBe('3');
    expect(linksOf(page2)).toEqual(expectedLinks(path, 'orderBy=name&pageSize=2', { first: 1, prev: 1, last: 2 }));
    const page1 = await get('?orderBy=name&page=1&pageSize=2');
    expect(names(page1.body)).toEqual(['alpha', 'beta']);
    expect(linksOf(page1)).toEqual(expectedLinks(path, 'orderBy=name&pageSize=2', { first: 1, next: 2, last: 2 }));
    const past = await get('?page=5&pageSize=2');
    expect(past.status).toBe(200);
    expect(past.body).toEqual([]);
    expect(total(past)).toBe('3');
    // Past the end: prev is the last page, no next.
    expect(linksOf(past)).toEqual(expectedLinks(path, 'pageSize=2', { first: 1, prev: 2, last: 2 }));
  });

  test('page and pageSize below 1 mean the defaults; pageSize above 1000 means 1000', async () => {
    const all = [item('beta', 5), item('gamma', 10), item('alpha', 1)];
    for (const query of ['?page=0', '?page=-3', '?pageSize=0', '?pageSize=-1', '?pageSize=1001', '?page=0&pageSize=0']) {
      const res = await get(query);
      expect({ query, status: res.status, body: res.body, total: total(res) }).toEqual({ query, status: 200, body: all, total: '3' });
    }
    // page 0 is page 1: no prev, and the second page of one-item pages follows.
    const zero = await get('?page=0&pageSize=1&orderBy=name');
    expect(names(zero.body)).toEqual(['alpha']);
    const path = `/user/${user}/application/`;
    expect(linksOf(zero)).toEqual(expectedLinks(path, 'pageSize=1&orderBy=name', { first: 1, next: 2, last: 3 }));
  });

  test.each([
    ['an unknown filter field', () => q({ userID: 1 })],
    ['a wrong value type for right', () => q({ right: 'five' })],
    ['an unknown operator', () => q({ right: { between: [1, 2] } })],
    ['an unknown orderBy field', () => 'orderBy=deletedAt'],
    ['an expression that does not parse', () => `filter=${encodeURIComponent('right ge')}`],
    ['page abc', () => 'page=abc'],
    ['pageSize 1.5', () => 'pageSize=1.5'],
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
  test('updates the right and answers 1; other body fields are ignored', async () => {
    const user = await newUser();
    const [a, other] = [await newApp(), await newApp()];
    await link(user, [a, other]);
    const before = (await svc.request('GET', `/user/${user}/application/${a}`)).body;

    const res = await setRight(user, a, { right: 7, userID: 1, applicationID: other, createdAt: '2000-01-01T00:00:00Z' });
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect(res.text).toBe('1');
    expect(res.headers.get('vary')).toMatch(/\bPrefer\b/i);
    expect(res.headers.get('preference-applied')).toBeNull();
    const after = await svc.request('GET', `/user/${user}/application/${a}`);
    expect(after.body).toEqual({
      userID: user,
      applicationID: a,
      right: 7,
      createdAt: before.createdAt,
      updatedAt: expect.stringMatching(ISO),
    });
    expect(await appRows(user)).toEqual([live(a, 7), live(other, 0)]);
  });

  test('with Prefer: return=representation it answers the updated link', async () => {
    const user = await newUser();
    const [a, other] = [await newApp(), await newApp()];
    await link(user, [a, other]);
    const before = (await svc.request('GET', `/user/${user}/application/${a}`)).body;

    const res = await svc.request('PUT', `/user/${user}/application/${a}`, {
      body: { right: 7, userID: 1, applicationID: other },
      headers: { Prefer: 'return=representation' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.headers.get('vary')).toMatch(/\bPrefer\b/i);
    expect(res.body).toEqual({
      userID: user,
      applicationID: a,
      right: 7,
      createdAt: before.createdAt,
      updatedAt: expect.stringMatching(ISO),
    });
    expect((await svc.request('GET', `/user/${user}/application/${a}`)).body).toEqual(res.body);
    expect(await appRows(user)).toEqual([live(a, 7), live(other, 0)]);

    // return=minimal is the default answer.
    const minimal = await svc.request('PUT', `/user/${user}/application/${a}`, { body: { right: 8 }, headers: { Prefer: 'return=minimal' } });
    expect(minimal.status).toBe(200);
    expect(minimal.body).toBe(1);
    expect(await appRows(user)).toEqual([live(a, 8), live(other, 0)]);
  });

  test('the same right again still answers 1 (matched), and leaves updatedAt as it was', async () => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    expect((await setRight(user, a, { right: 6 })).body).toBe(1);
    const before = (await svc.request('GET', `/user/${user}/application/${a}`)).body;
    const res = await setRight(user, a, { right: 6 });
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect((await svc.request('GET', `/user/${user}/application/${a}`)).body).toEqual(before);
  });

  test.each([2147483647, -2147483648, 0, 2 ** 31, -(2 ** 31) - 1, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER])(
    'accepts the safe integer %d (a 64-bit bit mask; stored as bigint)',
    async (right) => {
      const user = await newUser();
      const a = await newApp();
      await link(user, [a]);
      const res = await setRight(user, a, { right });
      expect(res.status).toBe(200);
      expect(res.body).toBe(1);
      expect(await appRows(user)).toEqual([live(a, right)]);
      expect((await svc.request('GET', `/user/${user}/application/${a}`)).body.right).toBe(right);
      // Exactly, in the list and in its filter too.
      const listed = await svc.request('GET', `/user/${user}/application/?filter=${encodeURIComponent(JSON.stringify({ right }))}`);
      expect(listed.body.map((x: { id: number; right: number }) => [x.id, x.right])).toEqual([[a, right]]);
    },
  );

  test.each<[string, unknown, string]>([
    ['no right', {}, 'is required'],
    ['a null right', { right: null }, 'must not be null'],
    ['a fraction', { right: 1.5 }, 'must be an integer'],
    ['a string', { right: '5' }, 'must be an integer'],
    ['2^53 (past the safe integers)', { right: 2 ** 53 }, 'must be'],
    ['-2^53', { right: -(2 ** 53) }, 'must be'],
    ['1e300', { right: 1e300 }, 'must be'],
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
