import { randomBytes } from 'node:crypto';
import { rawExchange } from '../support/raw-http.js';
import { startTestService, type Reply, type TestService } from '../support/service.js';
import { createUser } from '../support/users.js';

/**
 * SPEC §4–5, the original service's wire dialect on REST: bare arrays with X-Total-Count and Link,
 * bare ids and counts, Prefer: return=representation, create on a reserved id, Attrs as the
 * original read it, clamped pages, case-insensitive names, both filter forms, `right` as a bigint.
 */
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const G = `w${randomBytes(4).toString('hex')}`;
const REPRESENTATION = { Prefer: 'return=representation' };

async function userRow(id: number) {
  const [row] = await svc.sql<Record<string, unknown>>('select first_name, last_name, status, ref, out_key, updated_at from users where id = ?', [id]);
  return row;
}

function expect400(res: Reply, field: string, message?: RegExp): void {
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ code: 400, error: 'BAD_REQUEST' });
  expect(res.body.details).toEqual(
    expect.arrayContaining([expect.objectContaining({ field, ...(message ? { message: expect.stringMatching(message) } : {}) })]),
  );
}

describe('lists: a bare array, X-Total-Count and Link', () => {
  const group = `${G}-list`;
  const ids: number[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 5; i++) ids.push(await createUser(svc, { firstName: group, lastName: `L${i}`, status: i }));
  });
  const filter = encodeURIComponent(`firstName eq '${group}'`);

  test('page 2 of 3: every relation, each the same URL with only page changed', async () => {
    const res = await svc.request('GET', `/user/?filter=${filter}&orderBy=&page=2&pageSize=2`);
    expect(res.status).toBe(200);
    expect(res.body.map((u: { id: number }) => u.id)).toEqual(ids.slice(2, 4));
    expect(res.headers.get('x-total-count')).toBe('5');
    // The client's own encoding of the other parameters is kept (fetch escapes ' as %27).
    const sent = `filter=${filter.replaceAll("'", '%27')}&orderBy=`;
    const at = (page: number) => `</user/?${sent}&page=${page}&pageSize=2>`;
    expect(res.headers.get('link')).toBe(`${at(1)}; rel="first", ${at(1)}; rel="prev", ${at(3)}; rel="next", ${at(3)}; rel="last"`);
  });

  test('page 1 has no prev, the last page no next; a page past the end is [] with the true total', async () => {
    const first = await svc.request('GET', `/user/?filter=${filter}&pageSize=2`);
    expect(first.headers.get('link')).not.toContain('rel="prev"');
    expect(first.headers.get('link')).toContain('rel="next"');
    const last = await svc.request('GET', `/user/?filter=${filter}&pageSize=2&page=3`);
    expect(last.body).toHaveLength(1);
    expect(last.headers.get('link')).not.toContain('rel="next"');
    const past = await svc.request('GET', `/user/?filter=${filter}&pageSize=2&page=9`);
    expect(past.status).toBe(200);
    expect(past.body).toEqual([]);
    expect(past.headers.get('x-total-count')).toBe('5');
    expect(past.headers.get('link')).toContain('page=3>; rel="prev"');
  });

  test('an empty list: [], total 0, first and last are page 1', async () => {
    const res = await svc.request('GET', `/user/?filter=${encodeURIComponent(`firstName eq '${G}-nobody'`)}`);
    expect(res.body).toEqual([]);
    expect(res.headers.get('x-total-count')).toBe('0');
    expect(res.headers.get('link')).toMatch(/page=1>; rel="first", <[^>]*page=1>; rel="last"$/);
  });

  test('page and pageSize are clamped as the original did; only a non-integer is a 400', async () => {
    const zero = await svc.request('GET', `/user/?filter=${filter}&page=0&pageSize=0`);
    expect(zero.status).toBe(200);
    expect(zero.body).toHaveLength(5); // pageSize 20
    expect(zero.headers.get('link')).toContain('pageSize=0');
    const negative = await svc.request('GET', `/user/?filter=${filter}&page=-4&pageSize=-1`);
    expect(negative.body).toHaveLength(5);
    const huge = await svc.request('GET', `/user/?filter=${filter}&pageSize=5000`);
    expect(huge.status).toBe(200);
    expect(huge.body).toHaveLength(5);
    for (const bad of ['pageSize=abc', 'page=1.5', 'pageSize=1e3']) {
      expect400(await svc.request('GET', `/user/?${bad}`), bad.split('=')[0], /integer/);
    }
  });

  test('a page number of any length is an integer: clamped, never a 400', async () => {
    const res = await svc.request('GET', `/user/?filter=${filter}&page=${'9'.repeat(2000)}&pageSize=${'9'.repeat(1500)}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(res.headers.get('x-total-count')).toBe('5');
  });

  test('Link targets keep a query holding "?" whole, and percent-encode what a URI cannot hold', async () => {
    const query = `filter=${encodeURIComponent(`firstName eq '${group}'`)}&x=a?b&pageSize=2`;
    const res = await svc.request('GET', `/user/?${query}`);
    expect(res.headers.get('link')).toContain(`</user/?${query.replaceAll("'", '%27')}&page=2>; rel="next"`);
    // A raw '>' or '"' in the request line (Node lets them through) cannot close the target early.
    const answer = await rawExchange(
      svc.url,
      `GET /user/?pageSize=1&x=a>,<http://evil.example/x>;rel="next" HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${svc.adminToken}\r\nConnection: close\r\n\r\n`,
    );
    const link = /\r\nLink: (.*)\r\n/i.exec(answer)?.[1] ?? '';
    expect(link).toContain('x=a%3E,%3Chttp://evil.example/x%3E;rel=%22next%22');
    expect(link.match(/</g)).toHaveLength(link.match(/rel="/g)!.length);
  });

  test('orderBy field names and keywords in any case', async () => {
    const res = await svc.request('GET', `/user/?filter=${filter}&orderBy=${encodeURIComponent('Status DESC, LASTNAME asc')}`);
    expect(res.status).toBe(200);
    expect(res.body.map((u: { id: number }) => u.id)).toEqual([...ids].reverse());
    expect400(await svc.request('GET', '/user/?orderBy=nosuchfield'), 'orderBy', /unknown field/);
  });
});

