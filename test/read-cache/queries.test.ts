import { startTestService, type TestService } from '../support/service.js';
import { svc, uniq, counted, cached, PAGE, useService, HIT_ATTEMPTS, retryPause } from '../support/read-cache.js';

/**
 * The read cache (src/read-cache/): a clean answer to a directory query is served again while the
 * database snapshot read with the bearer token is unchanged — one statement (the bearer lookup)
 * instead of the query's — and never after a write, whoever made it.
 */
useService();

describe('directory queries', () => {
  const name = uniq('cache');
  let userID: number;

  beforeAll(async () => {
    userID = (await svc.request('POST', '/user/', { body: { firstName: 'Ada', lastName: name } })).body;
  });

  const page = (options?: Parameters<TestService['graphql']>[2]) => svc.graphql(PAGE, { name }, options);
  const firstNames = (reply: { body: any }) => reply.body.data.users.data.map((u: any) => u.firstName);

  test('the same query again is answered with the bearer lookup alone, with the same status, type and body', async () => {
    const first = await counted(() => page());
    expect(first.reply.status).toBe(200);
    expect(first.statements.length).toBeGreaterThan(1);
    const again = await cached(() => page());
    expect(again.statements).toHaveLength(1);
    expect(again.statements[0]).toMatch(/from tokens t join users u/);
    expect(again.reply.status).toBe(200);
    expect(again.reply.headers.get('content-type')).toBe(first.reply.headers.get('content-type'));
    expect(again.reply.text).toBe(first.reply.text);
    // Each answer still has its own request id.
    expect(again.reply.headers.get('x-request-id')).not.toBe(first.reply.headers.get('x-request-id'));
    // Other variables are another answer.
    const other = await counted(() => svc.graphql(PAGE, { name: `${name}-other` }));
    expect(other.statements.length).toBeGreaterThan(1);
    expect(other.reply.body.data.users.total).toBe(0);
  });

  test('every kind of write to the directory is seen by the next request', async () => {
    await page();
    const app = (await svc.request('POST', '/application/', { body: { name: uniq('app') } })).body;
    const role = (await svc.request('POST', '/role/', { body: { name: uniq('role') } })).body;
    const steps: [string, () => Promise<unknown>, (reply: { body: any }) => void][] = [
      ['REST patch', () => svc.request('PATCH', `/user/${userID}`, { body: { firstName: 'Bea' } }), (r) => expect(firstNames(r)).toEqual(['Bea'])],
      [
        'GraphQL mutation',
        () => svc.graphql(`mutation { patchUser(id: ${userID}, input: { firstName: "Cy" }) { id } }`),
        (r) => expect(firstNames(r)).toEqual(['Cy']),
      ],
      [
        'link',
        () => svc.request('POST', `/user/${userID}/application/`, { body: [app] }),
        (r) => expect(r.body.data.users.data[0].applications.data).toHaveLength(1),
      ],
      [
        'right',
        () => svc.request('PUT', `/user/${userID}/application/${app}`, { body: { right: 7 } }),
        (r) => expect(r.body.data.users.data[0].applications.data[0].right).toBe(7),
      ],
      ['role link', () => svc.request('POST', `/user/${userID}/role/`, { body: [role] }), (r) => expect(r.body.data.users.data[0].roles.data).toHaveLength(1)],
      [
        'application rename',
        () => svc.request('PATCH', `/application/${app}`, { body: { name: `${name}-app` } }),
        (r) => expect(r.body.data.users.data[0].applications.data[0].application.name).toBe(`${name}-app`),
      ],
      ['role delete', () => svc.request('DELETE', `/role/${role}`), (r) => expect(r.body.data.users.data[0].roles.data).toEqual([])],
      ['SQL by hand', () => svc.sql(`update users set first_name = 'Dee' where id = ?`, [userID]), (r) => expect(firstNames(r)).toEqual(['Dee'])],
      ['a second user', () => svc.request('POST', '/user/', { body: { firstName: 'Eve', lastName: name } }), (r) => expect(r.body.data.users.total).toBe(2)],
      ['delete', () => svc.request('DELETE', `/user/${userID}`), (r) => expect(firstNames(r)).toEqual(['Eve'])],
      ['restore', () => svc.request('POST', `/user/${userID}/restore`), (r) => expect(r.body.data.users.total).toBe(2)],
    ];
    for (const [step, write, check] of steps) {
      await page(); // cached before the write
      const wrote: any = await write();
      if (wrote && typeof wrote.status === 'number') expect({ step, status: wrote.status }).toEqual({ step, status: wrote.status < 300 ? wrote.status : 200 });
      const after = await page();
      expect(after.status).toBe(200);
      check(after);
    }
  });

  test('a write that is refused or rolled back changes nothing, and the answer stays cached', async () => {
    await page();
    const refused = await svc.request('PATCH', `/user/${userID}`, { body: { status: 'not a number' } });
    expect(refused.status).toBe(400);
    const again = await cached(() => page());
    expect(again.statements).toHaveLength(1);
  });

  test('errors are not cached: each carries its own request id', async () => {
    const bad = `{ users(filter: { lastName: { eq: "${name}" } }) { data { id } } user(id: "x") { id } }`;
    const first = await svc.graphql(bad);
    expect(first.body.errors).toBeDefined();
    const again = await counted(() => svc.graphql(bad));
    expect(again.statements.length).toBeGreaterThan(1);
    expect(again.reply.body.errors[0].extensions.requestId).toBe(again.reply.headers.get('x-request-id'));
  });

  test('answers are kept per scope set: a token without user:read is refused what a "*" token has cached', async () => {
    await page();
    const roleReader = await svc.tokenWith('role:read');
    const refused = await page({ token: roleReader });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(refused.body.data?.users ?? null).toBeNull();
    const reader = await svc.tokenWith('user:read application:read role:read');
    const first = await counted(() => page({ token: reader }));
    expect(first.statements.length).toBeGreaterThan(1);
    expect(first.reply.body.data.users.total).toBe(2);
  });

  test('a revoked token is refused even for a cached query', async () => {
    const token = await svc.tokenWith('*');
    expect((await page({ token })).status).toBe(200);
    expect((await page({ token })).status).toBe(200);
    await svc.request('POST', '/oauth/revoke', { body: { token } });
    const after = await page({ token });
    expect(after.status).toBe(401);
    expect(after.body.data).toBeUndefined();
  });

  test('tokens, the viewer, audit events, mutations and introspection are never served from the cache', async () => {
    for (const query of [
      '{ viewer { id scope } }',
      '{ tokens(pageSize: 1) { data { id } } }',
      `{ user(id: ${userID}) { id tokens { data { id } } } }`,
      '{ auditEvents(pageSize: 1) { data { id } } }',
      '{ __schema { queryType { name } } }',
      `{ users(pageSize: 1) { data { id } } viewer { id } }`,
    ]) {
      await svc.graphql(query);
      const again = await counted(() => svc.graphql(query));
      expect({ query, statements: again.statements.length > 1 || again.reply.body?.data?.__schema !== undefined }).toEqual({ query, statements: true });
    }
    // A mutation document runs every time (and each one writes).
    const mutation = `mutation($status: Int!) { patchUser(id: ${userID}, input: { status: $status }) { id status } }`;
    await svc.graphql(mutation, { status: 3 });
    const again = await counted(() => svc.graphql(mutation, { status: 4 }));
    expect(again.reply.body.data.patchUser.status).toBe(4);
    expect(again.statements.some((q) => /update users/i.test(q))).toBe(true);
  });

  test('GET queries are cached too, apart from POST ones', async () => {
    const query = `{ user(id: ${userID}) { id firstName } }`;
    const get = () => svc.request('GET', `/graphql?query=${encodeURIComponent(query)}`);
    const first = await get();
    expect(first.status).toBe(200);
    const again = await cached(get);
    expect(again.statements).toHaveLength(1);
    expect(again.reply.text).toBe(first.text);
  });
});

