import { type Reply } from '../support/service.js';
import {
  svc,
  secrets,
  newAccessToken,
  call,
  expectCreatedByPut,
  expectOne,
  makeUser,
  getToken,
  makeToken,
  applyTokenId,
  callerWith,
  reservations,
  failsUnchanged,
  q,
  useService,
} from '../support/tokens.js';

/** GET /token/{id}, GET /token/ (lists), and POST /apply/token/id/ then PUT on the reserved id. */
useService();

describe('GET /token/{id}', () => {
  test('returns the record; unknown id 404; malformed id 400', async () => {
    // The record as the create answered it (Prefer), to compare the read with.
    const created = (
      await call('POST', '/token/', {
        body: { userID: await makeUser(), accessToken: newAccessToken(), scope: 'openid' },
        headers: { Prefer: 'return=representation' },
      })
    ).body;
    expect(created).toMatchObject({ id: expect.any(Number), scope: 'openid', version: '1' });
    const res = await call('GET', `/token/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
    const missing = await call('GET', '/token/987654321');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 404, error: 'NOT_FOUND' });
    for (const bad of ['abc', '0', '-1', '1.5']) {
      const res = await call('GET', `/token/${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual([{ field: 'id', message: 'must be a positive integer' }]);
    }
  });
});

/** A list answer (SPEC §4): 200, a bare array, `X-Total-Count`, and the `Link` header. */
function listOf(res: Reply): { status: number; total: string | null; link: string | null; data: unknown } {
  return { status: res.status, total: res.headers.get('x-total-count'), link: res.headers.get('link'), data: res.body };
}

/** The `Link` header of a list at `path` whose query is `query` with `page` set to each page. */
function links(path: string, query: (page: number) => string, rels: [string, number][]): string {
  return rels.map(([rel, page]) => `<${path}?${query(page)}>; rel="${rel}"`).join(', ');
}

describe('GET /token/', () => {
  test('answers a bare array with X-Total-Count and Link, with filter, orderBy, page and pageSize', async () => {
    const userID = await makeUser('Lister');
    const tokens = [];
    for (const scope of ['a', 'b', 'c']) tokens.push(await makeToken({ userID, scope }));
    const filter = q({ userID });

    const all = await call('GET', `/token/?filter=${filter}`);
    expect(listOf(all)).toEqual({
      status: 200,
      total: '3',
      link: links('/token/', (n) => `filter=${filter}&page=${n}`, [
        ['first', 1],
        ['last', 1],
      ]),
      data: tokens,
    });

    const first = await call('GET', `/token/?filter=${filter}&orderBy=-id&page=1&pageSize=2`);
    expect(listOf(first)).toEqual({
      status: 200,
      total: '3',
      link: links('/token/', (n) => `filter=${filter}&orderBy=-id&page=${n}&pageSize=2`, [
        ['first', 1],
        ['next', 2],
        ['last', 2],
      ]),
      data: [tokens[2], tokens[1]],
    });

    const page = await call('GET', `/token/?filter=${filter}&orderBy=-id&page=2&pageSize=2`);
    expect(listOf(page)).toEqual({
      status: 200,
      total: '3',
      link: links('/token/', (n) => `filter=${filter}&orderBy=-id&page=${n}&pageSize=2`, [
        ['first', 1],
        ['prev', 1],
        ['last', 2],
      ]),
      data: [tokens[0]],
    });

    // A page past the end: [] with the true total; prev points at the last page there is.
    const none = await call('GET', `/token/?filter=${filter}&page=5&pageSize=2`);
    expect(listOf(none)).toEqual({
      status: 200,
      total: '3',
      link: links('/token/', (n) => `filter=${filter}&page=${n}&pageSize=2`, [
        ['first', 1],
        ['prev', 2],
        ['last', 2],
      ]),
      data: [],
    });

    const bFilter = q({ userID, scope: 'b' });
    const noSlash = await call('GET', `/token?filter=${bFilter}`);
    expect(listOf(noSlash)).toEqual({
      status: 200,
      total: '1',
      link: links('/token', (n) => `filter=${bFilter}&page=${n}`, [
        ['first', 1],
        ['last', 1],
      ]),
      data: [tokens[1]],
    });

    // Empty parameters are the defaults: page 1 of 20, ordered by id.
    const empty = await call('GET', `/token/?filter=&orderBy=&page=&pageSize=`);
    expect(empty.status).toBe(200);
    const total = Number(empty.headers.get('x-total-count'));
    expect(total).toBeGreaterThanOrEqual(4);
    expect(empty.body).toHaveLength(Math.min(total, 20));
    const ids = (empty.body as { id: number }[]).map((t) => t.id);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(empty.headers.get('link')).toMatch(/^<\/token\/\?filter=&orderBy=&page=1&pageSize=>; rel="first"/);
    expect(await call('GET', '/token/')).toMatchObject({ status: 200, body: empty.body });
  });

  test('the expression form of filter, and field names in any case', async () => {
    const userID = await makeUser('Expressions');
    const a = await makeToken({ userID, scope: 'openid', tokenType: 'Bearer' });
    const b = await makeToken({ userID, scope: 'profile', tokenType: 'Bearer' });
    const c = await makeToken({ userID, scope: "it's", tokenType: 'MAC' });
    const ids = (res: Reply) => {
      expect(res.status).toBe(200);
      return (res.body as { id: number }[]).map((t) => t.id);
    };
    const expr = (text: string) => `/token/?filter=${encodeURIComponent(text)}`;
    expect(ids(await call('GET', expr(`userID eq ${userID} and tokenType eq 'Bearer'`)))).toEqual([a.id, b.id]);
    expect(ids(await call('GET', expr(`USERID EQ ${userID} AND NOT (scope eq openid or Scope eq "profile")`)))).toEqual([c.id]);
    expect(ids(await call('GET', expr(`userid eq ${userID} and scope eq 'it''s'`)))).toEqual([c.id]);
    expect(ids(await call('GET', expr(`userID eq ${userID} and codeChallenge eq null`)))).toEqual([a.id, b.id, c.id]);
    expect(ids(await call('GET', `/token/?filter=${q({ UserID: userID, TOKENTYPE: 'MAC' })}`))).toEqual([c.id]);
    expect(ids(await call('GET', `${expr(`userID eq ${userID}`)}&orderBy=${encodeURIComponent('TokenType DESC, Scope')}`))).toEqual([c.id, a.id, b.id]);
    expect(ids(await call('GET', `${expr(`userID eq ${userID}`)}&orderBy=-SCOPE`))).toEqual([b.id, a.id, c.id]);
    const total = await call('GET', expr(`userID eq ${userID} and tokenType ne 'MAC'`));
    expect(total.headers.get('x-total-count')).toBe('2');
    // An expression that does not parse, or names an unknown field, is a 400 naming filter.
    for (const bad of [`userID eq`, `userID eq ${userID} and`, `(userID eq ${userID}`, `userID like 'x'`, `password eq 'x'`]) {
      const res = await call('GET', expr(bad));
      expect({ bad, status: res.status, field: res.body?.details?.[0]?.field }).toEqual({ bad, status: 400, field: expect.stringMatching(/^filter\b/) });
    }
  });

  test('filters on version (a string on the wire) and client', async () => {
    const userID = await makeUser('Versions');
    const a = await makeToken({ userID }, { headers: { 'X-Client': 'versions-client' } });
    const b = await makeToken({ userID }, { headers: { 'X-Client': 'versions-client' } });
    expectOne(await call('PATCH', `/token/${b.id}`, { body: { scope: 'x' } }));
    expect((await getToken(b.id)).version).toBe('2');
    const idsOf = (res: Reply) => (res.body as { id: number }[]).map((t) => t.id);
    const v2 = await call('GET', `/token/?filter=${q({ userID, version: '2' })}`);
    expect(idsOf(v2)).toEqual([b.id]);
    const leadingZero = await call('GET', `/token/?filter=${q({ userID, version: '02' })}`);
    expect(idsOf(leadingZero)).toEqual([b.id]);
    const byClient = await call('GET', `/token/?filter=${q({ client: 'versions-client' })}`);
    expect(idsOf(byClient)).toEqual([a.id, b.id]);
    expect(byClient.headers.get('x-total-count')).toBe('2');
  });

  test('leaves deleted tokens out', async () => {
    const userID = await makeUser('Lister2');
    const keep = await makeToken({ userID });
    const gone = await makeToken({ userID });
    expectOne(await call('DELETE', `/token/${gone.id}`));
    const filter = q({ userID });
    const list = await call('GET', `/token/?filter=${filter}`);
    expect(listOf(list)).toEqual({
      status: 200,
      total: '1',
      link: links('/token/', (n) => `filter=${filter}&page=${n}`, [
        ['first', 1],
        ['last', 1],
      ]),
      data: [keep],
    });
  });

  test('bad list parameters are a 400; page and pageSize out of range are clamped (SPEC §5)', async () => {
    expect((await call('GET', `/token/?filter=${q({ password: 'x' })}`)).status).toBe(400);
    expect((await call('GET', '/token/?orderBy=rememberToken')).status).toBe(400);
    for (const bad of ['pageSize=1.5', 'pageSize=ten', 'page=abc', 'page=2.5', 'page=1&page=2']) {
      const res = await call('GET', `/token/?${bad}`);
      expect({ bad, status: res.status, field: res.body?.details?.[0]?.field }).toEqual({ bad, status: 400, field: bad.split('=')[0] });
    }

    // 1001 tokens of one user (written directly: 1001 creates through the API would only be slower).
    const userID = await makeUser('Many');
    await svc.insertTokens(
      userID,
      Array.from({ length: 1001 }, (_, g) => `bulk-${userID}-${g + 1}`),
    );
    const filter = q({ userID });
    const list = async (params: string) => {
      const res = await call('GET', `/token/?filter=${filter}${params}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-total-count')).toBe('1001');
      return (res.body as { id: number }[]).map((t) => t.id);
    };
    const firstTwenty = await list('');
    expect(firstTwenty).toHaveLength(20);
    // Below 1: the defaults (page 1, pageSize 20).
    expect(await list('&page=0')).toEqual(firstTwenty);
    expect(await list('&page=-3')).toEqual(firstTwenty);
    expect(await list('&pageSize=0')).toEqual(firstTwenty);
    expect(await list('&pageSize=-5&page=2')).toEqual(await list('&page=2&pageSize=20'));
    const page0 = await call('GET', `/token/?filter=${filter}&page=0`);
    expect(page0.headers.get('link')).toBe(
      links('/token/', (n) => `filter=${filter}&page=${n}`, [
        ['first', 1],
        ['next', 2],
        ['last', 51],
      ]),
    );
    // Above 1000: 1000.
    const thousand = await list('&pageSize=1000');
    expect(thousand).toHaveLength(1000);
    expect(await list('&pageSize=1001')).toEqual(thousand);
    expect(await list('&pageSize=999999')).toEqual(thousand);
    expect(await list('&pageSize=1001&page=2')).toHaveLength(1);
  });
});

describe('apply token id, then PUT', () => {
  test('reserves an id; PUT creates it (201 + Location), a repeated PUT updates it (200)', async () => {
    const applied = await call('POST', '/apply/token/id/');
    expect(applied.status).toBe(201);
    expect(typeof applied.body).toBe('number');
    expect(Number.isSafeInteger(applied.body) && applied.body > 0).toBe(true);
    expect(applied.text).toBe(String(applied.body));
    const id: number = applied.body;
    expect((await call('GET', `/token/${id}`)).status).toBe(404);
    expect(await reservations()).toContainEqual({ id: String(id) });

    const userID = await makeUser();
    const body = { userID, accessToken: newAccessToken(), scope: 'openid' };
    const first = await call('PUT', `/token/${id}`, { body, headers: { 'X-Client': 'retrying-client' } });
    expectCreatedByPut(first, id);
    const created = await getToken(id);
    expect(created).toMatchObject({ id, ...body, client: 'retrying-client', version: '1', refreshToken: '', expireAt: null });
    expect(await reservations()).not.toContainEqual({ id: String(id) });

    // The same PUT again (a client retrying): an ordinary update that changes nothing.
    const again = await call('PUT', `/token/${id}`, { body, headers: { 'X-Client': 'retrying-client' } });
    expectOne(again);
    expect(again.headers.get('location')).toBeNull();
    expect(await getToken(id)).toEqual(created);

    const changed = await call('PUT', `/token/${id}`, { body: { ...body, scope: 'openid profile' } });
    expectOne(changed);
    expect(await getToken(id)).toMatchObject({ id, scope: 'openid profile', version: '2', client: 'retrying-client' });
    expect(await svc.sql('select count(*)::int as n from tokens where id = ?', [id])).toEqual([{ n: 1 }]);
  });

  test('PUTs racing a POST of the same applied id: never a 404; one creates, the others update (each checked against the token as it is)', async () => {
    const userID = await makeUser();
    for (let round = 0; round < 6; round++) {
      const id = await applyTokenId();
      const bodies = Array.from({ length: 7 }, (_, i) => ({ userID, accessToken: newAccessToken(), scope: `round-${round} writer-${i}` }));
      const [post, ...puts] = await Promise.all([
        call('POST', '/token/', { body: { id, ...bodies[0] } }),
        ...bodies.slice(1).map((body) => call('PUT', `/token/${id}`, { body })),
      ]);
      expect(puts.map((put) => put.status).filter((status) => status !== 200 && status !== 201)).toEqual([]);
      expect([post, ...puts].filter((reply) => reply.status === 201)).toHaveLength(1);
      if (post.status !== 201) expect(post.status).toBe(409);
      // One create; each update that followed moved the version by one; the token is the last one's.
      const events = await svc.sql<{ action: string; scope: string }>(
        `select action, changes -> 'scope' ->> 'after' as scope from audit_events where resource = 'token' and record_id = ? order by id`,
        [id],
      );
      expect(events.map((e) => e.action)).toEqual(['apply', 'create', ...Array(events.length - 2).fill('update')]);
      expect(await getToken(id)).toMatchObject({ id, userID, scope: events.at(-1)!.scope, version: String(events.length - 1) });
    }
  });

  test('the body of apply is optional and ignored; ids are never handed out twice', async () => {
    const a = await applyTokenId({ body: { anything: [1, 2] } });
    const created = await makeToken();
    const b = await call('POST', '/apply/token/id', { body: [1] });
    expect(b.status).toBe(201);
    expect(created.id).toBeGreaterThan(a);
    expect(b.body).toBeGreaterThan(created.id);
  });

  test('a PUT that fails on a reserved id keeps the reservation; a later PUT still creates', async () => {
    const id = await applyTokenId();
    await failsUnchanged('PUT', `/token/${id}`, { body: { accessToken: newAccessToken() } }, 400);
    await failsUnchanged('PUT', `/token/${id}`, { body: { userID: 876543210, accessToken: newAccessToken() } }, 400);
    expect(await reservations()).toContainEqual({ id: String(id) });
    const userID = await makeUser();
    const res = await call('PUT', `/token/${id}`, { body: { userID, accessToken: newAccessToken() } });
    expectCreatedByPut(res, id);
    expect((await getToken(id)).userID).toBe(userID);
  });

  test('with Prefer: return=representation the creating PUT answers the record', async () => {
    const id = await applyTokenId();
    const userID = await makeUser();
    const res = await call('PUT', `/token/${id}`, {
      body: { userID, accessToken: newAccessToken(), tokenType: 'Bearer' },
      headers: { Prefer: 'return=representation' },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/token/${id}`);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.body).toMatchObject({ id, userID, tokenType: 'Bearer', version: '1' });
    expect(await getToken(id)).toEqual(res.body);
  });

  test('PUT on an id that was never handed out is a 404 and creates nothing', async () => {
    const userID = await makeUser();
    const res = await failsUnchanged('PUT', '/token/900000000', { body: { userID, accessToken: newAccessToken() } }, 404);
    expect(res.body.error).toBe('NOT_FOUND');
    expect(await svc.sql('select id from tokens where id = 900000000')).toEqual([]);
  });

  test('apply needs token:write', async () => {
    const reader = await callerWith('token:read');
    const before = await reservations();
    const res = await call('POST', '/apply/token/id/', { token: reader.token });
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="token:write"');
    expect(await reservations()).toEqual(before);
  });
});

describe('secrets', () => {
  test('no access token sent in these tests appears in a log line', () => {
    expect(secrets.length).toBeGreaterThan(10);
    const logs = svc.logLines.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(logs.includes(secret)).toBe(false);
    expect(logs.includes(svc.adminToken)).toBe(false);
  });
});
