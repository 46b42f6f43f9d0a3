import { createHash } from 'node:crypto';
import { selectionOf } from '../support/contracts.js';
import { uniq } from '../support/names.js';
import { startTestService, type Reply, type TestService } from '../support/service.js';

/**
 * /graphql as an HTTP endpoint and its edges: bodies that are not GraphQL requests, methods,
 * authentication before anything else, the error shape (code, field, requestId, no echoed values),
 * dates and patterns that the database would refuse, and limits that fragments cannot dodge.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** POST /graphql with this body as-is (JSON content type unless `headers` says otherwise). */
const post = (body: string | undefined, headers: Record<string, string> = {}, token: string | null = svc.adminToken): Promise<Reply> =>
  svc.graphql('', undefined, { rawBody: body ?? '', headers, token });

/** A GraphQL-shaped error answer: one error with this code and the request's id. */
function expectGraphQLError(res: Reply, status: number, code: string): any {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body.data).toBeUndefined();
  const [error] = res.body.errors;
  expect(error.extensions).toMatchObject({ code, requestId: res.headers.get('x-request-id') });
  expect(error.message.length).toBeGreaterThan(0);
  return error;
}

async function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  const res = await svc.graphql(query, variables);
  if (res.status !== 200 || res.body?.errors) throw new Error(`${query} → ${res.status}: ${res.text}`);
  return res.body.data;
}

/** The first error of a GraphQL answer that must fail, with the data it came with. */
async function failure(query: string, variables?: Record<string, unknown>) {
  const res = await svc.graphql(query, variables);
  expect(res.body.errors?.length).toBeGreaterThan(0);
  return { status: res.status, error: res.body.errors[0], text: res.text };
}