describe('filter: the expression form and the JSON form', () => {
  const group = `${G}-flt`;
  const byName: Record<string, number> = {};
  beforeAll(async () => {
    for (const [name, lastName, status] of [
      ['ann', 'Smith', 1],
      ['bob', "O'Brien", 2],
      ['cy', 'Smith', 3],
      ['di', 'x', 0],
    ] as const) {
      byName[name] = await createUser(svc, { firstName: group, lastName, status, outKey: name === 'di' ? null : name });
    }
  });
  const ids = async (filterText: string) => {
    const res = await svc.request('GET', `/user/?filter=${encodeURIComponent(`firstName eq '${group}' and (${filterText})`)}`);
    expect(res.status).toBe(200);
    return res.body.map((u: { id: number }) => u.id).sort((a: number, b: number) => a - b);
  };
  const expected = (...names: string[]) => names.map((n) => byName[n]).sort((a, b) => a - b);

  test.each([
    [`status ge 1 and lastName ne 'x'`, ['ann', 'bob', 'cy']],
    [`lastName eq 'O''Brien'`, ['bob']],
    [`lastName eq "Smith" and not status eq 1`, ['cy']],
    [`status eq 1 or status eq 3 and lastName eq Smith`, ['ann', 'cy']],
    [`(status eq 1 or status eq 3) and LastName EQ Smith`, ['ann', 'cy']],
    [`outKey eq null`, ['di']],
    [`OUTKEY NE NULL and status lt 3`, ['ann', 'bob']],
    [`status gt 0 and status le 2`, ['ann', 'bob']],
  ])('%s', async (text, names) => {
    expect(await ids(text)).toEqual(expected(...names));
  });

  test('the JSON form of the README example selects the same rows as its expression form', async () => {
    const json = encodeURIComponent(JSON.stringify({ firstName: group, status: { in: [1, 2] }, lastName: { ilike: 'sm%' } }));
    const res = await svc.request('GET', `/user/?filter=${json}&orderBy=-createdAt`);
    expect(res.status).toBe(200);
    expect(res.body.map((u: { id: number }) => u.id)).toEqual([byName.ann]);
    expect(await ids(`(status eq 1 or status eq 2) and lastName eq Smith`)).toEqual([byName.ann]);
  });

  test.each([
    [`status eq`, /unexpected end of the filter at position 10/],
    [`status eq 1 and`, /unexpected end of the filter at position 16/],
    [`status eq 1 lastName eq 'x'`, /expected "and" or "or" at position 13/],
    [`status like 1`, /expected an operator .* at position 8/],
    [`lastName eq 'open`, /unclosed quote starting at position 13/],
    [`(status eq 1`, /unexpected end of the filter at position 13: expected "\)"/],
    [`status gt null`, /null can only be compared with eq or ne/],
  ])('%s → 400 naming the position', async (text, message) => {
    const before = await svc.snapshot();
    expect400(await svc.request('GET', `/user/?filter=${encodeURIComponent(text)}`), 'filter', message);
    expect(await svc.snapshot()).toEqual(before);
  });

  test('an unknown field or a wrong value type is a 400 in either form', async () => {
    expect400(await svc.request('GET', `/user/?filter=${encodeURIComponent('nosuch eq 1')}`), 'filter.nosuch', /unknown field/);
    expect400(await svc.request('GET', `/user/?filter=${encodeURIComponent("status eq 'one'")}`), 'filter.status.eq');
    expect400(await svc.request('GET', `/user/?filter=${encodeURIComponent('{"status":{"eq":"one"}}')}`), 'filter.status.eq');
  });
});

