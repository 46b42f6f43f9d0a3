import { randomBytes } from 'node:crypto';
import {
  svc,
  expectCleanReplies,
  call,
  list,
  G,
  inGroup,
  id,
  ids,
  dataIds,
  total,
  linksOf,
  expectedLinks,
  queryOf,
  liveUserCount,
  expectBadRequest,
  useService,
} from '../support/lists.js';

/** REST lists: defaults, page and pageSize, orderBy, the token list, pageSizes above 1000. */
useService();

describe('defaults', () => {
  test('no parameters: page 1, pageSize 20, ordered by id ascending, total of live records in X-Total-Count', async () => {
    // Enough users that the default page size matters.
    for (let i = 0; i < 22; i++) {
      expect((await call('POST', '/user/', { body: { firstName: `filler-${i}`, lastName: 'Filler' } })).status).toBe(201);
    }
    const res = await list('user');
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body).toHaveLength(20);
    const live = await liveUserCount();
    expect(total(res)).toBe(live);
    expect(live).toBeGreaterThan(20);
    const expected = await svc.sql<{ id: string }>('select id from users where deleted_at is null order by id limit 20');
    expect(dataIds(res)).toEqual(expected.map((r) => Number(r.id)));
    expect(dataIds(res)).not.toContain(id.zed);
    expect(linksOf(res)).toEqual(expectedLinks('/user/', '', { first: 1, next: 2, last: Math.ceil(live / 20) }));
  });

  test('empty values mean the defaults (the seed sends all four on every call)', async () => {
    const res = await call('GET', '/user/?filter=&orderBy=&page=&pageSize=');
    expect(res.status).toBe(200);
    const live = await liveUserCount();
    expect(total(res)).toBe(live);
    expect(dataIds(res)).toEqual(dataIds(await list('user')));
    // The other parameters stay in the page links as they were sent.
    expect(linksOf(res)).toEqual(expectedLinks('/user/', 'filter=&orderBy=&pageSize=', { first: 1, next: 2, last: Math.ceil(live / 20) }));
  });

  test('the group fixture as a whole, ordered by id', async () => {
    const params = { filter: inGroup() };
    const res = await list('user', params);
    expect(res.status).toBe(200);
    expect(total(res)).toBe(5);
    expect(dataIds(res)).toEqual(ids('anna', 'bob', 'carl', 'dana', 'eve'));
    expect(res.body[0]).toMatchObject({ firstName: `${G}-anna`, createdAt: '2020-01-01T00:00:00.000Z' });
    expect(res.body[0]).not.toHaveProperty('password');
    expect(res.body[0]).not.toHaveProperty('rememberToken');
    expect(linksOf(res)).toEqual(expectedLinks('/user/', queryOf(params), { first: 1, last: 1 }));
  });
});

