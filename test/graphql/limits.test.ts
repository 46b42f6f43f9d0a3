import { type Reply } from '../support/service.js';
import { svc, uniq, snapshot, get, useService } from '../support/graphql-platform.js';

/** Abuse limits (depth, aliases, cost, sizes), nesting and size of inputs, and operation resolution. */
useService();

describe('limits', () => {
  const validationFailure = (res: Reply, message: RegExp) => {
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(res.body.errors[0].message).toMatch(message);
    expect(res.body.data).toBeUndefined();
  };

  // viewer(1) user(2) tokens(3) data(4) user(5) tokens(6) data(7) user(8) tokens(9) …
  const deep = (tail: string) =>
    `{ viewer { user { tokens(pageSize: 1) { data { user { tokens(pageSize: 1) { data { user { tokens(pageSize: 1) { ${tail} } } } } } } } } } }`;

  test('depth 10 passes, depth 11 is rejected', async () => {
    const ten = await svc.graphql(deep('total'));
    expect(ten.status).toBe(200);
    expect(ten.body.errors).toBeUndefined();
    expect(ten.body.data.viewer.user.tokens.data[0].user.tokens.data[0].user.tokens.total).toEqual(expect.any(Number));

    validationFailure(await svc.graphql(deep('data { id }')), /11 levels deep/);
  });

  test('fragments do not hide depth', async () => {
    const query = `${deep('...T')} fragment T on TokenPage { data { id } }`;
    validationFailure(await svc.graphql(query), /levels deep/);
  });

  test('100 aliases pass, 101 are rejected', async () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} viewer { id } }`;
    const hundred = await svc.graphql(aliases(100));
    expect(hundred.status).toBe(200);
    expect(Object.keys(hundred.body.data)).toHaveLength(101);
    validationFailure(await svc.graphql(aliases(101)), /101 aliases/);
  });

  test('a costly query is rejected before it runs', async () => {
    svc.queries.length = 0;
    const res = await svc.graphql('{ users(pageSize: 1000) { data { applications(pageSize: 1000) { data { right } } } } }');
    validationFailure(res, /cost/);
    expect(svc.queries.filter((q) => /user_applications/i.test(q))).toEqual([]);
  });

  test('a costly mutation is rejected and writes nothing', async () => {
    const before = await snapshot();
    const res = await svc.graphql(
      `mutation { createUser(input: { firstName: "Costly", lastName: "X" }) { tokens(pageSize: 1000) { data { user { applications(pageSize: 1000) { total } } } } } }`,
    );
    validationFailure(res, /cost/);
    expect(await snapshot()).toEqual(before);
  });

  test('batched requests (a JSON array body) are rejected; nothing is written', async () => {
    const before = await snapshot();
    const batch = [{ query: `mutation { createApplication(input: { name: "${uniq('batched')}" }) { id } }` }, { query: '{ __typename }' }];
    const res = await svc.graphql('', undefined, { rawBody: JSON.stringify(batch) });
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/batch/i);
    expect(await snapshot()).toEqual(before);
  });

  test('a GET query works from any client, with or without apollo-require-preflight (bearer auth: no CSRF to guard)', async () => {
    const path = `/graphql?query=${encodeURIComponent('{ __typename }')}`;
    const auth = { Authorization: `Bearer ${svc.adminToken}` };
    const plain = await get(path, auth);
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({ data: { __typename: 'Query' } });

    const preflighted = await get(path, { ...auth, 'apollo-require-preflight': 'true' });
    expect(preflighted.status).toBe(200);
    expect(preflighted.body).toEqual({ data: { __typename: 'Query' } });

    const viewer = await get(`/graphql?query=${encodeURIComponent('query Me { viewer { scope } }')}&operationName=Me`, auth);
    expect(viewer.status).toBe(200);
    expect(viewer.body).toEqual({ data: { viewer: { scope: '*' } } });
    // Without a token a GET is still a 401, as a POST is.
    expect((await get(`/graphql?query=${encodeURIComponent('{ viewer { id } }')}`, {})).status).toBe(401);
  });

  test('a mutation over GET is rejected and writes nothing', async () => {
    const before = await snapshot();
    const mutation = `mutation { createApplication(input: { name: "${uniq('over-get')}" }) { id } }`;
    const res = await get(`/graphql?query=${encodeURIComponent(mutation)}`, { Authorization: `Bearer ${svc.adminToken}` });
    expect(res.status).toBe(405);
    expect(res.body?.data).toBeUndefined();
    expect(await snapshot()).toEqual(before);
  });
});

describe('nesting and size of inputs', () => {
  const nots = (n: number): Record<string, unknown> => {
    let filter: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) filter = { not: filter };
    return filter;
  };

  test('variables nested thousands of levels deep: 400 BAD_USER_INPUT, not a stack overflow; nothing logged as an error', async () => {
    const errorsBefore = svc.logLines.filter((l) => /"level":"error"/.test(l)).length;
    for (const depth of [3_000, 5_000]) {
      // Written out by hand: JSON.stringify itself recurses.
      const f = `${'{"not":'.repeat(depth)}{}${'}'.repeat(depth)}`;
      const rawBody = `{"query":"query($f: UserFilter) { users(filter: $f) { total } }","variables":{"f":${f}}}`;
      const res = await svc.graphql('', undefined, { rawBody });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([
        { message: 'the variables are nested more than 64 levels deep', extensions: { code: 'BAD_USER_INPUT', requestId: expect.any(String) } },
      ]);
    }
    // Nine levels are within the nesting limit and get the list language's own answer.
    const nine = await svc.graphql('query($f: UserFilter) { users(filter: $f) { total } }', { f: nots(9) });
    expect(nine.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(nine.body.errors[0].message).toMatch(/deeper than 8 levels/);
    expect(svc.logLines.filter((l) => /"level":"error"/.test(l))).toHaveLength(errorsBefore);
  });

  test('a document nested thousands of levels deep: 400 GRAPHQL_PARSE_FAILED naming the limit, not "Maximum call stack size exceeded"', async () => {
    const inline = `{ users(filter: ${'{ not: '.repeat(3_000)}{}${' }'.repeat(3_000)}) { total } }`;
    const selections = `{ ${'a { '.repeat(4_000)}b${' }'.repeat(4_000)} }`;
    const list = `{ users(filter: { id: { in: ${'['.repeat(4_000)}1${']'.repeat(4_000)} } }) { total } }`;
    for (const query of [inline, selections, list]) {
      const res = await svc.graphql(query);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
      expect(res.body.errors[0].message).toMatch(/levels deep; at most 64 are allowed/);
    }
    // Braces inside strings and comments do not count.
    const quoted = await svc.graphql(`{ users(filter: { lastName: { eq: "${'{'.repeat(100)}" } }) { total } # ${'['.repeat(100)}\n }`);
    expect(quoted.status).toBe(200);
    expect(quoted.body.data.users.total).toBe(0);
  });

  test('a filter of more than 10 000 values in all: 400 naming the limit (PostgreSQL binds at most 65 535 per statement); 10 000 pass', async () => {
    const ids = (from: number) => Array.from({ length: 1_000 }, (_, i) => String(from + i));
    const filter = (lists: number) => ({ or: Array.from({ length: lists }, (_, k) => ({ id: { in: ids(10_000_000 + k * 1_000) } })) });
    const query = 'query($f: UserFilter) { users(filter: $f) { total } }';
    const ten = await svc.graphql(query, { f: filter(10) });
    expect(ten.status).toBe(200);
    expect(ten.body).toEqual({ data: { users: { total: 0 } } });
    const seventy = await svc.graphql(query, { f: filter(70) });
    expect(seventy.status).toBe(200);
    expect(seventy.body.errors[0]).toMatchObject({
      message: 'filter: has 70000 values; at most 10000 are allowed',
      extensions: { code: 'BAD_USER_INPUT', field: 'filter' },
    });
  });
});