describe('writes answer the original shapes; Prefer: return=representation the records', () => {
  test('create: 201, Location, the new id; with Prefer the record, Preference-Applied and Vary', async () => {
    const res = await svc.request('POST', '/user/', { body: { firstName: G, lastName: 'Create' } });
    expect(res.status).toBe(201);
    expect(typeof res.body).toBe('number');
    expect(res.text).toBe(String(res.body));
    expect(res.headers.get('location')).toBe(`/user/${res.body}`);
    expect(res.headers.get('vary')).toMatch(/Prefer/);
    expect(res.headers.get('preference-applied')).toBeNull();
    expect(await userRow(res.body)).toMatchObject({ first_name: G, last_name: 'Create' });

    const full = await svc.request('POST', '/user/', { body: { firstName: G, lastName: 'Full' }, headers: REPRESENTATION });
    expect(full.status).toBe(201);
    expect(full.body).toMatchObject({ id: expect.any(Number), firstName: G, lastName: 'Full', status: 0 });
    expect(full.headers.get('location')).toBe(`/user/${full.body.id}`);
    expect(full.headers.get('preference-applied')).toBe('return=representation');
  });

  test('Prefer among other preferences, quoted, in any case; return=minimal and unknown ones give the default; the first return counts', async () => {
    for (const prefer of [
      'respond-async, RETURN="representation"; foo=bar',
      'handling=lenient',
      'return=minimal',
      'return=bogus',
      'return=bogus, return=representation',
    ]) {
      const res = await svc.request('POST', '/user/', { body: { firstName: G, lastName: 'Prefer' }, headers: { Prefer: prefer } });
      expect(res.status).toBe(201);
      if (prefer.startsWith('respond-async')) expect(res.body).toMatchObject({ lastName: 'Prefer' });
      else expect(typeof res.body).toBe('number');
      expect(res.headers.get('preference-applied')).toBe(
        prefer.startsWith('respond-async') ? 'return=representation' : prefer === 'return=minimal' ? 'return=minimal' : null,
      );
    }
  });

  test('PUT, PATCH and status answer 1 (the user with Prefer), also when nothing changed', async () => {
    const id = await createUser(svc, { firstName: G, lastName: 'Writes' });
    const put = await svc.request('PUT', `/user/${id}`, { body: { firstName: G, lastName: 'Put', status: 4 } });
    expect([put.status, put.body]).toEqual([200, 1]);
    const before = await userRow(id);
    const same = await svc.request('PUT', `/user/${id}`, { body: { firstName: G, lastName: 'Put', status: 4 } });
    expect([same.status, same.body]).toEqual([200, 1]);
    expect(await userRow(id)).toEqual(before); // updatedAt unchanged

    const patch = await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'Patched' }, headers: REPRESENTATION });
    expect(patch.status).toBe(200);
    expect(patch.body).toMatchObject({ id, lastName: 'Patched', status: 4 });
    for (const method of ['PATCH', 'PUT']) {
      const status = await svc.request(method, `/user/${id}/status/`, { body: { status: 7 } });
      expect([status.status, status.body]).toEqual([200, 1]);
    }
    expect(await userRow(id)).toMatchObject({ last_name: 'Patched', status: 7 });
    const withUser = await svc.request('PUT', `/user/${id}/status/`, { body: { status: 8 }, headers: REPRESENTATION });
    expect(withUser.body).toMatchObject({ id, status: 8 });
  });

  test('an absent or deleted record is a 404, never 0', async () => {
    const id = await createUser(svc, { firstName: G, lastName: 'Gone' });
    const del = await svc.request('DELETE', `/user/${id}`);
    expect([del.status, del.body]).toEqual([200, 1]);
    expect((await svc.request('DELETE', `/user/${id}`)).status).toBe(404);
    expect((await svc.request('PUT', `/user/${id}`, { body: { firstName: 'a', lastName: 'b' } })).status).toBe(404);
    expect((await svc.request('PATCH', `/user/${id}`, { body: { status: 1 } })).status).toBe(404);
    expect((await svc.request('PATCH', `/user/${id}/status`, { body: { status: 1 } })).status).toBe(404);
  });
});