describe('page and pageSize', () => {
  test('pages split the list; Link has first, prev, next and last; a page past the end is empty with the true total', async () => {
    const pageOf = (page: unknown, pageSize: unknown) => list('user', { filter: inGroup(), page, pageSize });
    const query = (pageSize: number) => queryOf({ filter: inGroup(), pageSize });
    const first = await pageOf(1, 2);
    const second = await pageOf(2, 2);
    const third = await pageOf(3, 2);
    for (const res of [first, second, third]) expect(total(res)).toBe(5);
    expect(dataIds(first)).toEqual(ids('anna', 'bob'));
    expect(dataIds(second)).toEqual(ids('carl', 'dana'));
    expect(dataIds(third)).toEqual(ids('eve'));
    expect(linksOf(first)).toEqual(expectedLinks('/user/', query(2), { first: 1, next: 2, last: 3 }));
    expect(linksOf(second)).toEqual(expectedLinks('/user/', query(2), { first: 1, prev: 1, next: 3, last: 3 }));
    expect(linksOf(third)).toEqual(expectedLinks('/user/', query(2), { first: 1, prev: 2, last: 3 }));
    const past = await pageOf(4, 2);
    expect(past.status).toBe(200);
    expect(past.body).toEqual([]);
    expect(total(past)).toBe(5);
    expect(linksOf(past)).toEqual(expectedLinks('/user/', query(2), { first: 1, prev: 3, last: 3 }));
    const farPast = await list('user', { filter: inGroup(), page: 1000000 });
    expect(farPast.body).toEqual([]);
    expect(total(farPast)).toBe(5);
    expect(linksOf(farPast)).toEqual(expectedLinks('/user/', queryOf({ filter: inGroup() }), { first: 1, prev: 1, last: 1 }));
    // Every page up to 2^53 - 1 is a page: far past the end, with the true total.
    for (const page of [450359962737051, Number.MAX_SAFE_INTEGER]) {
      const huge = await pageOf(String(page), 1000);
      expect(huge.status).toBe(200);
      expect(huge.body).toEqual([]);
      expect(total(huge)).toBe(5);
      expect(linksOf(huge)).toEqual(expectedLinks('/user/', query(1000), { first: 1, prev: 1, last: 1 }));
    }
  });

  test('pageSize bounds 1 and 1000 are taken as they are', async () => {
    const one = await list('user', { filter: inGroup(), pageSize: 1 });
    expect(total(one)).toBe(5);
    expect(dataIds(one)).toEqual(ids('anna'));
    expect(linksOf(one)).toEqual(expectedLinks('/user/', queryOf({ filter: inGroup(), pageSize: 1 }), { first: 1, next: 2, last: 5 }));
    const max = await list('user', { pageSize: 1000 });
    expect(max.status).toBe(200);
    expect(max.body).toHaveLength(await liveUserCount());
    expect(linksOf(max)).toEqual(expectedLinks('/user/', 'pageSize=1000', { first: 1, last: 1 }));
  });

  test.each(['0', '-1', '-9999999999999999', '+0'])('page=%s (below 1) is read as page 1', async (page) => {
    const res = await list('user', { filter: inGroup(), page, pageSize: 2 });
    expect(res.status).toBe(200);
    expect(dataIds(res)).toEqual(ids('anna', 'bob'));
    expect(total(res)).toBe(5);
    // Page 1: no prev; the links name real pages.
    expect(linksOf(res)).toEqual(expectedLinks('/user/', queryOf({ filter: inGroup(), pageSize: 2 }), { first: 1, next: 2, last: 3 }));
  });

  test.each(['0', '-1', '-20'])('pageSize=%s (below 1) is read as the default 20', async (pageSize) => {
    const res = await list('user', { pageSize });
    expect(res.status).toBe(200);
    expect(dataIds(res)).toEqual(dataIds(await list('user')));
    expect(res.body).toHaveLength(20);
    const live = await liveUserCount();
    expect(total(res)).toBe(live);
    expect(linksOf(res)).toEqual(expectedLinks('/user/', `pageSize=${pageSize}`, { first: 1, next: 2, last: Math.ceil(live / 20) }));
  });

  test.each([
    ['page', 'abc'],
    ['page', '1.5'],
    ['page', '1e2'],
    ['page', '0x10'],
    ['pageSize', 'abc'],
    ['pageSize', '1.5'],
    ['pageSize', '2e1'],
  ])('%s=%s (not an integer) → 400 naming the parameter', async (name, value) => {
    const res = await call('GET', `/user/?${name}=${encodeURIComponent(value)}`);
    expectBadRequest(res, name);
    expect(res.body.message).toContain(name);
  });

  test.each(['page', 'pageSize', 'filter', 'orderBy'])('repeated %s → 400 naming it', async (name) => {
    const value = { page: '1', pageSize: '5', filter: '{"status":1}', orderBy: 'lastName' }[name]!;
    const res = await call('GET', `/user/?${name}=${encodeURIComponent(value)}&${name}=${encodeURIComponent(value)}`);
    expectBadRequest(res, name);
  });

  test('the same rules on the token list', async () => {
    expectBadRequest(await call('GET', '/token/?pageSize=abc'), 'pageSize');
    expectBadRequest(await call('GET', '/token/?page=1.5'), 'page');
    const [{ count }] = await svc.sql<{ count: string }>('select count(*) from tokens where deleted_at is null');
    const all = dataIds(await list('token'));
    for (const query of ['page=0', 'pageSize=0', 'page=-1&pageSize=-1', 'pageSize=1001']) {
      const res = await call('GET', `/token/?${query}`);
      expect({ query, status: res.status, ids: dataIds(res), total: total(res) }).toEqual({ query, status: 200, ids: all, total: Number(count) });
    }
  });
});