describe('bodies and methods', () => {
  test.each(['', 'null', '"{ viewer { id } }"', '1', 'true'])('POST body %j → 400 BAD_REQUEST in GraphQL shape, not a 500', async (body) => {
    const error = expectGraphQLError(await post(body), 400, 'BAD_REQUEST');
    expect(error.message).toMatch(/JSON object/);
  });

  test('the same bodies without a token → 401 first, as on REST', async () => {
    for (const body of ['', 'null', '{"query": "{ viewer { id } }"']) {
      const res = await post(body, {}, null);
      expectGraphQLError(res, 401, 'UNAUTHENTICATED');
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  test('malformed JSON → 400, over 1 MiB → 413, text/plain → 415: all in GraphQL shape', async () => {
    expectGraphQLError(await post('{"query": '), 400, 'BAD_REQUEST');
    const big = JSON.stringify({ query: `{ viewer { id } } # ${'x'.repeat(1024 * 1024)}` });
    expectGraphQLError(await post(big), 413, 'PAYLOAD_TOO_LARGE');
    expectGraphQLError(await post('{"query":"{ viewer { id } }"}', { 'Content-Type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test.each(['PUT', 'PATCH', 'DELETE'])('%s /graphql → 405 with Allow: GET, HEAD, POST', async (method) => {
    const response = await fetch(`${svc.url}/graphql`, { method, headers: { Authorization: `Bearer ${svc.adminToken}` } });
    const res = { status: response.status, headers: response.headers, body: await response.json(), text: '' };
    expectGraphQLError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(response.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  test('the endpoint is /graphql whatever its letters case and a trailing slash, as every route; a path below it is a 404', async () => {
    for (const path of ['/GraphQL', '/graphql/', '/GRAPHQL//']) {
      const res = await svc.request('POST', path, { body: { query: '{ viewer { id } }' } });
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 200, body: { data: { viewer: { id: expect.any(String) } } } });
    }
    const below = await svc.request('POST', '/graphql/x', { body: { query: '{ viewer { id } }' } });
    expect(below.status).toBe(404);
    expect(below.body.data).toBeUndefined();
  });

  test('HEAD works where GET does: the Sandbox page and a query, without a body', async () => {
    const page = await fetch(`${svc.url}/graphql`, { method: 'HEAD', headers: { Accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toBe('');
    const query = await fetch(`${svc.url}/graphql?query=${encodeURIComponent('{ viewer { id } }')}`, {
      method: 'HEAD',
      headers: { Authorization: `Bearer ${svc.adminToken}`, 'apollo-require-preflight': 'true' },
    });
    expect(query.status).toBe(200);
    expect(await query.text()).toBe('');
  });
});

describe('authentication comes before the document', () => {
  test('without a token an invalid document is a 401, and no "Did you mean" hint leaks the schema', async () => {
    for (const query of ['{ user(id: 1) { fistName } }', '{ nosuch }', '{ users(filter: { lastNam: { eq: "x" } }) { total } }', '{']) {
      const res = await post(JSON.stringify({ query }), {}, null);
      const error = expectGraphQLError(res, 401, 'UNAUTHENTICATED');
      expect(error.message).not.toMatch(/did you mean|firstName|lastName/i);
    }
    const wrong = await post(JSON.stringify({ query: '{ nosuch }' }), {}, uniq('unknown'));
    expectGraphQLError(wrong, 401, 'UNAUTHENTICATED');
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  test('outside production a caller with a token gets the hints; in production nobody does', async () => {
    const dev = await failure('{ user(id: 1) { fistName } }');
    expect(dev.error.message).toMatch(/Did you mean "firstName"/);
    const prod = await startTestService({ NODE_ENV: 'production' });
    try {
      const res = await prod.graphql('{ user(id: 1) { fistName } }');
      expect(res.status).toBe(400);
      expect(res.body.errors[0].message).not.toMatch(/did you mean|firstName/i);
      // Variables too: an unknown input field, an enum value in the wrong case.
      for (const [query, variables] of [
        ['query($o: UserFilter) { users(filter: $o) { total } }', { o: { lastNam: { eq: 'x' } } }],
        ['query($o: [UserOrderBy!]) { users(orderBy: $o) { total } }', { o: [{ lastName: 'desc' }] }],
      ] as const) {
        const variable = await prod.graphql(query, variables as Record<string, unknown>);
        expect(variable.status).toBe(400);
        expect(variable.text).not.toMatch(/did you mean|"DESC"|"ASC"/i);
      }
      // Nor in the details of an error: an unknown field of an input variable, a misspelt literal enum.
      for (const [query, variables] of [
        ['mutation($i: UserInput!) { createUser(input: $i) { id } }', { i: { firstName: 'a', lastName: 'b', statu: 1 } }],
        ['mutation($i: UserPatch!) { patchUser(id: 1, input: $i) { id } }', { i: { lastNam: 'b' } }],
        ['{ users(orderBy: [{ lastName: DESK }]) { total } }', {}],
      ] as const) {
        const res = await prod.graphql(query, variables as Record<string, unknown>);
        expect(res.status).toBe(400);
        expect(res.body.errors[0].extensions.details).toEqual([expect.objectContaining({ message: expect.any(String) })]);
        expect(res.text).not.toMatch(/did you mean|"status"|"lastName"|"DESC"/i);
      }
    } finally {
      await prod.stop();
    }
  });
});

describe('errors', () => {
  test('every error carries the X-Request-Id of its request', async () => {
    const resolver = await svc.graphql('{ user(id: "abc") { id } }', undefined, { headers: { 'X-Request-Id': 'trace-resolver-1' } });
    expect(resolver.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', requestId: 'trace-resolver-1' });
    const validation = await svc.graphql('{ nosuch }', undefined, { headers: { 'X-Request-Id': 'trace-validation-1' } });
    expect(validation.body.errors[0].extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', requestId: 'trace-validation-1' });
    const syntax = await svc.graphql('{', undefined, { headers: { 'X-Request-Id': 'trace-syntax-1' } });
    expect(syntax.body.errors[0].extensions).toMatchObject({ code: 'GRAPHQL_PARSE_FAILED', requestId: 'trace-syntax-1' });
  });

  test('a variable of the wrong shape is named, and its value (a password, a token) is not repeated', async () => {
    const res = await svc.graphql('mutation($i: UserInput!) { createUser(input: $i) { id } }', {
      i: { firstName: 'a', lastName: 'b', password: 'hunter2', rememberToken: 'rt-secret' },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: '$i', details: [{ field: '$i', message: expect.any(String) }] });
    expect(res.body.errors[0].message).toMatch(/"password" is not defined/);
    expect(res.text).not.toMatch(/hunter2|rt-secret/);

    const secret = uniq('secret-token');
    const typed = await svc.graphql('mutation($i: TokenInput!) { createToken(input: $i) { id } }', { i: { userID: '1', accessToken: secret, scope: 5 } });
    expect(typed.status).toBe(400);
    expect(typed.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: '$i.scope' });
    expect(typed.text).not.toContain(secret);
    expect(svc.logLines.join('\n')).not.toContain(secret);
    // Nor a value of the wrong type: a list, an object, an enum name, a number for an ID.
    for (const [query, variables] of [
      ['mutation($i: TokenInput!) { createToken(input: $i) { id } }', { i: { userID: 1, accessToken: ['SECRET-LIST'] } }],
      ['query($s: String!) { tokens(filter: { accessToken: { eq: $s } }) { total } }', { s: { 'SECRET-KEY': 1 } }],
      ['query($o: [UserOrderBy!]) { users(orderBy: $o) { total } }', { o: [{ lastName: 'SECRET-ENUM' }] }],
      ['query($r: SafeInt) { users(filter: { ref: { eq: $r } }) { total } }', { r: 'SECRET-SAFEINT' }],
    ] as const) {
      const res = await svc.graphql(query, variables as Record<string, unknown>);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: expect.stringMatching(/^\$/) });
      expect(res.text).not.toMatch(/SECRET/);
    }
  });

  test('a literal argument of the wrong type is BAD_USER_INPUT naming the argument', async () => {
    const cases: [string, string][] = [
      // right is a SafeInt (SPEC §4): 2^53 is the first value out of range.
      ['mutation { updateUserApplication(id: 1, applicationID: 1, right: 9007199254740992) { right } }', 'right'],
      ['mutation { updateUserStatus(id: 1, status: "x") { id } }', 'status'],
      ['mutation { createUser(input: { firstName: "a", lastName: "b", status: 1.5 }) { id } }', 'input.status'],
      ['mutation { createUser(input: { firstName: "a", lastName: "b", password: "hunter2" }) { id } }', 'input.password'],
      ['{ users(filter: { or: [{ status: { in: [1, "two"] } }] }) { total } }', 'filter.or[0].status.in[1]'],
      ['{ users(orderBy: [{ id: ASC }, { lastName: desc }]) { total } }', 'orderBy[1].lastName'],
    ];
    for (const [query, field] of cases) {
      const res = await svc.graphql(query);
      expect({ query, status: res.status, code: res.body.errors[0].extensions.code, field: res.body.errors[0].extensions.field }).toEqual({
        query,
        status: 400,
        code: 'BAD_USER_INPUT',
        field,
      });
    }

    // The message names the type, not the value (a secret pasted into a literal is not repeated).
    const literals: [string, string, RegExp][] = [
      ['{ tokens(filter: { accessToken: { eq: 12345678901 } }) { total } }', 'filter.accessToken.eq', /^String cannot represent a non string value\.$/],
      ['{ users(filter: { ref: { eq: "SECRETVAL" } }) { total } }', 'filter.ref.eq', /^SafeInt cannot represent non-integer value\.$/],
      ['{ users(orderBy: [{ lastName: SECRETENUM }]) { total } }', 'orderBy[0].lastName', /^the value is not one of the SortDirection values\.$/],
      ['{ users(filter: { createdAt: { gt: "SECRET-DATE" } }) { total } }', 'filter.createdAt.gt', /^DateTime /],
      [
        'mutation { updateUserApplication(id: 1, applicationID: 1, right: 98765432109876543) { right } }',
        'right',
        /^SafeInt cannot represent unsafe integer value\.$/,
      ],
    ];
    // Nor in a syntax error, which names the token it stopped at, nor in a variable's default value.
    for (const query of [
      '{ tokens(filter: { accessToken: { eq: "SECRET2" "SECRET3" } }) { total } }',
      '{ tokens(filter: { accessToken "SECRETA" }) { total } }',
      '{ tokens(filter: { accessToken """SECRETB""" }) { total } }',
      'query Q($a: Int = "SECRET19") { users(pageSize: $a) { total } }',
      'query Q($a: ID = { a: "SECRETH" }) { token(id: $a) { id } }',
    ]) {
      const res = await svc.graphql(query);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toMatch(/^GRAPHQL_(PARSE|VALIDATION)_FAILED$/);
      expect(res.text).not.toMatch(/SECRET/);
    }
    for (const [query, field, message] of literals) {
      const res = await svc.graphql(query);
      const error = res.body.errors[0];
      expect({ status: res.status, field: error.extensions.field, message: error.message, detail: error.extensions.details[0].message }).toEqual({
        status: 400,
        field,
        message: expect.stringMatching(message),
        detail: error.message,
      });
      expect(res.text).not.toMatch(/SECRET|12345678901|98765432109/);
    }
  });

  test('a GET with a non-JSON Content-Type is a 415 with code UNSUPPORTED_MEDIA_TYPE', async () => {
    const res = await fetch(`${svc.url}/graphql?query=${encodeURIComponent('{ viewer { id } }')}`, {
      headers: { Authorization: `Bearer ${svc.adminToken}`, 'apollo-require-preflight': 'true', 'Content-Type': 'text/plain' },
    });
    expect(res.status).toBe(415);
    const body = (await res.json()) as any;
    expect(body.errors[0].extensions).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', requestId: res.headers.get('x-request-id') });
  });

  test('errors Apollo answers before GraphQL runs carry the requestId too; a mutation over GET is METHOD_NOT_ALLOWED', async () => {
    const H = { Authorization: `Bearer ${svc.adminToken}` };
    const replies: Reply[] = [
      await svc.graphql('', undefined, { rawBody: '{}' }),
      await svc.graphql('', undefined, { rawBody: '{"query": 1}' }),
      await svc.graphql('', undefined, { rawBody: '{"query": "{ viewer { id } }", "variables": [1]}' }),
      await svc.graphql('', undefined, { rawBody: '[{"query": "{ viewer { id } }"}]' }),
    ];
    for (const url of [
      `/graphql?query=${encodeURIComponent('{ viewer { id } }')}&variables=%7Bbad`,
      `/graphql?query=${encodeURIComponent('{ viewer { id } }')}&extensions=%5B`,
    ]) {
      const response = await fetch(svc.url + url, { headers: H });
      replies.push({ status: response.status, headers: response.headers, body: await response.json(), text: '' });
    }
    for (const res of replies) {
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.requestId).toBe(res.headers.get('x-request-id'));
    }
    const mutation = await fetch(`${svc.url}/graphql?query=${encodeURIComponent('mutation { applyUserID }')}`, {
      headers: { ...H, 'apollo-require-preflight': 'true' },
    });
    expect(mutation.status).toBe(405);
    const body = (await mutation.json()) as any;
    expect(body.errors[0].extensions).toMatchObject({ code: 'METHOD_NOT_ALLOWED', requestId: mutation.headers.get('x-request-id') });
  });

  test('automatic persisted queries, as Apollo Server’s defaults: PERSISTED_QUERY_NOT_FOUND, then the text once, then the hash alone', async () => {
    const before = svc.logLines.length;
    const query = `query Persisted { users(filter: { lastName: { eq: "${uniq('apq')}" } }) { total } }`;
    const persistedQuery = { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') };
    const unknown = await post(JSON.stringify({ extensions: { persistedQuery } }));
    expect(unknown.status).toBeLessThan(500);
    expect(unknown.body.errors[0].extensions).toMatchObject({ code: 'PERSISTED_QUERY_NOT_FOUND', requestId: unknown.headers.get('x-request-id') });
    const registered = await post(JSON.stringify({ query, extensions: { persistedQuery } }));
    expect({ status: registered.status, body: registered.body }).toEqual({ status: 200, body: { data: { users: { total: 0 } } } });
    for (const res of [
      await post(JSON.stringify({ extensions: { persistedQuery } })),
      await svc.request('GET', `/graphql?extensions=${encodeURIComponent(JSON.stringify({ persistedQuery }))}`),
    ]) {
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { data: { users: { total: 0 } } } });
    }
    // A hash that is not the text's, another version of the protocol: the client's mistakes (400).
    const mismatch = await post(JSON.stringify({ query: '{ viewer { id } }', extensions: { persistedQuery } }));
    expect({ status: mismatch.status, code: mismatch.body.errors[0].extensions.code }).toEqual({ status: 400, code: 'BAD_REQUEST' });
    const version = await post(JSON.stringify({ query, extensions: { persistedQuery: { ...persistedQuery, version: 2 } } }));
    expect({ status: version.status, code: version.body.errors[0].extensions.code }).toEqual({ status: 400, code: 'BAD_REQUEST' });
    expect(version.body.errors[0].extensions.requestId).toBe(version.headers.get('x-request-id'));
    expect(svc.logLines.slice(before).filter((l) => JSON.parse(l).level === 'error')).toEqual([]);
  });

  test('a persisted query is checked as its text is: a hash whose text is over a limit is refused as the text is', async () => {
    const query = `{ users(pageSize: 1000) { data { applications(pageSize: 1000) { data { right } } } } } # ${uniq('costly')}`;
    const persistedQuery = { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') };
    const text = await post(JSON.stringify({ query, extensions: { persistedQuery } }));
    expect({ status: text.status, code: text.body.errors[0].extensions.code }).toEqual({ status: 400, code: 'GRAPHQL_VALIDATION_FAILED' });
    // Refused, so never registered.
    const hash = await post(JSON.stringify({ extensions: { persistedQuery } }));
    expect(hash.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });
});

describe('values the database would refuse are BAD_USER_INPUT', () => {
  let userID: string;
  beforeAll(async () => {
    userID = (await gql(`mutation { createUser(input: { firstName: "Dates", lastName: "${uniq('d')}" }) { id } }`)).createUser.id;
  });

  test('dates outside the years 0001–9999 (UTC), in inputs, variables and filters', async () => {
    const literal = await failure(
      `mutation { createToken(input: { userID: ${userID}, accessToken: "${uniq('t')}", expireAt: "0000-01-01T00:00:00Z" }) { id } }`,
    );
    expect(literal).toMatchObject({ status: 400, error: { extensions: { code: 'BAD_USER_INPUT', field: 'input.expireAt' } } });
    const variable = await failure('mutation($e: DateTime) { createToken(input: { userID: 1, accessToken: "x", expireAt: $e }) { id } }', {
      e: '9999-12-31T23:59:59-23:59',
    });
    expect(variable).toMatchObject({ status: 400, error: { extensions: { code: 'BAD_USER_INPUT', field: '$e' } } });
    expect(variable.error.message).toMatch(/9999-12-31/);
    const filter = await failure('{ tokens(filter: { expireAt: { gt: "0001-01-01T00:00:00+01:00" } }) { total } }');
    expect(filter).toMatchObject({ status: 400, error: { extensions: { code: 'BAD_USER_INPUT', field: 'filter.expireAt.gt' } } });
  });

  test('DateTime reads every ISO 8601 form REST reads', async () => {
    const forms: [string, string][] = [
      ['2029-01-01T00:00Z', '2029-01-01T00:00:00.000Z'],
      ['2029-01-01T00:00:00+0200', '2028-12-31T22:00:00.000Z'],
      ['2029-01-01T00:00:00+02', '2028-12-31T22:00:00.000Z'],
      ['20290101T000000Z', '2029-01-01T00:00:00.000Z'],
      ['2027-W01-1T00:00:00Z', '2027-01-04T00:00:00.000Z'], // 1 January 2027 is a Friday: week 1 starts on the 4th
    ];
    for (const [given, stored] of forms) {
      const { createToken } = await gql('mutation($i: TokenInput!) { createToken(input: $i) { id expireAt } }', {
        i: { userID, accessToken: uniq('iso'), expireAt: given },
      });
      expect({ given, expireAt: createToken.expireAt }).toEqual({ given, expireAt: stored });
      const rest = await svc.request('GET', `/token/${createToken.id}`);
      expect(rest.body.expireAt).toBe(stored);
    }
    // 2029-01-01T00:00:00Z, written another way: the first and the fourth token above.
    const { tokens } = await gql(`{ tokens(filter: { userID: { eq: ${userID} }, expireAt: { in: ["2028-12-31T23:00:00-01:00"] } }) { total } }`);
    expect(tokens.total).toBe(2);
  });

  test('a like pattern ending in a lone backslash, in a list and in a nested list', async () => {
    const top = await failure('{ users(filter: { lastName: { ilike: "%\\\\" } }) { total } }');
    expect(top).toMatchObject({ status: 200, error: { extensions: { code: 'BAD_USER_INPUT', field: 'filter.lastName.ilike' } } });
    const nested = await failure(`{ user(id: ${userID}) { tokens(filter: { accessToken: { like: "a\\\\" } }) { total } } }`);
    expect(nested.error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'filter.accessToken.like' });
    expect(nested.text).not.toMatch(/INTERNAL_SERVER_ERROR/);
  });

  test('ids are decimal numbers without leading zeros everywhere', async () => {
    const link = await failure(`mutation { linkUserApplications(id: ${userID}, applicationIDs: ["01"]) }`);
    expect(link.error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'applicationIDs[0]' });
    const filter = await failure(`{ users(filter: { id: { eq: "0${userID}" } }) { total } }`);
    expect(filter.error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'filter.id.eq' });
    const one = await failure(`{ user(id: "0${userID}") { id } }`);
    expect(one.error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'id' });
  });
});

describe('typed filters carry every operator of the list language', () => {
  test('isNull on ID, Int and SafeInt fields too (never null there: true matches none, false all)', async () => {
    const { users: all } = await gql('{ users { total } }');
    for (const field of ['id', 'status', 'ref']) {
      expect((await gql(`{ users(filter: { ${field}: { isNull: true } }) { total } }`)).users.total).toBe(0);
      expect((await gql(`{ users(filter: { ${field}: { isNull: false } }) { total } }`)).users.total).toBe(all.total);
    }
  });
});

describe('the links of a user filter and sort on the link’s own dates', () => {
  test('ApplicationLink createdAt/updatedAt in filter and orderBy are the link’s', async () => {
    const { createUser } = await gql(`mutation { createUser(input: { firstName: "Linked", lastName: "${uniq('l')}" }) { id } }`);
    const made: string[] = [];
    for (const name of ['first', 'second', 'third']) {
      made.push((await gql(`mutation { createApplication(input: { name: "${uniq(name)}" }) { id } }`)).createApplication.id);
    }
    // Linked in reverse order of creation: the link dates run the other way from the applications'.
    const linkedAt: string[] = [];
    for (const app of [...made].reverse()) {
      await gql(`mutation { linkUserApplications(id: ${createUser.id}, applicationIDs: [${app}]) }`);
      const [row] = await svc.sql<{ created_at: string | Date }>('select created_at from user_applications where user_id = ? and application_id = ?', [
        createUser.id,
        app,
      ]);
      linkedAt.push(new Date(row.created_at).toISOString());
      await new Promise((r) => setTimeout(r, 5));
    }
    const page = async (args: string) =>
      (await gql(`{ user(id: ${createUser.id}) { applications(${args}) { total data { applicationID createdAt } } } }`)).user.applications;
    expect((await page('orderBy: [{ createdAt: ASC }]')).data.map((l: any) => l.applicationID)).toEqual([...made].reverse());
    expect((await page('orderBy: [{ createdAt: DESC }]')).data.map((l: any) => l.applicationID)).toEqual(made);
    const after = await page(`filter: { createdAt: { gt: "${linkedAt[0]}" } }`);
    expect(after.data.map((l: any) => l.applicationID).sort()).toEqual([made[0], made[1]].sort());
    expect((await page(`filter: { updatedAt: { lte: "${linkedAt[0]}" } }`)).total).toBe(1);
    expect((await page(`filter: { createdAt: { in: ["${linkedAt[1]}"] } }`)).data).toEqual([{ applicationID: made[1], createdAt: linkedAt[1] }]);
  });
});

describe('limits count what runs, fragments expanded', () => {
  test('aliases inside a fragment count at every use', async () => {
    const aliases = Array.from({ length: 40 }, (_, i) => `f${i}: id`).join(' ');
    const res = await svc.graphql(`{ a: viewer { ...T } b: viewer { ...T } c: viewer { ...T } } fragment T on Token { ${aliases} }`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(res.body.errors[0].message).toMatch(/123 aliases/);
  });

  test('a chain of fragments each spread twice is refused at once (its expansion doubles at every link)', async () => {
    let fragments = '';
    for (let i = 0; i < 40; i++) fragments += ` fragment F${i} on Token { ...F${i + 1} ...F${i + 1} }`;
    fragments += ' fragment F40 on Token { id }';
    // Refused by counting, not by expanding: 2^40 fields could not be built in the test's time at
    // all (a service that expanded them would never answer), and the count it names is that of the
    // whole expansion.
    const res = await svc.graphql(`{ viewer { ...F0 } }${fragments}`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toMatch(/selects \d+ fields/);
    expect(res.body.errors[0].message).toContain(`selects ${2 ** 40 + 1} fields`);
  });

  test('fields repeated too often to check that they merge: a 400 that says so', async () => {
    const res = await svc.graphql(`{ ${Array.from({ length: 500 }, () => 'users { total }').join(' ')} }`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toMatch(/repeats the same fields too often/);
  });

  test('a document over 10 000 tokens is refused before it is built', async () => {
    const res = await svc.graphql(`{ viewer { ${'id '.repeat(10_000)} } }`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    expect(res.body.errors[0].message).toMatch(/10000 tokens/);
  });

  test('the cost counts records: 100 users with every field and their nested pages pass, 1000 do not', async () => {
    const query = (n: number) => `{ users(pageSize: ${n}) { total data { ${selectionOf('user')}
      applications { total data { ${selectionOf('applicationLink')} application { ${selectionOf('application')} } } }
      roles { total data { ${selectionOf('role')} } }
      tokens { total data { id userID accessToken scope expireAt client version } } } } }`;
    const fits = await svc.graphql(query(100));
    expect(fits.status).toBe(200);
    expect(fits.body.errors).toBeUndefined();
    const over = await svc.graphql(query(1000));
    expect(over.status).toBe(400);
    expect(over.body.errors[0].message).toMatch(/costs 84001; at most 20000/);
    // A pageSize above 1000 is read as 1000 (SPEC §5), so it is priced as 1000.
    const clamped = await svc.graphql(query(5000));
    expect(clamped.status).toBe(400);
    expect(clamped.body.errors[0].message).toMatch(/costs 84001; at most 20000/);
  });
});

describe('the root fields of one mutation succeed or fail together', () => {
  const usersNamed = async (lastName: string) => (await svc.sql<{ n: string }>('select count(*) as n from users where last_name = ?', [lastName]))[0].n;

  test('a later field that fails undoes the earlier ones; data is null', async () => {
    const name = uniq('atomic');
    const res = await svc.graphql(`mutation {
      a: createUser(input: { firstName: "Atom", lastName: "${name}" }) { id }
      b: createUser(input: { firstName: "Atom", lastName: "${'x'.repeat(300)}" }) { id } }`);
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0]).toMatchObject({ path: ['b'], extensions: { code: 'BAD_USER_INPUT' } });
    expect(Number(await usersNamed(name))).toBe(0);
  });

  test("the README's link-then-set-right: a missing link undoes the link made before it", async () => {
    const { createUser } = await gql(`mutation { createUser(input: { firstName: "Grant", lastName: "${uniq('g')}" }) { id } }`);
    const { createApplication } = await gql(`mutation { createApplication(input: { name: "${uniq('app')}" }) { id } }`);
    const res = await svc.graphql(`mutation {
      linkUserApplications(id: ${createUser.id}, applicationIDs: [${createApplication.id}])
      updateUserApplication(id: ${createUser.id}, applicationID: 987654321, right: 7) { right } }`);
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const links = await svc.request('GET', `/user/${createUser.id}/application/`);
    expect({ status: links.status, total: links.headers.get('x-total-count'), body: links.body }).toEqual({ status: 200, total: '0', body: [] });
  });

  test('when every field succeeds, all are kept; later fields see what earlier ones wrote', async () => {
    const name = uniq('kept');
    const { a } = await gql(`mutation { a: createUser(input: { firstName: "Kept", lastName: "${name}" }) { id } }`);
    const data = await gql(`mutation {
      p: patchUser(id: ${a.id}, input: { firstName: "Renamed" }) { id }
      t: createToken(input: { userID: ${a.id}, accessToken: "${uniq('seen')}" }) { user { firstName } }
      s: applyUserID }`);
    expect(data.t.user.firstName).toBe('Renamed');
    expect((await svc.request('GET', `/user/${a.id}`)).body.firstName).toBe('Renamed');
    const tokens = await svc.request('GET', `/token/?filter=${encodeURIComponent(JSON.stringify({ userID: Number(a.id) }))}`);
    expect(tokens.headers.get('x-total-count')).toBe('1');
    expect(tokens.body.map((t: { userID: number }) => t.userID)).toEqual([Number(a.id)]);
  });

  test('one root field needs no shared transaction (its write is one statement); several share one', async () => {
    svc.queries.length = 0;
    await gql(`mutation { createUser(input: { firstName: "One", lastName: "${uniq('one')}" }) { id } }`);
    expect(svc.queries.filter((q) => /^(begin|savepoint)/i.test(q.trim()))).toEqual([]);
    svc.queries.length = 0;
    await gql(`mutation { a: createUser(input: { firstName: "Two", lastName: "${uniq('two')}" }) { id } b: applyUserID }`);
    expect(svc.queries.filter((q) => /^(begin|savepoint)/i.test(q.trim()))).toEqual(['begin']);
    expect(svc.queries.filter((q) => /^commit/i.test(q.trim()))).toEqual(['commit']);
  });

  test('an error in a nested field of a result does not undo the write', async () => {
    const writer = await svc.tokenWith('user:write user:read');
    const name = uniq('nested');
    const res = await svc.graphql(`mutation { createUser(input: { firstName: "N", lastName: "${name}" }) { id tokens { total } } }`, undefined, {
      token: writer,
    });
    expect(res.body.data.createUser).toMatchObject({ id: expect.any(String), tokens: null });
    expect(res.body.errors[0]).toMatchObject({ path: ['createUser', 'tokens'], extensions: { code: 'FORBIDDEN' } });
    expect(Number(await usersNamed(name))).toBe(1);
  });

  test('concurrent mutations whose results read nested lists do not starve the pool (4 connections here)', async () => {
    // A starved pool (each mutation's transaction holding a connection while its nested reads wait
    // for another) would hand out none within its acquire timeout: those requests would fail
    // (UNAVAILABLE), which the replies show; how long they took is no part of it.
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        svc.graphql(
          `mutation { createUser(input: { firstName: "Busy", lastName: "${uniq(`busy${i}`)}" }) { id tokens { total } roles { total } applications { total } } }`,
        ),
      ),
    );
    expect(replies.map((r) => [r.status, r.body.errors])).toEqual(Array(12).fill([200, undefined]));
  });
});