describe('apply, then create with that id', () => {
  test('apply answers the id as a bare number; POST with it creates the record with that id', async () => {
    const apply = await svc.request('POST', '/apply/user/id/');
    expect(apply.status).toBe(201);
    expect(typeof apply.body).toBe('number');
    const created = await svc.request('POST', '/user/', { body: { id: apply.body, firstName: G, lastName: 'Reserved' } });
    expect(created.status).toBe(201);
    expect(created.body).toBe(apply.body);
    expect(created.headers.get('location')).toBe(`/user/${apply.body}`);
    expect(await userRow(apply.body)).toMatchObject({ last_name: 'Reserved' });
    const [reservation] = await svc.sql('select * from id_reservations where id = ?', [apply.body]);
    expect(reservation).toBeUndefined();

    // The same id again: the record exists (also once deleted).
    const before = await svc.snapshot({ sequences: false });
    const again = await svc.request('POST', '/user/', { body: { id: apply.body, firstName: G, lastName: 'Again' } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 409, error: 'CONFLICT' });
    await svc.request('DELETE', `/user/${apply.body}`);
    const deleted = await svc.snapshot({ sequences: false });
    expect((await svc.request('POST', '/user/', { body: { id: apply.body, firstName: G, lastName: 'Again' } })).status).toBe(409);
    expect(await svc.snapshot({ sequences: false })).toEqual(deleted);
    expect(before).not.toEqual(deleted);
  });

  test('an id never reserved is a 400 naming id; a malformed one too; 0 and null mean "no id"', async () => {
    const before = await svc.snapshot();
    const [{ max }] = await svc.sql<{ max: string }>('select max(id) from users');
    expect400(await svc.request('POST', '/user/', { body: { id: Number(max) + 1000, firstName: G, lastName: 'X' } }), 'id', /not reserved/);
    expect400(await svc.request('POST', '/user/', { body: { id: 'seven', firstName: G, lastName: 'X' } }), 'id');
    expect400(await svc.request('POST', '/user/', { body: { id: -3, firstName: G, lastName: 'X' } }), 'id');
    expect(await svc.snapshot()).toEqual(before);
    const reserved = (await svc.request('POST', '/apply/user/id/')).body as number;
    const withReservation = await svc.snapshot();
    expect400(await svc.request('POST', '/user/', { body: { id: String(reserved), firstName: G, lastName: 'X' } }), 'id'); // a JSON number
    expect(await svc.snapshot()).toEqual(withReservation);
    for (const id of [0, null]) {
      const res = await svc.request('POST', '/user/', { body: { id, firstName: G, lastName: 'NoId' } });
      expect(res.status).toBe(201);
      expect(res.body).toBeGreaterThan(Number(max));
    }
  });

  test('apply then PUT still creates; a token is created on its reserved id too', async () => {
    const tokenId = (await svc.request('POST', '/apply/token/id/', { body: { any: 'payload' } })).body as number;
    const userId = (await svc.request('POST', '/apply/user/id/')).body as number;
    const put = await svc.request('PUT', `/user/${userId}`, { body: { firstName: G, lastName: 'ByPut' } });
    expect(put.status).toBe(201);
    expect(put.body).toBe(1); // an update's answer, though it created (SPEC §4)
    expect(put.headers.get('location')).toBe(`/user/${userId}`);
    const owner = await createUser(svc, { firstName: G, lastName: 'Owner' });
    const token = await svc.request('POST', '/token/', {
      body: { id: tokenId, userID: owner, accessToken: `wire-${randomBytes(8).toString('hex')}` },
      headers: REPRESENTATION,
    });
    expect(token.status).toBe(201);
    expect(token.body).toMatchObject({ id: tokenId, userID: owner, version: '1' });
  });
});