describe('orderBy', () => {
  test.each([
    ['ref', ['eve', 'anna', 'bob', 'dana', 'carl']],
    ['ref asc', ['eve', 'anna', 'bob', 'dana', 'carl']],
    ['ref ASC', ['eve', 'anna', 'bob', 'dana', 'carl']],
    // Descending ref; the tie (bob, dana at 20) stays in ascending id order: id is the tie-breaker.
    ['ref desc', ['carl', 'bob', 'dana', 'anna', 'eve']],
    ['-ref', ['carl', 'bob', 'dana', 'anna', 'eve']],
    ['-createdAt', ['eve', 'dana', 'carl', 'bob', 'anna']],
    ['-id', ['eve', 'dana', 'carl', 'bob', 'anna']],
    ['lastName', ['eve', 'carl', 'dana', 'anna', 'bob']],
    // Multiple keys: status descending, then lastName, then (implicitly) id.
    ['status desc, lastName', ['carl', 'bob', 'dana', 'anna', 'eve']],
    ['-status,lastName desc', ['carl', 'bob', 'anna', 'dana', 'eve']],
    ['status, -ref', ['eve', 'dana', 'anna', 'bob', 'carl']],
  ])('orderBy=%s', async (orderBy, expected) => {
    const res = await list('user', { filter: inGroup(), orderBy });
    expect(res.status).toBe(200);
    expect(dataIds(res)).toEqual(ids(...expected));
  });

  test('pages stay stable over ties: walking pageSize 1 visits every record once, in id order within a tie', async () => {
    const seen: number[] = [];
    for (let page = 1; page <= 5; page++) {
      const res = await list('user', { filter: inGroup({ status: 1 }), orderBy: 'status', page, pageSize: 1 });
      expect(total(res)).toBe(2);
      seen.push(...dataIds(res));
    }
    expect(seen).toEqual(ids('anna', 'dana'));
    const byRef: number[] = [];
    for (let page = 1; page <= 3; page++) {
      byRef.push(...dataIds(await list('user', { filter: inGroup(), orderBy: '-ref', page, pageSize: 2 })));
    }
    expect(byRef).toEqual(ids('carl', 'bob', 'dana', 'anna', 'eve'));
  });

  test.each([
    ['password', 'unknown field'],
    ['rememberToken', 'unknown field'],
    ['nosuch', 'unknown field'],
    ['lastName, nosuch desc', 'unknown field'],
    ['lastName sideways', undefined],
    ['-lastName desc', undefined],
    ['id; drop table users', undefined],
  ])('orderBy=%s → 400', async (orderBy, message) => {
    const res = await list('user', { orderBy });
    expectBadRequest(res, 'orderBy', message);
  });

  test('token list: every output field is sortable but the secrets (stored encrypted, SPEC §9)', async () => {
    for (const field of ['accessToken', 'refreshToken']) {
      expectBadRequest(await list('token', { orderBy: `-${field}` }), 'orderBy', `${field} cannot be sorted on`);
    }
    for (const field of ['id', 'userID', 'scope', 'code', 'codeChallenge', 'tokenType', 'expireAt', 'client', 'version', 'createdAt', 'updatedAt']) {
      const res = await list('token', { orderBy: `-${field}` });
      expect({ field, status: res.status }).toEqual({ field, status: 200 });
    }
    expectBadRequest(await list('token', { orderBy: 'accessTokenHash' }), 'orderBy', 'unknown field');
  });
});

