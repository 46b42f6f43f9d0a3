import { randomBytes } from 'node:crypto';
import { startTestService, type Reply, type TestService } from '../support/service.js';

/**
 * SPEC §5: the list language (filter, orderBy, page, pageSize) over GET /user/ and GET /token/.
 * Every list below is scoped to a fixture group by its firstName prefix, so the bootstrap user and
 * the users other tests create do not disturb the expected results.
 */
let svc: TestService;
const replies: Reply[] = [];

async function call(method: string, path: string, options?: Parameters<TestService['request']>[2]): Promise<Reply> {
  const reply = await svc.request(method, path, options);
  replies.push(reply);
  return reply;
}

/** GET a list with the given query parameters (each value is URL-encoded; objects as JSON). */
function list(resource: 'user' | 'token', params: Record<string, unknown> = {}): Promise<Reply> {
  const query = queryOf(params);
  return call('GET', `/${resource}/${query ? `?${query}` : ''}`);
}

const G = `g${randomBytes(4).toString('hex')}`;
/** Restricts a filter to the fixture group (sibling keys are and-ed). */
const inGroup = (filter: Record<string, unknown> = {}) => ({ firstName: { like: `${G}-%` }, ...filter });

interface Fixture {
  name: string;
  lastName: string;
  status: number;
  ref: number;
  outKey: string | null;
  createdAt: string;
}
const FIXTURES: Fixture[] = [
  { name: 'anna', lastName: 'Smith', status: 1, ref: 10, outKey: 'k1', createdAt: '2020-01-01T00:00:00.000Z' },
  { name: 'bob', lastName: 'smithers', status: 2, ref: 20, outKey: null, createdAt: '2020-01-02T00:00:00.000Z' },
  { name: 'carl', lastName: 'Jones', status: 3, ref: 30, outKey: 'k3', createdAt: '2020-01-03T00:00:00.000Z' },
  { name: 'dana', lastName: 'SMALL', status: 1, ref: 20, outKey: null, createdAt: '2020-01-04T00:00:00.000Z' },
  { name: 'eve', lastName: 'Brown', status: 0, ref: -5, outKey: 'k5', createdAt: '2020-01-05T00:00:00.000Z' },
];
/** Fixture name → user id. */
const id: Record<string, number> = {};
const ids = (...names: string[]) => names.map((n) => id[n]);
/** The ids of a list answer (a bare JSON array of records). */
function dataIds(res: Reply): number[] {
  expect(Array.isArray(res.body)).toBe(true);
  return res.body.map((r: { id: number }) => r.id);
}

/** X-Total-Count of a list answer, as a number (it must be there, a decimal integer). */
function total(res: Reply): number {
  const header = res.headers.get('x-total-count');
  expect(header).toMatch(/^\d+$/);
  return Number(header);
}

/** A URL with its query parameters sorted: their order is not part of the contract, only their values. */
function sortedUrl(url: string): string {
  const [path, search = ''] = url.split('?', 2);
  const params = new URLSearchParams(search);
  params.sort();
  return `${path}?${params.toString()}`;
}

/** The RFC 8288 Link header of a list answer as [rel, URL (query sorted)], in the order sent. */
function linksOf(res: Reply): Array<[string, string]> {
  const header = res.headers.get('link') ?? '';
  return [...header.matchAll(/<([^>]*)>;\s*rel="([^"]+)"/g)].map((m) => [m[2], sortedUrl(m[1])]);
}

/** The Link a list at `path?query` should carry: each rel's URL is the request's with only page changed. */
function expectedLinks(path: string, query: string, pages: { first: number; prev?: number; next?: number; last: number }): Array<[string, string]> {
  const at = (page: number) => sortedUrl(`${path}?${query}${query ? '&' : ''}page=${page}`);
  return (['first', 'prev', 'next', 'last'] as const).flatMap((rel) => (pages[rel] === undefined ? [] : [[rel, at(pages[rel]!)] as [string, string]]));
}