describe('PATCH with Attrs, as the original read it', () => {
  test('names trimmed and in any case; read-only names skipped; a named field missing from the body gets its default', async () => {
    const id = await createUser(svc, { firstName: G, lastName: 'Attrs', status: 5, ref: 9, outKey: 'k' });
    const res = await svc.request('PATCH', `/user/${id}`, {
      body: { lastName: 'New', firstName: 'ignored: not named' },
      headers: { Attrs: ' LastName ,status,  OUTKEY, id, CreatedAt, password, rememberToken, version ' },
    });
    expect([res.status, res.body]).toEqual([200, 1]);
    expect(await userRow(id)).toMatchObject({ first_name: G, last_name: 'New', status: 0, out_key: null, ref: '9' });
  });

  test('an Attrs header naming nothing (only commas) is no Attrs: the body fields change', async () => {
    const id = await createUser(svc, { firstName: G, lastName: 'Commas', status: 3 });
    expect((await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'Changed' }, headers: { Attrs: ' , ,' } })).body).toBe(1);
    expect(await userRow(id)).toMatchObject({ last_name: 'Changed', status: 3 });
  });

  test('an unknown name is a 400 naming Attrs and changes nothing', async () => {
    const id = await createUser(svc, { firstName: G, lastName: 'Attrs2' });
    const before = await svc.snapshot();
    expect400(await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'x' }, headers: { Attrs: 'lastName, shoeSize' } }), 'Attrs', /shoeSize/);
    expect(await svc.snapshot()).toEqual(before);
  });

  test("a default the field cannot take is a 400 naming the field (a token's userID)", async () => {
    const owner = await createUser(svc, { firstName: G, lastName: 'TokenOwner' });
    const tokenId = (await svc.request('POST', '/token/', { body: { userID: owner, accessToken: `attrs-${randomBytes(8).toString('hex')}` } })).body;
    const before = await svc.snapshot();
    expect400(await svc.request('PATCH', `/token/${tokenId}`, { body: { scope: 'x' }, headers: { Attrs: 'scope, userID' } }), 'userID', /default/);
    expect(await svc.snapshot()).toEqual(before);
  });
});

describe('links: counts, and right as a bigint', () => {
  test('link answers the links created (201), unlink the links removed (200), right any safe integer', async () => {
    const user = await createUser(svc, { firstName: G, lastName: 'Links' });
    const apps: number[] = [];
    for (const n of [1, 2]) apps.push((await svc.request('POST', '/application/', { body: { name: `${G}-app-${n}` } })).body);
    const role = (await svc.request('POST', '/role/', { body: { name: `${G}-role` } })).body;

    const linked = await svc.request('POST', `/user/${user}/application/`, { body: [...apps, apps[0]] });
    expect([linked.status, linked.body]).toEqual([201, 2]);
    expect((await svc.request('POST', `/user/${user}/application/`, { body: apps })).body).toBe(0);
    expect((await svc.request('POST', `/user/${user}/role/`, { body: [role] })).body).toBe(1);

    const max = Number.MAX_SAFE_INTEGER;
    const right = await svc.request('PUT', `/user/${user}/application/${apps[0]}`, { body: { right: max } });
    expect([right.status, right.body]).toEqual([200, 1]);
    const [row] = await svc.sql<{ right: string }>('select "right"::text as right from user_applications where user_id = ? and application_id = ?', [
      user,
      apps[0],
    ]);
    expect(row.right).toBe(String(max));
    const link = await svc.request('GET', `/user/${user}/application/${apps[0]}`);
    expect(link.body).toMatchObject({ userID: user, applicationID: apps[0], right: max });
    const negative = await svc.request('PUT', `/user/${user}/application/${apps[1]}`, { body: { right: -max }, headers: REPRESENTATION });
    expect(negative.body).toMatchObject({ userID: user, applicationID: apps[1], right: -max });
    expect400(await svc.request('PUT', `/user/${user}/application/${apps[0]}`, { body: { right: max + 1 } }), 'right');
    // The column itself refuses what JSON numbers cannot carry exactly.
    await expect(svc.sql('update user_applications set "right" = 9007199254740992 where user_id = ?', [user])).rejects.toThrow(/user_applications_right_safe/);

    const list = await svc.request('GET', `/user/${user}/application/?filter=${encodeURIComponent(`right eq ${max}`)}&orderBy=`);
    expect(list.body).toEqual([expect.objectContaining({ id: apps[0], right: max })]);
    expect(list.headers.get('x-total-count')).toBe('1');
    const gql = await svc.graphql(`query($id: ID!) { user(id: $id) { applications(filter: {right: {gte: ${max}}}) { data { right } } } }`, {
      id: String(user),
    });
    expect(gql.body).toEqual({ data: { user: { applications: { data: [{ right: max }] } } } });

    const unlinked = await svc.request('DELETE', `/user/${user}/application/`, { body: [...apps, 999999] });
    expect([unlinked.status, unlinked.body]).toEqual([200, 2]);
    expect((await svc.request('DELETE', `/user/${user}/role/`, { body: [role] })).body).toBe(1);
    expect((await svc.request('GET', `/user/${user}/role/`)).headers.get('x-total-count')).toBe('0');
  });
});