describe('token list', () => {
  const secretA = `lists-a-${randomBytes(8).toString('hex')}`;
  const secretB = `lists-b-${randomBytes(8).toString('hex')}`;
  let tokenA: number;
  let tokenB: number;
  beforeAll(async () => {
    const a = await call('POST', '/token/', {
      body: { userID: id.anna, accessToken: secretA, scope: 'user:read', tokenType: 'bearer', expireAt: '2030-01-01T00:00:00Z' },
      headers: { 'X-Client': 'lists-client' },
    });
    const b = await call('POST', '/token/', { body: { userID: id.anna, accessToken: secretB, scope: 'token:read', codeChallenge: 'cc' } });
    expect([a.status, b.status]).toEqual([201, 201]);
    tokenA = a.body;
    tokenB = b.body;
    expect((await call('PATCH', `/token/${tokenB}`, { body: { refreshToken: 'r2' } })).status).toBe(200);
  });

  test('defaults: page 1, pageSize 20, id order, total of live tokens', async () => {
    const res = await list('token');
    expect(res.status).toBe(200);
    const [{ count }] = await svc.sql<{ count: string }>('select count(*) from tokens where deleted_at is null');
    expect(total(res)).toBe(Number(count));
    expect(linksOf(res)).toEqual(expectedLinks('/token/', '', { first: 1, last: Math.max(1, Math.ceil(Number(count) / 20)) }));
    const expected = await svc.sql<{ id: string }>('select id from tokens where deleted_at is null order by id limit 20');
    expect(dataIds(res)).toEqual(expected.map((r) => Number(r.id)));
  });

  test.each<[string, (a: number, b: number) => Record<string, unknown>, 'A' | 'B' | 'AB' | '']>([
    ['userID', () => ({ userID: id.anna }), 'AB'],
    ['accessToken equality', () => ({ accessToken: secretA }), 'A'],
    ['scope like', () => ({ userID: id.anna, scope: { like: 'token:%' } }), 'B'],
    ['expireAt is null', () => ({ userID: id.anna, expireAt: null }), 'B'],
    ['expireAt after a date', () => ({ userID: id.anna, expireAt: { gt: '2029-12-31T20:00:00-02:00' } }), 'A'],
    ['version as a decimal string', () => ({ userID: id.anna, version: '2' }), 'B'],
    ['version as a number', () => ({ userID: id.anna, version: { gte: 1, lt: 2 } }), 'A'],
    ['client', () => ({ userID: id.anna, client: 'lists-client' }), 'A'],
    ['codeChallenge isNull false', () => ({ userID: id.anna, codeChallenge: { isNull: false } }), 'B'],
    ['id nin', (a) => ({ userID: id.anna, id: { nin: [a] } }), 'B'],
    ['tokenType ilike', () => ({ userID: id.anna, tokenType: { ilike: 'BEAR%' } }), 'A'],
    ['a user with no tokens', () => ({ userID: id.eve }), ''],
  ])('%s', async (_name, makeFilter, expected) => {
    const res = await list('token', { filter: makeFilter(tokenA, tokenB) });
    expect(res.status).toBe(200);
    const want = [...expected].map((c) => (c === 'A' ? tokenA : tokenB));
    expect(dataIds(res)).toEqual(want);
    expect(total(res)).toBe(want.length);
  });

  test('order by -version then id', async () => {
    const res = await list('token', { filter: { userID: id.anna }, orderBy: '-version' });
    expect(dataIds(res)).toEqual([tokenB, tokenA]);
  });

  test('wrong types and unknown fields on the token list', async () => {
    expectBadRequest(await list('token', { filter: { userID: 'anna' } }), 'filter.userID.eq', 'integer');
    expectBadRequest(await list('token', { filter: { accessTokenHash: 'x' } }), 'filter.accessTokenHash', 'unknown field');
    expectBadRequest(await list('token', { filter: { version: { like: '1%' } } }), 'filter.version.like', 'text');
    expectBadRequest(await list('token', { filter: { expireAt: { gt: 5 } } }), 'filter.expireAt.gt', 'ISO 8601');
  });

  test('the error message never echoes a filter value', async () => {
    const res = await list('token', { filter: { accessToken: { gt: 1, nosuch: secretA } } });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain(secretA);
  });
});

describe('pageSize above 1000', () => {
  const bulk = `bulk${G}`;
  beforeAll(async () => {
    // 1001 users straight into the table (the live count is kept by triggers), to tell 1000 from 1001.
    await svc.sql(`insert into users (first_name, last_name) select ? || '-' || g, 'Bulk' from generate_series(1, 1001) g`, [bulk]);
  });
  afterAll(async () => {
    await svc.sql(`update users set deleted_at = now() where first_name like ? and deleted_at is null`, [`${bulk}-%`]);
  });

  test.each(['1001', '5000', '9999999999999999'])('pageSize=%s is read as 1000', async (pageSize) => {
    const params = { filter: { firstName: { like: `${bulk}-%` } }, orderBy: 'id', pageSize };
    const expected = (await svc.sql<{ id: string }>('select id from users where first_name like ? order by id', [`${bulk}-%`])).map((r) => Number(r.id));
    expect(expected).toHaveLength(1001);
    const first = await list('user', params);
    expect(first.status).toBe(200);
    expect(total(first)).toBe(1001);
    expect(dataIds(first)).toEqual(expected.slice(0, 1000));
    expect(linksOf(first)).toEqual(expectedLinks('/user/', queryOf(params), { first: 1, next: 2, last: 2 }));
    const second = await list('user', { ...params, page: 2 });
    expect(dataIds(second)).toEqual(expected.slice(1000));
    expect(linksOf(second)).toEqual(expectedLinks('/user/', queryOf(params), { first: 1, prev: 1, last: 2 }));
    // Unfiltered too: the live count is over 1000, and a page holds 1000.
    const unfiltered = await list('user', { pageSize });
    expect(unfiltered.body).toHaveLength(1000);
    expect(total(unfiltered)).toBe(await liveUserCount());
  });
});

describe('every reply of this file', () => {
  test('no 500, no password/rememberToken keys, no SQL or stack in error bodies', () => {
    expectCleanReplies();
  });
});