describe('REST directory reads', () => {
  const name = uniq('rest');
  let userID: number;
  beforeAll(async () => {
    userID = (await svc.request('POST', '/user/', { body: { firstName: 'Ray', lastName: name } })).body;
    await svc.request('POST', '/user/', { body: { firstName: 'Sam', lastName: name } });
  });
  const list = `/user/?pageSize=1&filter=${encodeURIComponent(JSON.stringify({ lastName: { eq: name } }))}`;

  test('a list and a record again: the bearer lookup alone, the same body and page headers', async () => {
    for (const path of [list, `/user/${userID}`, `/user/${userID}/application/`, '/application/?pageSize=2', '/role/']) {
      const first = await svc.request('GET', path);
      expect({ path, status: first.status }).toEqual({ path, status: 200 });
      const again = await cached(() => svc.request('GET', path));
      expect({ path, statements: again.statements.length }).toEqual({ path, statements: 1 });
      expect(again.reply.text).toBe(first.text);
      for (const header of ['content-type', 'x-total-count', 'link']) expect(again.reply.headers.get(header)).toBe(first.headers.get(header));
    }
    const page = await svc.request('GET', list);
    expect(page.headers.get('x-total-count')).toBe('2');
    expect(page.headers.get('link')).toContain('rel="next"');
  });

  test('the next request after a write sees it', async () => {
    await svc.request('GET', `/user/${userID}`);
    await svc.request('GET', list);
    expect((await svc.request('PATCH', `/user/${userID}`, { body: { firstName: 'Roy' } })).status).toBe(200);
    expect((await svc.request('GET', `/user/${userID}`)).body.firstName).toBe('Roy');
    await svc.request('POST', '/user/', { body: { firstName: 'Tom', lastName: name } });
    expect((await svc.request('GET', list)).headers.get('x-total-count')).toBe('3');
    await svc.sql(`update users set first_name = 'Rex' where id = ?`, [userID]);
    expect((await svc.request('GET', `/user/${userID}`)).body.firstName).toBe('Rex');
  });

  test('only a cacheable route reads the snapshot with the bearer token: writes and uncached reads do not', async () => {
    const lookupOf = (statements: string[]) => {
      const lookup = statements.find((text) => /from tokens t join users u/.test(text));
      expect(lookup).toBeDefined();
      return lookup!;
    };
    // A cacheable read does (unless the store stands aside at that moment, when only a sample does: asked again until one does).
    let read = await counted(() => svc.request('GET', `/user/${userID}`));
    for (let attempt = 1; !/pg_current_snapshot\(\)/.test(lookupOf(read.statements)) && attempt < HIT_ATTEMPTS; attempt++) {
      await retryPause(attempt);
      read = await counted(() => svc.request('GET', `/user/${userID}`));
    }
    expect(lookupOf(read.statements)).toMatch(/pg_current_snapshot\(\)/);
    for (const [method, path, body] of [
      ['PATCH', `/user/${userID}`, { firstName: 'Rob' }],
      ['GET', '/token/?pageSize=1', undefined],
    ] as const) {
      const call = await counted(() => svc.request(method, path, body ? { body } : {}));
      expect({ path, status: call.reply.status }).toEqual({ path, status: 200 });
      expect({ path, lookup: lookupOf(call.statements) }).toEqual({ path, lookup: expect.not.stringMatching(/pg_current_snapshot/) });
    }
    expect((await svc.request('GET', `/user/${userID}`)).body.firstName).toBe('Rob');
  });

  test('tokens and the audit log are read every time; errors are not kept; scopes are not shared', async () => {
    for (const path of ['/token/?pageSize=1', '/audit/?pageSize=1', '/user/not-a-number']) {
      await svc.request('GET', path);
      const again = await counted(() => svc.request('GET', path));
      expect({ path, read: again.statements.length > 1 || again.reply.status === 400 }).toEqual({ path, read: true });
    }
    await svc.request('GET', `/user/${userID}`);
    const noUserRead = await svc.tokenWith('role:read');
    expect((await svc.request('GET', `/user/${userID}`, { token: noUserRead })).status).toBe(403);
  });
});