/** The query string list() sends for these parameters. */
function queryOf(params: Record<string, unknown>): string {
  return Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join('&');
}

async function liveUserCount(): Promise<number> {
  const [{ count }] = await svc.sql<{ count: string }>('select count(*) from users where deleted_at is null');
  return Number(count);
}

function expectBadRequest(res: Reply, field: string, message?: string | RegExp): void {
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ code: 400, error: 'BAD_REQUEST', message: expect.any(String), requestId: expect.any(String) });
  expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
  expect(res.body.details).toEqual(
    expect.arrayContaining([
      {
        field,
        message: message === undefined ? expect.any(String) : typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message),
      },
    ]),
  );
}

beforeAll(async () => {
  svc = await startTestService();
  for (const f of FIXTURES) {
    const res = await call('POST', '/user/', {
      body: { firstName: `${G}-${f.name}`, lastName: f.lastName, status: f.status, ref: f.ref, outKey: f.outKey },
    });
    if (res.status !== 201) throw new Error(`fixture: ${res.text}`);
    id[f.name] = res.body;
    // createdAt is set by the service; pin it to a known instant so date filters and orders are exact.
    await svc.sql('update users set created_at = ? where id = ?', [f.createdAt, res.body]);
  }
  // A deleted member of the group: never listed, never counted.
  const gone = await call('POST', '/user/', { body: { firstName: `${G}-zed`, lastName: 'Smith', status: 1, ref: 10 } });
  id.zed = gone.body;
  const destroyed = await call('DELETE', `/user/${gone.body}`);
  expect([destroyed.status, destroyed.body]).toEqual([200, 1]);
});
afterAll(async () => {
  await svc?.stop();
});

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