describe('operation resolution', () => {
  const TWO = 'query A { __typename } query B { viewer { id } }';
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['two operations and no operationName', { query: TWO }, /2 operations/],
    ['an operationName the document lacks', { query: TWO, operationName: 'C' }, /no operation named "C"/],
    ['an empty operationName', { query: '{ __typename }', operationName: '' }, /no operation named ""/],
    [
      'a mutation named by an unknown name',
      { query: `mutation M { createApplication(input: { name: "${uniq('unresolved')}" }) { id } }`, operationName: 'X' },
      /no operation named "X"/,
    ],
  ];

  test.each(cases)('%s: 400 OPERATION_RESOLUTION_FAILURE with a token, 401 without; nothing is written', async (_label, body, message) => {
    const before = await snapshot();
    const res = await svc.graphql('', undefined, { rawBody: JSON.stringify(body) });
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([
      { message: expect.stringMatching(message), extensions: { code: 'OPERATION_RESOLUTION_FAILURE', requestId: expect.any(String) } },
    ]);
    const anonymous = await svc.graphql('', undefined, { token: null, rawBody: JSON.stringify(body) });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(await snapshot()).toEqual(before);
  });

  test('the operation named in operationName runs', async () => {
    const res = await svc.graphql('', undefined, { rawBody: JSON.stringify({ query: TWO, operationName: 'B' }) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { viewer: { id: expect.any(String) } } });
  });

  test('a subscription over a plain request is a 400 naming its transports with a token, and a 401 without, even one of meta-fields', async () => {
    for (const query of ['subscription { roleEvents { eventID } }', 'subscription S { roleEvents { eventID } }']) {
      const res = await svc.graphql(query);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([
        {
          message: expect.stringMatching(/subscriptions run over WebSocket .* or Server-Sent Events/),
          extensions: { code: 'BAD_REQUEST', requestId: expect.any(String) },
        },
      ]);
      expect((await svc.graphql(query, undefined, { token: null })).status).toBe(401);
    }
    // A subscription may not select a meta-field at its root (GraphQL's own rule), nor run without a token.
    const meta = await svc.graphql('subscription { __typename }');
    expect(meta.status).toBe(400);
    expect(meta.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect((await svc.graphql('subscription { __typename }', undefined, { token: null })).status).toBe(401);
  });

  test('an unresolved operation logs no internal error', async () => {
    svc.logLines.length = 0;
    await svc.graphql('', undefined, { rawBody: JSON.stringify({ query: TWO }) });
    expect(svc.logLines.filter((line) => /error/i.test(line) && !/"status":400/.test(line))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// 5. Sandbox and introspection switches
// ---------------------------------------------------------------------------------------------