// Found by review, kept as regressions. (Unique query texts growing the heap without a byte bound
// is measured by `npm run bench:memory`, not here: a memory-measuring test would be flaky.)
describe('GraphQL cache keys answer as the app does without the cache', () => {
  let uncached: TestService;
  beforeAll(async () => {
    uncached = await startTestService({ READ_CACHE_MB: '0' });
  });
  afterAll(async () => {
    await uncached?.stop();
  });

  const QUERY = '{ users { total } }';
  const nested = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

  // Defect: a key built from ~5,000-level nested `extensions`/`operationName` overflows the stack: 500 with the cache on.
  test.each([
    ['extensions', `{"query":${JSON.stringify(QUERY)},"extensions":${nested(5000)}}`],
    ['operationName', `{"query":${JSON.stringify(QUERY)},"operationName":${nested(5000)}}`],
  ])('deeply nested %s: the same status as with the cache off, never 500', async (_field, rawBody) => {
    // The query is known and its answer kept.
    expect((await svc.graphql(QUERY)).status).toBe(200);
    expect((await svc.graphql(QUERY)).status).toBe(200);
    expect((await uncached.graphql(QUERY)).status).toBe(200);
    const cached = await svc.graphql('', undefined, { rawBody });
    const plain = await uncached.graphql('', undefined, { rawBody });
    expect({ cached: cached.status, plain: plain.status }).toEqual({ cached: plain.status, plain: plain.status });
    expect(plain.status).not.toBe(500);
  });

  // Defect: `1e400` (Infinity once parsed) is keyed like null, so the 200 kept for `{"ps": null}` is served instead of the 400.
  test('a variable 1e400 is not served the answer kept for null', async () => {
    const query = 'query($ps: Int) { users(pageSize: $ps) { total } }';
    const rawBody = `{"query":${JSON.stringify(query)},"variables":{"ps":1e400}}`;
    const plain = await uncached.graphql('', undefined, { rawBody });
    expect(plain.status).toBe(400);
    for (let i = 0; i < 2; i++) expect((await svc.graphql(query, { ps: null })).status).toBe(200);
    const cached = await svc.graphql('', undefined, { rawBody });
    expect(cached.status).toBe(plain.status);
    expect(cached.body?.errors).toBeDefined();
    expect(cached.body?.data?.users ?? null).toBeNull();
  });
});