describe('filter', () => {
  test('the SPEC §5 example', async () => {
    const res = await call('GET', `/user/?filter=${encodeURIComponent('{"status":{"in":[1,2]},"lastName":{"ilike":"sm%"}}')}&orderBy=-createdAt`);
    expect(res.status).toBe(200);
    const expected = await svc.sql<{ id: string }>(
      "select id from users where deleted_at is null and status in (1, 2) and last_name ilike 'sm%' order by created_at desc, id asc",
    );
    expect(total(res)).toBe(expected.length);
    expect(dataIds(res)).toEqual(expected.map((r) => Number(r.id)).slice(0, 20));
    // Within the group: anna (Smith, 1), bob (smithers, 2), dana (SMALL, 1), newest first; zed is deleted.
    const group = await list('user', { filter: inGroup({ status: { in: [1, 2] }, lastName: { ilike: 'sm%' } }), orderBy: '-createdAt' });
    expect(dataIds(group)).toEqual(ids('dana', 'bob', 'anna'));
    expect(total(group)).toBe(3);
  });

  test('the SPEC §5 examples in the expression form', async () => {
    const group = `id ge ${id.anna} and id le ${id.eve}`;
    const first = await list('user', { filter: `${group} and status ge 1 and lastName ne 'x'`, orderBy: 'createdAt desc' });
    expect(first.status).toBe(200);
    expect(dataIds(first)).toEqual(ids('dana', 'carl', 'bob', 'anna'));
    expect(total(first)).toBe(4);
    const second = await list('user', { filter: `${group} and status eq 1 and (lastName eq 'Smith' or not firstName eq "Ann")` });
    expect(dataIds(second)).toEqual(ids('anna', 'dana'));
    // Over the whole table, the expression and the JSON form find the same rows.
    const expression = await list('user', { filter: "status ge 1 and lastName ne 'x'", orderBy: 'createdAt desc' });
    const json = await list('user', { filter: { status: { gte: 1 }, lastName: { ne: 'x' } }, orderBy: '-createdAt' });
    expect(dataIds(expression)).toEqual(dataIds(json));
    expect(total(expression)).toBe(total(json));
  });

  test.each<[string, string, Record<string, unknown>, string[]]>([
    ['eq', 'status eq 1', { status: 1 }, ['anna', 'dana']],
    ['keywords and field names in any case', 'STATUS EQ 1 AND LastName Ne "x"', { status: 1 }, ['anna', 'dana']],
    ['an unquoted word is a string', 'lastName eq Smith', { lastName: 'Smith' }, ['anna']],
    ['single and double quotes', `lastName eq 'Jones' or lastName eq "Brown"`, { lastName: { in: ['Jones', 'Brown'] } }, ['carl', 'eve']],
    ['eq null is "is null"', 'outKey eq null', { outKey: null }, ['bob', 'dana']],
    ['ne null is "is not null"', 'outKey ne null', { outKey: { isNull: false } }, ['anna', 'carl', 'eve']],
    ['gt and le', 'ref gt 10 and ref le 20', { ref: { gt: 10, lte: 20 } }, ['bob', 'dana']],
    ['ge and lt, negative numbers', 'ref ge -5 and ref lt 10', { ref: { gte: -5, lt: 10 } }, ['eve']],
    ['not binds tightest', 'not status eq 1 and ref ge 0', { not: { status: 1 }, ref: { gte: 0 } }, ['bob', 'carl']],
    ['and binds tighter than or', 'status eq 1 or status eq 2 and ref eq 30', { or: [{ status: 1 }, { status: 2, ref: 30 }] }, ['anna', 'dana']],
    ['parentheses', '(status eq 1 or status eq 2) and ref eq 20', { status: { in: [1, 2] }, ref: 20 }, ['bob', 'dana']],
    ['a date with an offset', "createdAt ge '2020-01-03T05:00:00+05:00'", { createdAt: { gte: '2020-01-03T00:00:00Z' } }, ['carl', 'dana', 'eve']],
    ['a doubled quote inside quotes', "lastName eq 'O''Brien'", { lastName: "O'Brien" }, []],
  ])('expression form: %s', async (_name, expression, json, expected) => {
    const group = `id ge ${id.anna} and id le ${id.eve}`;
    const res = await list('user', { filter: `${group} and (${expression})` });
    expect(res.status).toBe(200);
    expect(dataIds(res)).toEqual(ids(...expected));
    expect(total(res)).toBe(expected.length);
    // The JSON form of the same condition finds the same rows.
    expect(dataIds(await list('user', { filter: inGroup(json) }))).toEqual(ids(...expected));
  });

  test.each<[string, string, string]>([
    ['an unknown field', 'nosuch eq 1', 'filter.nosuch'],
    ['password', "password eq ''", 'filter.password'],
  ])('expression form: %s is a 400 naming the field', async (_name, expression, field) => {
    expectBadRequest(await list('user', { filter: expression }), field, 'unknown field');
  });

  test('field names in the JSON form and in orderBy match in any case', async () => {
    expect(dataIds(await list('user', { filter: inGroup({ LASTNAME: 'Smith' }) }))).toEqual(ids('anna'));
    expect(dataIds(await list('user', { filter: inGroup({ Status: { in: [1, 2] }, outkey: null }) }))).toEqual(ids('bob', 'dana'));
    const ordered = await list('user', { filter: inGroup(), orderBy: 'LastName DESC' });
    expect(ordered.status).toBe(200);
    expect(dataIds(ordered)).toEqual(ids('bob', 'anna', 'dana', 'carl', 'eve'));
    expect(dataIds(await list('user', { filter: inGroup(), orderBy: '-CreatedAt' }))).toEqual(ids('eve', 'dana', 'carl', 'bob', 'anna'));
    expect(dataIds(await list('user', { filter: inGroup(), orderBy: 'STATUS desc, lastname' }))).toEqual(ids('carl', 'bob', 'dana', 'anna', 'eve'));
    const tokens = await list('token', { filter: { USERID: { gte: 1 }, TokenType: { ne: 'no-such-type' } }, orderBy: 'ID desc' });
    expect(tokens.status).toBe(200);
    const allTokens = (await svc.sql<{ id: string }>('select id from tokens where deleted_at is null order by id desc limit 20')).map((r) => Number(r.id));
    expect(allTokens.length).toBeGreaterThan(0);
    expect(dataIds(tokens)).toEqual(allTokens);
  });

  test.each<[string, Record<string, unknown>, string[]]>([
    ['equality shorthand', { status: 1 }, ['anna', 'dana']],
    ['string equality shorthand', { lastName: 'Smith' }, ['anna']],
    ['null shorthand is "is null"', { outKey: null }, ['bob', 'dana']],
    ['eq', { status: { eq: 2 } }, ['bob']],
    ['ne', { status: { ne: 1 } }, ['bob', 'carl', 'eve']],
    ['gt', { ref: { gt: 10 } }, ['bob', 'carl', 'dana']],
    ['gte', { ref: { gte: 20 } }, ['bob', 'carl', 'dana']],
    ['lt', { ref: { lt: 20 } }, ['anna', 'eve']],
    ['lte', { ref: { lte: 10 } }, ['anna', 'eve']],
    ['gt and lt on one field', { ref: { gt: 0, lt: 25 } }, ['anna', 'bob', 'dana']],
    ['in', { status: { in: [1, 2] } }, ['anna', 'bob', 'dana']],
    ['in with an empty array', { status: { in: [] } }, []],
    ['nin', { status: { nin: [1, 2] } }, ['carl', 'eve']],
    ['in on a string field', { lastName: { in: ['Jones', 'Brown', 'nobody'] } }, ['carl', 'eve']],
    ['like is case-sensitive', { lastName: { like: 'Sm%' } }, ['anna']],
    ['like with _', { lastName: { like: '_ones' } }, ['carl']],
    ['ilike ignores case', { lastName: { ilike: 'sm%' } }, ['anna', 'bob', 'dana']],
    ['isNull true', { outKey: { isNull: true } }, ['bob', 'dana']],
    ['isNull false', { outKey: { isNull: false } }, ['anna', 'carl', 'eve']],
    ['sibling keys are and-ed', { status: 1, lastName: 'Smith' }, ['anna']],
    ['and', { and: [{ ref: { gte: 10 } }, { ref: { lte: 20 } }] }, ['anna', 'bob', 'dana']],
    ['or', { or: [{ status: 3 }, { ref: -5 }] }, ['carl', 'eve']],
    ['not', { not: { status: 1 } }, ['bob', 'carl', 'eve']],
    ['not null shorthand', { not: { outKey: null } }, ['anna', 'carl', 'eve']],
    ['nested and/or/not', { or: [{ and: [{ status: 1 }, { not: { lastName: 'Smith' } }] }, { lastName: { like: 'Br%' } }] }, ['dana', 'eve']],
    ['or and a sibling key', { or: [{ status: 1 }, { status: 2 }], outKey: null }, ['bob', 'dana']],
    // Several operators on one field all hold, whatever their order, isNull included.
    ['eq and isNull true (never both)', { outKey: { eq: 'k1', isNull: true } }, []],
    ['isNull true and eq, other order', { outKey: { isNull: true, eq: 'k1' } }, []],
    ['ne and isNull false', { outKey: { ne: 'k1', isNull: false } }, ['carl', 'eve']],
    ['isNull false and ne, other order', { outKey: { isNull: false, ne: 'k1' } }, ['carl', 'eve']],
    ['ne with null and gt', { ref: { ne: null, gt: 10 } }, ['bob', 'carl', 'dana']],
    ['two backslashes match one', { lastName: { like: 'Jone\\%' } }, []],
    // An empty filter matches every row: neutral in and, true in or; not {} matches none.
    ['an empty filter inside or', { or: [{}, { status: 3 }] }, ['anna', 'bob', 'carl', 'dana', 'eve']],
    ['an empty and inside or', { or: [{ and: [{}] }, { status: 3 }] }, ['anna', 'bob', 'carl', 'dana', 'eve']],
    ['an empty filter inside and', { and: [{}, { status: 3 }] }, ['carl']],
    ['not of an empty filter', { not: {} }, []],
  ])('%s', async (_name, filter, expected) => {
    const res = await list('user', { filter: inGroup(filter) });
    expect(res.status).toBe(200);
    expect(dataIds(res)).toEqual(ids(...expected));
    expect(total(res)).toBe(expected.length);
  });

  test('id filters', async () => {
    const res = await list('user', { filter: { id: { in: ids('bob', 'eve', 'zed') } } });
    expect(dataIds(res)).toEqual(ids('bob', 'eve'));
    const gt = await list('user', { filter: inGroup({ id: { gt: id.carl } }) });
    expect(dataIds(gt)).toEqual(ids('dana', 'eve'));
  });

  test('dates are compared as instants, whatever the offset they are written with', async () => {
    // 2020-01-03T05:00:00+05:00 is 2020-01-03T00:00:00Z: carl's createdAt.
    const gte = await list('user', { filter: inGroup({ createdAt: { gte: '2020-01-03T05:00:00+05:00' } }) });
    expect(gte.status).toBe(200);
    expect(dataIds(gte)).toEqual(ids('carl', 'dana', 'eve'));
    const gt = await list('user', { filter: inGroup({ createdAt: { gt: '2020-01-03T00:00:00.000Z' } }) });
    expect(dataIds(gt)).toEqual(ids('dana', 'eve'));
    // As text "2020-01-02T20:00:00-05:00" sorts before "2020-01-03…"; as an instant it is after it.
    const lt = await list('user', { filter: inGroup({ createdAt: { lt: '2020-01-02T20:00:00-05:00' } }) });
    expect(dataIds(lt)).toEqual(ids('anna', 'bob', 'carl'));
    const eq = await list('user', { filter: inGroup({ createdAt: '2020-01-04T00:00:00Z' }) });
    expect(dataIds(eq)).toEqual(ids('dana'));
  });

  test.each<[string, unknown, string, string | RegExp | undefined]>([
    ['unknown field', { nosuch: 1 }, 'filter.nosuch', 'unknown field'],
    ['password is not filterable', { password: '' }, 'filter.password', 'unknown field'],
    ['rememberToken is not filterable', { rememberToken: null }, 'filter.rememberToken', 'unknown field'],
    ['unknown field inside or', { or: [{ status: 1 }, { nosuch: 1 }] }, 'filter.or[1].nosuch', 'unknown field'],
    ['unknown operator', { status: { regex: '.*' } }, 'filter.status.regex', 'unknown operator'],
    ['SQL operator name', { status: { $gt: 1 } }, 'filter.status.$gt', 'unknown operator'],
    ['string for status', { status: '1' }, 'filter.status.eq', 'must be an integer'],
    ['string for status in gt', { status: { gt: 'a' } }, 'filter.status.gt', 'must be an integer'],
    ['string in an in list of a number field', { status: { in: [1, 'two'] } }, 'filter.status.in', 'integer'],
    ['number for a text field', { lastName: 5 }, 'filter.lastName.eq', 'must be a string'],
    ['status beyond 32 bits', { status: 2 ** 31 }, 'filter.status.eq', 'between'],
    ['invalid date', { createdAt: { gte: 'yesterday' } }, 'filter.createdAt.gte', 'ISO 8601'],
    ['date without an offset', { createdAt: { gte: '2020-01-03T00:00:00' } }, 'filter.createdAt.gte', 'ISO 8601'],
    ['like on a number field', { status: { like: '1%' } }, 'filter.status.like', 'text'],
    ['ilike on a date field', { createdAt: { ilike: '2020%' } }, 'filter.createdAt.ilike', 'text'],
    ['in with a non-array', { status: { in: 1 } }, 'filter.status.in', 'array'],
    ['isNull with a non-boolean', { outKey: { isNull: 'yes' } }, 'filter.outKey.isNull', 'true or false'],
    ['empty operator object', { status: {} }, 'filter.status', undefined],
    ['and with a non-array', { and: { status: 1 } }, 'filter.and', 'array'],
    ['or with an empty array', { or: [] }, 'filter.or', 'array'],
    ['not with a non-object', { not: 1 }, 'filter.not', 'object'],
    // Text not starting with "{" is the expression form: these do not parse as one.
    ['filter is an array (not the JSON form: it does not start with "{")', [1, 2], 'filter', 'position'],
    ['filter is a JSON string', 'status', 'filter', 'position'],
  ])('%s → 400 naming the problem', async (_name, filter, field, message) => {
    const res = await list('user', { filter: typeof filter === 'string' ? JSON.stringify(filter) : filter });
    expectBadRequest(res, field, message);
  });

  test.each<[string, unknown, string, string]>([
    ['a like pattern ending in a lone backslash', { lastName: { like: 'Sm\\' } }, 'filter.lastName.like', 'backslash'],
    ['an ilike pattern ending in three backslashes', { lastName: { ilike: '%\\\\\\' } }, 'filter.lastName.ilike', 'backslash'],
    ['a date before year 1 in UTC', { createdAt: { lt: '0001-01-01T00:00:00+01:00' } }, 'filter.createdAt.lt', '0001-01-01'],
    ['year 0', { createdAt: { gt: '0000-01-01T00:00:00Z' } }, 'filter.createdAt.gt', '0001-01-01'],
    ['a date after year 9999 in UTC', { createdAt: { in: ['9999-12-31T23:59:59-12:00'] } }, 'filter.createdAt.in', '9999-12-31'],
  ])('%s → 400 naming it (the database never sees it)', async (_name, filter, field, message) => {
    expectBadRequest(await list('user', { filter }), field, message);
  });

  test('dates in any ISO 8601 form: basic, ordinal, week, comma fractions, reduced precision', async () => {
    // All of these are carl's createdAt, 2020-01-03T00:00:00Z.
    for (const date of ['20200103T000000Z', '2020-003T00:00:00Z', '2020-W01-5T00Z', '2020-01-02T24:00:00,000Z', '2020-01-03T01+01', '2020-01-02T19:00-0500']) {
      const res = await list('user', { filter: inGroup({ createdAt: date }) });
      expect({ date, status: res.status, ids: dataIds(res) }).toEqual({ date, status: 200, ids: ids('carl') });
    }
    for (const date of ['2020-01-03 00:00:00Z', '2020-01-03T00:00:00z', '2020-01-03T00:00:00']) {
      expectBadRequest(await list('user', { filter: inGroup({ createdAt: date }) }), 'filter.createdAt.eq', 'ISO 8601');
    }
  });

  test.each(['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__'])(
    'a field named %s (an Object.prototype name) is an unknown field: 400, in filter and orderBy, on every list',
    async (name) => {
      const filter = `{"${name}":1}`; // as text: an object literal would not make "__proto__" a key
      for (const path of ['/user/', '/token/', '/application/', `/user/${id.anna}/application/`, `/user/${id.anna}/role/`]) {
        const res = await call('GET', `${path}?filter=${encodeURIComponent(filter)}`);
        expectBadRequest(res, `filter.${name}`, 'unknown field');
        if (name !== '__proto__') expectBadRequest(await call('GET', `${path}?orderBy=${name}`), 'orderBy', 'unknown field');
      }
    },
  );

  test('a filter at its limits fits in a URL: 1000 token values in an in list', async () => {
    const values = Array.from({ length: 1000 }, (_, i) => `not-a-token-${String(i).padStart(12, '0')}`);
    const res = await list('token', { filter: { accessToken: { in: values } } });
    expect(res.status).toBe(200);
    expect(total(res)).toBe(0);
  });

  test('invalid JSON (a text starting with "{") → 400 naming filter', async () => {
    for (const text of ['{status:1}', '{"status":1', "{'status':1}", '  {"status":1}}', '{status eq 1}']) {
      expectBadRequest(await list('user', { filter: text }), 'filter', 'JSON');
    }
    // Anything else is the expression form, and a 400 naming the position when it does not parse.
    for (const text of ['null,', 'status eq', 'status eq 1 and', '(status eq 1', 'status like 1', "lastName eq 'x"]) {
      expectBadRequest(await list('user', { filter: text }), 'filter', 'position');
    }
  });

  test('in/nin take at most 1000 values', async () => {
    const thousand = Array.from({ length: 1000 }, (_, i) => 10_000_000 + i);
    const ok = await list('user', { filter: inGroup({ id: { in: [...thousand.slice(0, 999), id.carl] } }) });
    expect(ok.status).toBe(200);
    expect(dataIds(ok)).toEqual(ids('carl'));
    const okNin = await list('user', { filter: inGroup({ status: { nin: thousand } }) });
    expect(okNin.status).toBe(200);
    expect(total(okNin)).toBe(5);
    expectBadRequest(await list('user', { filter: { id: { in: [...thousand, 1] } } }), 'filter.id.in', 'at most 1000');
    expectBadRequest(await list('user', { filter: { status: { nin: [...thousand, 1] } } }), 'filter.status.nin', 'at most 1000');
  });

  test('nesting deeper than 8 → 400; 8 levels are fine', async () => {
    const nested = (nots: number) => {
      let node: Record<string, unknown> = { status: 1 };
      for (let i = 0; i < nots; i++) node = { not: node };
      return node;
    };
    // The top object is level 1; seven "not"s make eight levels (an even count of nots: status 1).
    const eight = await list('user', { filter: inGroup({ and: [nested(6)] }) });
    expect(eight.status).toBe(200);
    expect(dataIds(eight)).toEqual(ids('anna', 'dana'));
    const eightNots = await list('user', { filter: nested(7) });
    expect(eightNots.status).toBe(200);
    const nine = await list('user', { filter: nested(8) });
    expect(nine.status).toBe(400);
    expect(nine.body.error).toBe('BAD_REQUEST');
    expect(nine.body.details.some((d: { message: string }) => /deeper than 8/.test(d.message))).toBe(true);
    const deep = await list('user', { filter: nested(200) });
    expect(deep.status).toBe(400);
  });

  test('more than 100 conditions → 400; 100 are fine', async () => {
    const conditions = (n: number) => ({ or: Array.from({ length: n }, (_, i) => ({ ref: i === 0 ? 30 : 100000 + i })) });
    const hundred = await list('user', { filter: { and: [conditions(100)] } });
    expect(hundred.status).toBe(200);
    expect(dataIds(hundred)).toEqual(ids('carl'));
    const tooMany = await list('user', { filter: conditions(101) });
    expectBadRequest(tooMany, 'filter', /at most 100/);
    // Each operator counts as one condition: 50 × (gt, lt) is 100, 51 × is 102.
    const pairs = (n: number) => ({ or: Array.from({ length: n }, (_, i) => ({ ref: { gt: 29 - i, lt: 31 + i } })) });
    const fifty = await list('user', { filter: inGroup({ and: [{ status: 3 }, pairs(49)] }) });
    expect(fifty.status).toBe(200);
    expect(dataIds(fifty)).toEqual(ids('carl'));
    expectBadRequest(await list('user', { filter: pairs(51) }), 'filter', /at most 100/);
  });

  test('several problems are all reported', async () => {
    const res = await list('user', { filter: { nosuch: 1, status: 'x' }, orderBy: 'bogus', page: 'x' });
    expect(res.status).toBe(400);
    const fields = res.body.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['filter.nosuch', 'filter.status.eq', 'orderBy', 'page']));
  });
});

describe('values are plain values (no SQL injection)', () => {
  // On the embedded database values are escaped into the statement instead (see mikro-orm.config.ts).
  const onPostgreSQL = process.env.DATABASE_URL ? test : test.skip;
  onPostgreSQL('values travel as bind parameters: no statement sent carries a filter value, a written value or the bearer', async () => {
    const marker = `Mark'er-${randomBytes(4).toString('hex')}`;
    svc.queries.length = 0;
    const created = await call('POST', '/user/', { body: { firstName: `${G}-bound`, lastName: marker, outKey: marker } });
    expect(created.status).toBe(201);
    const listed = await list('user', { filter: { lastName: marker, or: [{ outKey: { like: `${marker}%` } }, { status: { in: [7, 8] } }] } });
    expect(dataIds(listed)).toEqual([created.body]);
    const sent = svc.queries.join('\n');
    expect(sent).not.toContain(marker.slice(5)); // neither the value nor its escaped form
    expect(sent).not.toContain(svc.adminToken);
    expect(sent).toMatch(/t\.last_name = \$\d+/);
    expect(sent).toMatch(/in \(\$\d+, \$\d+\)/);
    expect(sent).toMatch(/access_token_hmac = \$1/);
    expect((await call('DELETE', `/user/${created.body}`)).body).toBe(1);
  });

  test('SQL-looking values match nothing and change nothing', async () => {
    const before = await liveUserCount();
    const [{ count: tokensBefore }] = await svc.sql<{ count: string }>('select count(*) from tokens');
    for (const filter of [
      { lastName: "x' or '1'='1" },
      { lastName: { like: "%' or '1'='1' --" } },
      { lastName: { ilike: "'; drop table users; --" } },
      { lastName: { in: ["x') or ('1'='1", "'; delete from users; --"] } },
      { outKey: { ne: "' or 1=1 --" }, lastName: "Smith' --" },
    ]) {
      const res = await list('user', { filter });
      expect({ filter, status: res.status, total: total(res), data: res.body }).toEqual({ filter, status: 200, total: 0, data: [] });
    }
    // The same in the expression form (quotes doubled inside quotes).
    for (const filter of ["lastName eq 'x'' or ''1''=''1'", `lastName eq "'; drop table users; --"`, "lastName eq 'Smith'' --'"]) {
      const res = await list('user', { filter });
      expect({ filter, status: res.status, total: total(res), data: res.body }).toEqual({ filter, status: 200, total: 0, data: [] });
    }
    const tokenRes = await list('token', { filter: { accessToken: "' or ''='" } });
    expect(tokenRes.status).toBe(200);
    expect(tokenRes.body).toEqual([]);
    expect(total(tokenRes)).toBe(0);
    // A field name is never SQL either.
    expectBadRequest(await list('user', { filter: { 'id) or (1=1': 1 } }), 'filter.id) or (1=1', 'unknown field');
    expect(await liveUserCount()).toBe(before);
    const [{ count: tokensAfter }] = await svc.sql<{ count: string }>('select count(*) from tokens');
    expect(tokensAfter).toBe(tokensBefore);
    // The table is intact and still answers.
    expect(total(await list('user', { filter: inGroup() }))).toBe(5);
  });

  test('a stored value with quotes and pattern characters matches itself exactly', async () => {
    const odd = { firstName: `${G}-odd`, lastName: "O'Brien%_\\x" };
    const created = await call('POST', '/user/', { body: odd });
    expect(created.status).toBe(201);
    const eq = await list('user', { filter: { lastName: "O'Brien%_\\x" } });
    expect(dataIds(eq)).toEqual([created.body]);
    const like = await list('user', { filter: inGroup({ lastName: { like: "O'Brien%" } }) });
    expect(dataIds(like)).toEqual([created.body]);
    // "%" in an eq value is a literal, not a wildcard.
    expect(total(await list('user', { filter: { lastName: "O'Brien%" } }))).toBe(0);
    expect((await call('DELETE', `/user/${created.body}`)).body).toBe(1);
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
    expect(replies.length).toBeGreaterThan(100);
    for (const reply of replies) {
      expect(reply.status).toBeLessThan(500);
      expect(reply.text).not.toMatch(/"(password|rememberToken)"\s*:/);
      if (reply.status >= 400) {
        expect(reply.text).not.toMatch(/\bselect\b|\binsert\s+into\b|\bdelete\s+from\b|\bupdate\s+"?\w+"?\s+set\b/i);
        expect(reply.text).not.toMatch(/\n\s+at |\.ts:\d+|node_modules/);
      }
    }
  });
});