describe('a GraphQL mutation while the cache keeps answers', () => {
  const MUTATION = 'mutation($id: ID!, $firstName: String!) { patchUser(id: $id, input: { firstName: $firstName }) { id firstName } }';

  test('once the gate keeps its text it reads no snapshot: its write carries the token check, one statement, and the next query sees it', async () => {
    const id = (await svc.request('POST', '/user/', { body: { firstName: 'Dee', lastName: uniq('mutation') } })).body as number;
    const token = await svc.tokenWith('user:write user:read');
    const patch = (firstName: string) => svc.graphql(MUTATION, { id: String(id), firstName }, { token });
    // A token and a text this instance has not seen: the token is looked up first, with the
    // snapshot (the store wants it: it is not standing aside), then the write.
    const first = await counted(() => patch('Eve'));
    expect(first.reply.body).toEqual({ data: { patchUser: { id: String(id), firstName: 'Eve' } } });
    expect(first.statements).toHaveLength(2);
    expect(first.statements[0]).toMatch(/pg_current_snapshot\(\)[\s\S]*from tokens t join users u/);
    // The gate keeps a text it has met twice (src/graphql/documents.ts): met once, it is still
    // not known when the second patch comes, which is sent as the first was.
    expect((await counted(() => patch('Fay'))).statements).toHaveLength(2);
    // Known now: no snapshot for it, the token checked in the write itself.
    const third = await counted(() => patch('Flo'));
    expect(third.reply.body).toEqual({ data: { patchUser: { id: String(id), firstName: 'Flo' } } });
    expect(third.statements).toEqual([expect.stringMatching(/access_token_hmac[\s\S]*update users/)]);
    expect((await svc.graphql(`{ user(id: ${id}) { firstName } }`)).body).toEqual({ data: { user: { firstName: 'Flo' } } });
    // A query whose text the gate keeps (met twice) still reads the snapshot, and its answer is kept.
    const query = `query($id: ID!) { user(id: $id) { firstName } }`;
    for (let i = 0; i < 2; i++) await svc.graphql(query, { id: String(id) }, { token });
    const again = await cached(() => svc.graphql(query, { id: String(id) }, { token }));
    expect(again.statements).toEqual([expect.stringMatching(/pg_current_snapshot\(\)[\s\S]*from tokens t join users u/)]);
    expect(again.reply.body).toEqual({ data: { user: { firstName: 'Flo' } } });
  });

  test('on that path a token revoked behind this instance writes nothing: a 401', async () => {
    const id = (await svc.request('POST', '/user/', { body: { firstName: 'Gil', lastName: uniq('mutation') } })).body as number;
    const token = await svc.tokenWith('user:write user:read');
    const patch = (firstName: string) => svc.graphql(MUTATION, { id: String(id), firstName }, { token });
    for (const name of ['Hal', 'Ida']) expect((await patch(name)).status).toBe(200);
    await svc.sql('update tokens set deleted_at = now() where access_token_hmac = ?', [svc.hmac(token)]);
    const refused = await counted(() => patch('Jo'));
    expect(refused.reply.status).toBe(401);
    expect(refused.statements).toEqual([expect.stringMatching(/access_token_hmac[\s\S]*update users/)]);
    expect((await svc.graphql(`{ user(id: ${id}) { firstName } }`)).body).toEqual({ data: { user: { firstName: 'Ida' } } });
  });
});
