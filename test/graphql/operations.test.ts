import { startTestService, type Reply, type TestService } from '../support/service.js';

/**
 * Every query and mutation of schema.graphql, through real GraphQL over HTTP: results, errors
 * (extensions.code and extensions.field), the database after failing mutations, and parity with
 * the REST paths (what one protocol writes, the other reads back identically).
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ABSENT = '987654321';
const USER = 'id ref outKey firstName lastName avatarUrl photoUrl status createdAt updatedAt';
const TOKEN = 'id userID accessToken refreshToken scope code codeChallenge tokenType expireAt client version createdAt updatedAt';
const NAMED = 'id name createdAt updatedAt';
const LINK = 'applicationID userID right createdAt updatedAt';

let counter = 0;
const fresh = (prefix: string) => `${prefix}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

type Json = Record<string, any>;

/** Nothing in an answer may show SQL, a driver message or a stack. */
function expectNoLeak(reply: Reply): void {
  expect(reply.text).not.toMatch(/\b(select\s.+\sfrom|insert into|update \w+ set|delete from|returning)\b/i);
  expect(reply.text).not.toMatch(/duplicate key|violates|constraint|syntax error at|relation "/i);
  expect(reply.text).not.toMatch(/stacktrace|\n\s+at |\bat \S+ \(|\.[jt]s:\d+|node_modules/i);
}

/** Runs an operation that must succeed; returns its data. */
async function run(query: string, variables?: Json, options?: Parameters<TestService['graphql']>[2]): Promise<Json> {
  const reply = await svc.graphql(query, variables, options);
  expect(reply.body?.errors ?? []).toEqual([]);
  expect(reply.status).toBe(200);
  return reply.body.data;
}

/** Runs an operation that must fail with exactly one error of `code` (naming `field`, if given). */
async function fail(query: string, variables: Json | undefined, code: string, field?: string): Promise<Json> {
  const reply = await svc.graphql(query, variables);
  expect(reply.status).toBe(200);
  expect(reply.body.errors).toHaveLength(1);
  const [error] = reply.body.errors;
  expect(error.extensions.code).toBe(code);
  if (field !== undefined) expect(error.extensions.field).toBe(field);
  expect(typeof error.message).toBe('string');
  expectNoLeak(reply);
  return error;
}

/** Runs `work` (a failing mutation) and checks that no table changed. */
async function changesNothing(work: () => Promise<unknown>): Promise<void> {
  const before = await svc.snapshot({ sequences: false });
  await work();
  expect(await svc.snapshot({ sequences: false })).toEqual(before);
}

// REST forms of GraphQL records: ids are numbers there, strings (ID) here.
const restUser = (u: Json) => ({ ...u, id: Number(u.id) });
const restToken = (t: Json) => ({ ...t, id: Number(t.id), userID: Number(t.userID) });
const restNamed = (r: Json) => ({ ...r, id: Number(r.id) });

/** Creates over REST (201, the new id as a bare number, its Location); returns the record REST reads back. */
async function restPost(path: string, body: unknown): Promise<Json> {
  const res = await svc.request('POST', path, { body });
  expect(res.status).toBe(201);
  expect(res.body).toEqual(expect.any(Number));
  expect(res.headers.get('location')).toBe(`${path}${res.body}`);
  const read = await svc.request('GET', `${path}${res.body}`);
  expect(read.status).toBe(200);
  expect(read.body.id).toBe(res.body);
  return read.body;
}

const CREATE_USER = `mutation($input: UserInput!) { createUser(input: $input) { ${USER} } }`;
const GET_USER = `query($id: ID!) { user(id: $id) { ${USER} } }`;
const CREATE_TOKEN = `mutation($input: TokenInput!) { createToken(input: $input) { ${TOKEN} } }`;
const GET_TOKEN = `query($id: ID!) { token(id: $id) { ${TOKEN} } }`;

async function gqlUser(input: Json = {}): Promise<Json> {
  return (await run(CREATE_USER, { input: { firstName: 'Graph', lastName: fresh('user'), ...input } })).createUser;
}
async function gqlApp(name = fresh('app')): Promise<Json> {
  return (await run(`mutation($n: String!) { createApplication(input: {name: $n}) { ${NAMED} } }`, { n: name })).createApplication;
}
async function gqlRole(name = fresh('role')): Promise<Json> {
  return (await run(`mutation($n: String!) { createRole(input: {name: $n}) { ${NAMED} } }`, { n: name })).createRole;
}

// ---------------------------------------------------------------------------------------------

describe('users', () => {
  test('createUser: the record with defaults; it reads back identically over REST and in the table', async () => {
    const { createUser } = await run(CREATE_USER, { input: { firstName: 'Grace', lastName: 'Hopper' } });
    expect(createUser).toEqual({
      id: expect.stringMatching(/^[1-9]\d*$/),
      ref: 0,
      outKey: null,
      firstName: 'Grace',
      lastName: 'Hopper',
      avatarUrl: null,
      photoUrl: null,
      status: 0,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const rest = await svc.request('GET', `/user/${createUser.id}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual(restUser(createUser));
    const [row] = await svc.sql('select first_name, last_name, password, remember_token, deleted_at from users where id = ?', [createUser.id]);
    expect(row).toEqual({ first_name: 'Grace', last_name: 'Hopper', password: '', remember_token: null, deleted_at: null });
  });

  test('createUser with every field; user(id) and REST GET agree field for field', async () => {
    const input = {
      ref: 2 ** 40,
      outKey: 'ext-1',
      firstName: 'Ada',
      lastName: 'Lovelace',
      avatarUrl: 'https://example.com/a.png',
      photoUrl: 'https://example.com/p.png',
      status: -3,
    };
    const { createUser } = await run(CREATE_USER, { input });
    expect(createUser).toMatchObject(input);
    const { user } = await run(GET_USER, { id: createUser.id });
    expect(user).toEqual(createUser);
    expect((await svc.request('GET', `/user/${createUser.id}`)).body).toEqual(restUser(createUser));
  });

  test('a user created over REST reads back identically through user(id) and users', async () => {
    const created = await restPost('/user/', { firstName: 'Rest', lastName: fresh('made'), ref: 42, outKey: 'k', status: 5 });
    const { user } = await run(GET_USER, { id: String(created.id) });
    expect(restUser(user)).toEqual(created);
    expect(user.id).toBe(String(created.id));
    const { users } = await run(`query($f: UserFilter) { users(filter: $f) { total data { ${USER} } } }`, {
      f: { id: { eq: String(created.id) } },
    });
    expect(users.total).toBe(1);
    expect(users.data.map(restUser)).toEqual([created]);
  });

  test.each([
    { input: { firstName: 'x'.repeat(256), lastName: 'Y' }, field: 'firstName' },
    { input: { firstName: 'X', lastName: 'bad\u0000nul' }, field: 'lastName' },
    { input: { firstName: 'X', lastName: 'Y', avatarUrl: 'x'.repeat(2049) }, field: 'avatarUrl' },
    { input: { firstName: 'X', lastName: 'Y', outKey: 'k'.repeat(256) }, field: 'outKey' },
  ])('createUser with a bad $field: BAD_USER_INPUT naming it; nothing stored', async ({ input, field }) => {
    await changesNothing(() => fail(CREATE_USER, { input }, 'BAD_USER_INPUT', `input.${field}`));
  });

  test('user(id): null (not an error) for an absent or a deleted user; BAD_USER_INPUT for a malformed id', async () => {
    const reply = await svc.graphql(GET_USER, { id: ABSENT });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ data: { user: null } });

    const doomed = await gqlUser();
    expect(await run(`mutation($id: ID!) { destroyUser(id: $id) }`, { id: doomed.id })).toEqual({ destroyUser: true });
    const gone = await svc.graphql(GET_USER, { id: doomed.id });
    expect(gone.body).toEqual({ data: { user: null } });

    await fail(GET_USER, { id: 'abc' }, 'BAD_USER_INPUT', 'id');
    await fail(GET_USER, { id: '0' }, 'BAD_USER_INPUT', 'id');
  });

  test('updateUser replaces every writable field (absent → default); REST reads the same record', async () => {
    const before = await gqlUser({ ref: 9, outKey: 'o', avatarUrl: 'a', photoUrl: 'p', status: 4 });
    const { updateUser } = await run(`mutation($id: ID!, $input: UserInput!) { updateUser(id: $id, input: $input) { ${USER} } }`, {
      id: before.id,
      input: { firstName: 'New', lastName: 'Name', status: 2 },
    });
    expect(updateUser).toEqual({
      ...before,
      ref: 0,
      outKey: null,
      firstName: 'New',
      lastName: 'Name',
      avatarUrl: null,
      photoUrl: null,
      status: 2,
      updatedAt: expect.stringMatching(ISO),
    });
    expect((await svc.request('GET', `/user/${before.id}`)).body).toEqual(restUser(updateUser));
  });

  test('updateUser on an absent or deleted id: NOT_FOUND, nothing created', async () => {
    const UPDATE = `mutation($id: ID!) { updateUser(id: $id, input: {firstName: "A", lastName: "B"}) { id } }`;
    await changesNothing(() => fail(UPDATE, { id: ABSENT }, 'NOT_FOUND'));
    const doomed = await gqlUser();
    await run(`mutation($id: ID!) { destroyUser(id: $id) }`, { id: doomed.id });
    await changesNothing(() => fail(UPDATE, { id: doomed.id }, 'NOT_FOUND'));
    expect((await svc.request('GET', `/user/${ABSENT}`)).status).toBe(404);
  });

  test('updateUser with a bad field: BAD_USER_INPUT naming it; the record is unchanged', async () => {
    const user = await gqlUser();
    await changesNothing(() =>
      fail(
        `mutation($id: ID!) { updateUser(id: $id, input: {firstName: "A", lastName: "${'z'.repeat(256)}"}) { id } }`,
        { id: user.id },
        'BAD_USER_INPUT',
        'input.lastName',
      ),
    );
  });

  test('applyUserID reserves a fresh id; updateUser on it creates the user, a repeat updates it', async () => {
    const first = (await run('mutation { applyUserID }')).applyUserID;
    const second = (await run('mutation { applyUserID }')).applyUserID;
    expect(first).toMatch(/^[1-9]\d*$/);
    expect(Number(second)).toBeGreaterThan(Number(first));
    expect(await svc.sql('select id from id_reservations where resource = ? and id = ?', ['user', first])).toHaveLength(1);
    expect((await run(GET_USER, { id: first })).user).toBeNull();

    const UPDATE = `mutation($id: ID!, $input: UserInput!) { updateUser(id: $id, input: $input) { ${USER} } }`;
    const { updateUser: created } = await run(UPDATE, { id: first, input: { firstName: 'Applied', lastName: 'User', status: 1 } });
    expect(created).toMatchObject({ id: first, firstName: 'Applied', lastName: 'User', status: 1, ref: 0 });
    expect(await svc.sql('select id from id_reservations where resource = ? and id = ?', ['user', first])).toHaveLength(0);
    expect((await svc.request('GET', `/user/${first}`)).body).toEqual(restUser(created));

    const { updateUser: again } = await run(UPDATE, { id: first, input: { firstName: 'Applied', lastName: 'Again' } });
    expect(again).toMatchObject({ id: first, lastName: 'Again', status: 0, createdAt: created.createdAt });
    expect(await svc.sql('select count(*)::int as n from users where id = ?', [first])).toEqual([{ n: 1 }]);
    // A new user never takes a reserved id.
    const other = await gqlUser();
    expect(other.id).not.toBe(second);
  });

  test('applyUserID over REST, then updateUser over GraphQL creates; and the other way round', async () => {
    const applied = await svc.request('POST', '/apply/user/id/');
    expect(applied.status).toBe(201);
    expect(applied.body).toEqual(expect.any(Number));
    const { updateUser } = await run(`mutation($id: ID!) { updateUser(id: $id, input: {firstName: "Via", lastName: "Rest"}) { ${USER} } }`, {
      id: String(applied.body),
    });
    expect(updateUser.id).toBe(String(applied.body));

    const { applyUserID } = await run('mutation { applyUserID }');
    const put = await svc.request('PUT', `/user/${applyUserID}`, { body: { firstName: 'Via', lastName: 'GraphQL' } });
    expect(put.status).toBe(201);
    expect(put.body).toBe(1);
    expect(put.headers.get('location')).toBe(`/user/${applyUserID}`);
    const rest = await svc.request('GET', `/user/${applyUserID}`);
    expect(rest.body).toMatchObject({ id: Number(applyUserID), firstName: 'Via', lastName: 'GraphQL' });
    expect((await run(GET_USER, { id: applyUserID })).user).toEqual({ ...rest.body, id: applyUserID });

    // applyUserID over GraphQL, then a REST create that carries the reserved id (SPEC §4).
    const { applyUserID: reserved } = await run('mutation { applyUserID }');
    const posted = await svc.request('POST', '/user/', { body: { id: Number(reserved), firstName: 'Posted', lastName: 'With Id' } });
    expect({ status: posted.status, body: posted.body, location: posted.headers.get('location') }).toEqual({
      status: 201,
      body: Number(reserved),
      location: `/user/${reserved}`,
    });
    expect((await run(GET_USER, { id: reserved })).user).toMatchObject({ id: reserved, firstName: 'Posted', lastName: 'With Id' });
  });

  test('patchUser changes only the fields given; other columns stay as they were', async () => {
    const before = await gqlUser({ ref: 5, outKey: 'keep', avatarUrl: 'av', photoUrl: 'ph', status: 3 });
    const [rowBefore] = await svc.sql('select * from users where id = ?', [before.id]);
    const { patchUser } = await run(`mutation($id: ID!, $input: UserPatch!) { patchUser(id: $id, input: $input) { ${USER} } }`, {
      id: before.id,
      input: { lastName: 'Patched', status: 7 },
    });
    expect(patchUser).toEqual({ ...before, lastName: 'Patched', status: 7, updatedAt: expect.stringMatching(ISO) });
    const [rowAfter] = await svc.sql<Json>('select * from users where id = ?', [before.id]);
    expect({ ...rowAfter, updated_at: null }).toEqual({ ...rowBefore, last_name: 'Patched', status: 7, updated_at: null });
    expect((await svc.request('GET', `/user/${before.id}`)).body).toEqual(restUser(patchUser));
  });

  test('patchUser: an explicit null on a nullable field sets it to null; leaving it out keeps it', async () => {
    const before = await gqlUser({ outKey: 'ok', avatarUrl: 'av', photoUrl: 'ph' });
    const { patchUser } = await run(`mutation($id: ID!) { patchUser(id: $id, input: {outKey: null, photoUrl: null}) { ${USER} } }`, {
      id: before.id,
    });
    expect(patchUser).toMatchObject({ outKey: null, photoUrl: null, avatarUrl: 'av', firstName: before.firstName });
    const [row] = await svc.sql('select out_key, photo_url, avatar_url from users where id = ?', [before.id]);
    expect(row).toEqual({ out_key: null, photo_url: null, avatar_url: 'av' });
    // The same through a variable.
    const { patchUser: viaVariable } = await run(`mutation($id: ID!, $input: UserPatch!) { patchUser(id: $id, input: $input) { avatarUrl photoUrl } }`, {
      id: before.id,
      input: { avatarUrl: null },
    });
    expect(viaVariable).toEqual({ avatarUrl: null, photoUrl: null });
  });

  test('patchUser: null on firstName (not nullable) is BAD_USER_INPUT naming firstName; nothing changes', async () => {
    const user = await gqlUser();
    await changesNothing(() =>
      fail(
        `mutation($id: ID!) { patchUser(id: $id, input: {firstName: null, lastName: "Changed"}) { id } }`,
        { id: user.id },
        'BAD_USER_INPUT',
        'input.firstName',
      ),
    );
    await changesNothing(() =>
      fail(
        `mutation($id: ID!, $input: UserPatch!) { patchUser(id: $id, input: $input) { id } }`,
        { id: user.id, input: { status: null } },
        'BAD_USER_INPUT',
        'input.status',
      ),
    );
    expect((await run(GET_USER, { id: user.id })).user).toEqual(user);
  });

  test('patchUser with an empty input changes nothing; on an absent id it is NOT_FOUND', async () => {
    const user = await gqlUser();
    await changesNothing(async () => {
      const { patchUser } = await run(`mutation($id: ID!) { patchUser(id: $id, input: {}) { ${USER} } }`, { id: user.id });
      expect(patchUser).toEqual(user);
    });
    await changesNothing(() => fail(`mutation { patchUser(id: "${ABSENT}", input: {lastName: "X"}) { id } }`, undefined, 'NOT_FOUND'));
  });

  test('updateUserStatus sets the status only; REST reads it; absent id NOT_FOUND', async () => {
    const user = await gqlUser({ status: 1 });
    const { updateUserStatus } = await run(`mutation($id: ID!) { updateUserStatus(id: $id, status: 9) { ${USER} } }`, { id: user.id });
    expect(updateUserStatus).toEqual({ ...user, status: 9, updatedAt: expect.stringMatching(ISO) });
    expect((await svc.request('GET', `/user/${user.id}`)).body).toEqual(restUser(updateUserStatus));
    await changesNothing(() => fail(`mutation { updateUserStatus(id: "${ABSENT}", status: 2) { id } }`, undefined, 'NOT_FOUND'));
  });

  test('destroyUser: true; soft delete (the row stays); gone from reads; its tokens stop working; twice is NOT_FOUND', async () => {
    const user = await gqlUser();
    const secret = fresh('tok');
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: user.id, accessToken: secret, scope: 'user:read' } });
    expect((await run('{ viewer { id } }', undefined, { token: secret })).viewer.id).toBe(createToken.id);

    expect(await run(`mutation($id: ID!) { destroyUser(id: $id) }`, { id: user.id })).toEqual({ destroyUser: true });
    const [row] = await svc.sql<Json>('select deleted_at from users where id = ?', [user.id]);
    expect(row.deleted_at).not.toBeNull();
    expect((await svc.request('GET', `/user/${user.id}`)).status).toBe(404);
    expect((await run(GET_TOKEN, { id: createToken.id })).token).toBeNull();
    const { users } = await run(`query($id: ID!) { users(filter: {id: {eq: $id}}) { total data { id } } }`, { id: user.id });
    expect(users).toEqual({ total: 0, data: [] });
    const denied = await svc.graphql('{ viewer { id } }', undefined, { token: secret });
    expect(denied.status).toBe(401);
    expect(denied.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');

    await changesNothing(() => fail(`mutation($id: ID!) { destroyUser(id: $id) }`, { id: user.id }, 'NOT_FOUND'));
    await changesNothing(() => fail(`mutation { destroyUser(id: "${ABSENT}") }`, undefined, 'NOT_FOUND'));
  });
});

// ---------------------------------------------------------------------------------------------

describe('users: filters, orderBy and pages', () => {
  let tag: string;
  let people: Json[];
  beforeAll(async () => {
    tag = fresh('fam');
    const specs = [
      { firstName: 'Anna', lastName: `${tag}-Adams`, status: 1, ref: 10, outKey: 'a' },
      { firstName: 'bob', lastName: `${tag}-Baker`, status: 2, ref: 20, outKey: null },
      { firstName: 'Carl', lastName: `${tag}-Clark`, status: 3, ref: 30, outKey: 'c' },
      { firstName: 'Dana', lastName: `${tag}-Baker`, status: 2, ref: 40, outKey: null },
      { firstName: 'Emil', lastName: `${tag}-Evans`, status: 5, ref: 50, outKey: 'e' },
    ];
    people = [];
    for (const input of specs) people.push(await gqlUser(input));
  });

  const LIST = `query($f: UserFilter, $o: [UserOrderBy!], $p: Int, $s: Int) {
    users(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { ${USER} } }
  }`;
  const mine = () => ({ lastName: { like: `${tag}-%` } });
  const ids = (page: Json) => page.data.map((u: Json) => u.id);
  const idsOf = (...indexes: number[]) => indexes.map((i) => people[i].id);

  async function list(variables: Json): Promise<Json> {
    return (await run(LIST, variables)).users;
  }

  test('default page, pageSize and order (id ascending); the page envelope', async () => {
    const page = await list({ f: mine() });
    expect(page).toEqual({ total: 5, page: 1, pageSize: 20, data: people });
  });

  test('orderBy [{lastName: DESC}] with id as the final tie-breaker; several keys in order', async () => {
    const byLastDesc = await list({ f: mine(), o: [{ lastName: 'DESC' }] });
    expect(ids(byLastDesc)).toEqual(idsOf(4, 2, 1, 3, 0));
    const byLastThenIdDesc = await list({ f: mine(), o: [{ lastName: 'ASC' }, { id: 'DESC' }] });
    expect(ids(byLastThenIdDesc)).toEqual(idsOf(0, 3, 1, 2, 4));
    const byStatusThenRef = await list({ f: mine(), o: [{ status: 'DESC' }, { ref: 'DESC' }] });
    expect(ids(byStatusThenRef)).toEqual(idsOf(4, 2, 3, 1, 0));
  });

  test('the same order and filter over REST give the same records', async () => {
    const gql = await list({ f: { lastName: { like: `${tag}-%` }, status: { in: [2, 3] } }, o: [{ lastName: 'DESC' }] });
    const filter = encodeURIComponent(JSON.stringify({ lastName: { like: `${tag}-%` }, status: { in: [2, 3] } }));
    const rest = await svc.request('GET', `/user/?filter=${filter}&orderBy=-lastName`);
    expect(rest.status).toBe(200);
    expect(gql.total).toBe(3);
    expect(rest.headers.get('x-total-count')).toBe(String(gql.total));
    expect(rest.body).toEqual(gql.data.map(restUser));
  });

  test('page and pageSize slice the ordered records; a page past the end is empty with the true total', async () => {
    expect(await list({ f: mine(), p: 2, s: 2 })).toEqual({ total: 5, page: 2, pageSize: 2, data: people.slice(2, 4) });
    expect(await list({ f: mine(), p: 3, s: 2 })).toEqual({ total: 5, page: 3, pageSize: 2, data: people.slice(4) });
    expect(await list({ f: mine(), p: 9, s: 2 })).toEqual({ total: 5, page: 9, pageSize: 2, data: [] });
    expect((await list({ f: mine(), s: 1000 })).data).toHaveLength(5);
  });

  test('IntFilter: eq, ne, gt, gte, lt, lte, in, nin', async () => {
    const cases: [Json, number[]][] = [
      [{ eq: 2 }, [1, 3]],
      [{ ne: 2 }, [0, 2, 4]],
      [{ gt: 2 }, [2, 4]],
      [{ gte: 2, lt: 5 }, [1, 2, 3]],
      [{ lte: 1 }, [0]],
      [{ in: [1, 5] }, [0, 4]],
      [{ nin: [1, 2, 3] }, [4]],
    ];
    for (const [status, expected] of cases) {
      expect(ids(await list({ f: { ...mine(), status } }))).toEqual(idsOf(...expected));
    }
  });

  test('SafeIntFilter and IDFilter', async () => {
    expect(ids(await list({ f: { ...mine(), ref: { gte: 30 } } }))).toEqual(idsOf(2, 3, 4));
    expect(ids(await list({ f: { ...mine(), id: { in: idsOf(0, 4) } } }))).toEqual(idsOf(0, 4));
    expect(ids(await list({ f: { ...mine(), id: { gt: people[2].id } } }))).toEqual(idsOf(3, 4));
    expect(ids(await list({ f: { id: { eq: people[1].id } } }))).toEqual(idsOf(1));
    expect(ids(await list({ f: { ...mine(), id: { nin: idsOf(0, 1, 2) } } }))).toEqual(idsOf(3, 4));
  });

  test('StringFilter: eq, like (case-sensitive), ilike, isNull, in', async () => {
    expect(ids(await list({ f: { ...mine(), firstName: { like: 'B%' } } }))).toEqual([]);
    expect(ids(await list({ f: { ...mine(), firstName: { ilike: 'B%' } } }))).toEqual(idsOf(1));
    expect(ids(await list({ f: { ...mine(), firstName: { like: '_a%' } } }))).toEqual(idsOf(2, 3));
    expect(ids(await list({ f: { lastName: { eq: `${tag}-Baker` } } }))).toEqual(idsOf(1, 3));
    expect(ids(await list({ f: { ...mine(), outKey: { isNull: true } } }))).toEqual(idsOf(1, 3));
    expect(ids(await list({ f: { ...mine(), outKey: { isNull: false } } }))).toEqual(idsOf(0, 2, 4));
    expect(ids(await list({ f: { ...mine(), outKey: { in: ['a', 'e'] } } }))).toEqual(idsOf(0, 4));
  });

  test('DateTimeFilter on createdAt', async () => {
    const at = people[2].createdAt;
    expect(ids(await list({ f: { ...mine(), createdAt: { gte: at } } }))).toEqual(expect.arrayContaining(idsOf(2, 3, 4)));
    expect(ids(await list({ f: { ...mine(), createdAt: { lt: at } } }))).toEqual(expect.not.arrayContaining(idsOf(2)));
    expect(ids(await list({ f: { ...mine(), createdAt: { gt: '2999-01-01T00:00:00Z' } } }))).toEqual([]);
    expect(ids(await list({ f: { ...mine(), createdAt: { lt: '2000-01-01T00:00:00+02:00' } } }))).toEqual([]);
    expect(ids(await list({ f: { ...mine(), createdAt: { isNull: false } } }))).toEqual(idsOf(0, 1, 2, 3, 4));
    const exact = await list({ f: { ...mine(), id: { eq: people[2].id }, createdAt: { eq: people[2].createdAt } } });
    expect(ids(exact)).toEqual(idsOf(2));
  });

  test('and, or, not; sibling fields are and-ed', async () => {
    const or = await list({ f: { ...mine(), or: [{ status: { eq: 1 } }, { firstName: { eq: 'Emil' } }] } });
    expect(ids(or)).toEqual(idsOf(0, 4));
    const and = await list({ f: { and: [mine(), { status: { eq: 2 } }, { firstName: { ilike: 'd%' } }] } });
    expect(ids(and)).toEqual(idsOf(3));
    const not = await list({ f: { ...mine(), not: { status: { in: [2, 3] } } } });
    expect(ids(not)).toEqual(idsOf(0, 4));
    const nested = await list({ f: { ...mine(), or: [{ and: [{ status: { eq: 2 } }, { not: { outKey: { isNull: true } } }] }, { ref: { eq: 50 } }] } });
    expect(ids(nested)).toEqual(idsOf(4));
  });

  test('an orderBy item naming two fields (or none) is BAD_USER_INPUT naming orderBy', async () => {
    const two = await fail(LIST, { f: mine(), o: [{ lastName: 'DESC', firstName: 'ASC' }] }, 'BAD_USER_INPUT');
    expect(two.extensions.field).toMatch(/^orderBy/);
    const none = await fail(LIST, { f: mine(), o: [{ id: 'ASC' }, {}] }, 'BAD_USER_INPUT');
    expect(none.extensions.field).toMatch(/^orderBy/);
  });

  test('pageSize above 1000 is read as 1000, pageSize and page below 1 as the defaults; a non-integer is BAD_USER_INPUT', async () => {
    expect(await list({ f: mine(), s: 1001 })).toEqual({ total: 5, page: 1, pageSize: 1000, data: people });
    expect(await list({ f: mine(), s: 2 ** 31 - 1 })).toEqual({ total: 5, page: 1, pageSize: 1000, data: people });
    expect(await list({ f: mine(), s: 0 })).toEqual({ total: 5, page: 1, pageSize: 20, data: people });
    expect(await list({ f: mine(), s: -5 })).toEqual({ total: 5, page: 1, pageSize: 20, data: people });
    expect(await list({ f: mine(), p: 0, s: 2 })).toEqual({ total: 5, page: 1, pageSize: 2, data: people.slice(0, 2) });
    expect(await list({ f: mine(), p: -3, s: 2 })).toEqual({ total: 5, page: 1, pageSize: 2, data: people.slice(0, 2) });
    for (const variables of [{ s: 1.5 }, { p: '2' }]) {
      const res = await svc.graphql(LIST, variables);
      expect({ status: res.status, code: res.body.errors?.[0]?.extensions?.code, data: res.body.data }).toEqual({
        status: 400,
        code: 'BAD_USER_INPUT',
        data: undefined,
      });
    }
  });

  test('a filter value of the wrong kind is BAD_USER_INPUT naming the filter path', async () => {
    const error = await fail(LIST, { f: { firstName: { like: 'x\u0000' } } }, 'BAD_USER_INPUT');
    expect(error.extensions.field).toMatch(/^filter\.firstName/);
    const badId = await fail(LIST, { f: { id: { eq: 'abc' } } }, 'BAD_USER_INPUT');
    expect(badId.extensions.field).toMatch(/^filter\.id/);
  });

  test('a value in a filter is data, never SQL', async () => {
    const page = await list({ f: { lastName: { eq: "x' or '1'='1" } } });
    expect(page).toEqual({ total: 0, page: 1, pageSize: 20, data: [] });
  });
});

// ---------------------------------------------------------------------------------------------

describe('tokens', () => {
  let owner: Json;
  beforeAll(async () => {
    owner = await gqlUser({ firstName: 'Owner' });
  });

  test('createToken: every field, defaults, client from X-Client, version "1"; REST reads it identically', async () => {
    const accessToken = fresh('access');
    const { createToken } = await run(
      CREATE_TOKEN,
      {
        input: {
          userID: owner.id,
          accessToken,
          refreshToken: 'refresh',
          scope: 'user:read token:read',
          code: 'c0de',
          codeChallenge: 'challenge',
          tokenType: 'Bearer',
          expireAt: '2030-01-02T03:04:05+02:00',
        },
      },
      { headers: { 'X-Client': 'graphql-tests' } },
    );
    expect(createToken).toEqual({
      id: expect.stringMatching(/^[1-9]\d*$/),
      userID: owner.id,
      accessToken,
      refreshToken: 'refresh',
      scope: 'user:read token:read',
      code: 'c0de',
      codeChallenge: 'challenge',
      tokenType: 'Bearer',
      expireAt: '2030-01-02T01:04:05.000Z',
      client: 'graphql-tests',
      version: '1',
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const rest = await svc.request('GET', `/token/${createToken.id}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual(restToken(createToken));
    expect((await run(GET_TOKEN, { id: createToken.id })).token).toEqual(createToken);

    const { createToken: minimal } = await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: fresh('min') } });
    expect(minimal).toMatchObject({ refreshToken: '', scope: '', code: '', codeChallenge: null, tokenType: '', expireAt: null, version: '1' });
  });

  test('a token created over REST reads back identically through token(id), tokens and Token.user', async () => {
    const created = await restPost('/token/', { userID: Number(owner.id), accessToken: fresh('rest'), scope: 'x', expireAt: '2031-05-06T07:08:09.123Z' });
    const { token } = await run(`query($id: ID!) { token(id: $id) { ${TOKEN} user { ${USER} } } }`, { id: String(created.id) });
    const { user, ...fields } = token;
    expect(restToken(fields)).toEqual(created);
    expect(user).toEqual(owner);
    const { tokens } = await run(`query($id: ID!) { tokens(filter: {id: {eq: $id}}) { total data { ${TOKEN} } } }`, { id: String(created.id) });
    expect(tokens.data.map(restToken)).toEqual([created]);
  });

  test('createToken with a duplicate live accessToken: CONFLICT naming accessToken; nothing stored', async () => {
    const accessToken = fresh('dup');
    await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken } });
    await changesNothing(async () => {
      const error = await fail(CREATE_TOKEN, { input: { userID: owner.id, accessToken } }, 'CONFLICT');
      expect(error.extensions.field).toBe('input.accessToken');
      expect(error.message).not.toContain(accessToken);
    });
  });

  test.each([
    { what: 'an absent userID', input: { userID: ABSENT, accessToken: 'a' }, field: 'userID' },
    { what: 'a malformed userID', input: { userID: 'abc', accessToken: 'a' }, field: 'userID' },
    { what: 'userID 0', input: { userID: '0', accessToken: 'a' }, field: 'userID' },
    { what: 'a too long accessToken', input: { userID: 'OWNER', accessToken: 'x'.repeat(1025) }, field: 'accessToken' },
    { what: 'an empty accessToken', input: { userID: 'OWNER', accessToken: '' }, field: 'accessToken' },
    { what: 'a too long scope', input: { userID: 'OWNER', accessToken: 'a', scope: 's'.repeat(256) }, field: 'scope' },
  ])('createToken with $what: BAD_USER_INPUT naming $field; nothing stored', async ({ input, field }) => {
    const given = { ...input, userID: input.userID === 'OWNER' ? owner.id : input.userID };
    await changesNothing(() => fail(CREATE_TOKEN, { input: given }, 'BAD_USER_INPUT', `input.${field}`));
  });

  test('createToken for a deleted user is BAD_USER_INPUT naming userID', async () => {
    const gone = await gqlUser();
    await run(`mutation($id: ID!) { destroyUser(id: $id) }`, { id: gone.id });
    await changesNothing(() => fail(CREATE_TOKEN, { input: { userID: gone.id, accessToken: fresh('t') } }, 'BAD_USER_INPUT', 'input.userID'));
  });

  test('token(id): null for an absent or deleted token', async () => {
    expect((await svc.graphql(GET_TOKEN, { id: ABSENT })).body).toEqual({ data: { token: null } });
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: fresh('t') } });
    expect(await run(`mutation($id: ID!) { destroyToken(id: $id) }`, { id: createToken.id })).toEqual({ destroyToken: true });
    expect((await svc.graphql(GET_TOKEN, { id: createToken.id })).body).toEqual({ data: { token: null } });
  });

  test('updateToken replaces every writable field and bumps version; REST agrees', async () => {
    const other = await gqlUser();
    const { createToken } = await run(CREATE_TOKEN, {
      input: {
        userID: owner.id,
        accessToken: fresh('u'),
        refreshToken: 'r',
        scope: 's',
        code: 'c',
        codeChallenge: 'cc',
        tokenType: 't',
        expireAt: '2030-01-01T00:00:00Z',
      },
    });
    const accessToken = fresh('u2');
    const { updateToken } = await run(`mutation($id: ID!, $input: TokenInput!) { updateToken(id: $id, input: $input) { ${TOKEN} } }`, {
      id: createToken.id,
      input: { userID: other.id, accessToken, scope: 'new' },
    });
    expect(updateToken).toEqual({
      ...createToken,
      userID: other.id,
      accessToken,
      refreshToken: '',
      scope: 'new',
      code: '',
      codeChallenge: null,
      tokenType: '',
      expireAt: null,
      version: '2',
      updatedAt: expect.stringMatching(ISO),
    });
    expect((await svc.request('GET', `/token/${createToken.id}`)).body).toEqual(restToken(updateToken));
  });

  test('updateToken on an absent id: NOT_FOUND; applyTokenID then updateToken creates, a repeat updates', async () => {
    const UPDATE = `mutation($id: ID!, $input: TokenInput!) { updateToken(id: $id, input: $input) { ${TOKEN} } }`;
    await changesNothing(() => fail(UPDATE, { id: ABSENT, input: { userID: owner.id, accessToken: fresh('n') } }, 'NOT_FOUND'));

    const { applyTokenID } = await run('mutation { applyTokenID }');
    expect(applyTokenID).toMatch(/^[1-9]\d*$/);
    expect((await run(GET_TOKEN, { id: applyTokenID })).token).toBeNull();
    const accessToken = fresh('applied');
    const { updateToken: created } = await run(UPDATE, { id: applyTokenID, input: { userID: owner.id, accessToken } });
    expect(created).toMatchObject({ id: applyTokenID, accessToken, version: '1' });
    expect((await svc.request('GET', `/token/${applyTokenID}`)).body).toEqual(restToken(created));
    const { updateToken: again } = await run(UPDATE, { id: applyTokenID, input: { userID: owner.id, accessToken, scope: 'more' } });
    expect(again).toMatchObject({ id: applyTokenID, scope: 'more', version: '2' });

    // applyTokenID over REST, then updateToken over GraphQL.
    const applied = await svc.request('POST', '/apply/token/id/', { body: { anything: true } });
    expect(applied.status).toBe(201);
    expect(applied.body).toEqual(expect.any(Number));
    const { updateToken: viaRest } = await run(UPDATE, { id: String(applied.body), input: { userID: owner.id, accessToken: fresh('r') } });
    expect(viaRest.id).toBe(String(applied.body));
  });

  test('patchToken changes only the fields given; explicit nulls clear nullable fields; version bumps', async () => {
    const { createToken } = await run(CREATE_TOKEN, {
      input: { userID: owner.id, accessToken: fresh('p'), refreshToken: 'r', scope: 's', codeChallenge: 'cc', expireAt: '2030-01-01T00:00:00Z' },
    });
    const PATCH = `mutation($id: ID!, $input: TokenPatch!) { patchToken(id: $id, input: $input) { ${TOKEN} } }`;
    const { patchToken } = await run(PATCH, { id: createToken.id, input: { scope: 'patched', codeChallenge: null, expireAt: null } });
    expect(patchToken).toEqual({
      ...createToken,
      scope: 'patched',
      codeChallenge: null,
      expireAt: null,
      version: '2',
      updatedAt: expect.stringMatching(ISO),
    });
    const [row] = await svc.sql('select refresh_token_hmac, code_challenge, expire_at, version from tokens where id = ?', [createToken.id]);
    expect(row).toEqual({ refresh_token_hmac: svc.hmac('r', 'refreshToken'), code_challenge: null, expire_at: null, version: 2 });
    expect((await svc.request('GET', `/token/${createToken.id}`)).body).toEqual(restToken(patchToken));
  });

  test('patchToken failures: null accessToken, duplicate accessToken, absent id; nothing changes', async () => {
    const taken = fresh('taken');
    await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: taken } });
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: fresh('mine') } });
    const PATCH = `mutation($id: ID!, $input: TokenPatch!) { patchToken(id: $id, input: $input) { id } }`;
    await changesNothing(() => fail(PATCH, { id: createToken.id, input: { accessToken: null } }, 'BAD_USER_INPUT', 'input.accessToken'));
    await changesNothing(() => fail(PATCH, { id: createToken.id, input: { accessToken: taken, scope: 'x' } }, 'CONFLICT', 'input.accessToken'));
    await changesNothing(() => fail(PATCH, { id: createToken.id, input: { userID: ABSENT } }, 'BAD_USER_INPUT', 'input.userID'));
    await changesNothing(() => fail(PATCH, { id: ABSENT, input: { scope: 'x' } }, 'NOT_FOUND'));
    expect((await run(GET_TOKEN, { id: createToken.id })).token).toEqual(createToken);
  });

  test('destroyToken: true; soft delete; the token stops authenticating at once; twice is NOT_FOUND', async () => {
    const secret = fresh('live');
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: secret, scope: 'token:read' } });
    expect((await run('{ viewer { id } }', undefined, { token: secret })).viewer.id).toBe(createToken.id);
    expect(await run(`mutation($id: ID!) { destroyToken(id: $id) }`, { id: createToken.id })).toEqual({ destroyToken: true });
    const [row] = await svc.sql<Json>('select deleted_at from tokens where id = ?', [createToken.id]);
    expect(row.deleted_at).not.toBeNull();
    expect((await svc.graphql('{ viewer { id } }', undefined, { token: secret })).status).toBe(401);
    expect((await svc.request('GET', `/token/${createToken.id}`)).status).toBe(404);
    await changesNothing(() => fail(`mutation($id: ID!) { destroyToken(id: $id) }`, { id: createToken.id }, 'NOT_FOUND'));
    await changesNothing(() => fail(`mutation { destroyToken(id: "${ABSENT}") }`, undefined, 'NOT_FOUND'));
  });

  test('viewer is the calling token, with its user', async () => {
    const secret = await svc.tokenWith('user:read');
    const { viewer } = await run(`{ viewer { ${TOKEN} user { id firstName lastName } } }`, undefined, { token: secret });
    expect(viewer).toMatchObject({ accessToken: secret, scope: 'user:read', version: '1', user: { firstName: 'Token' } });
    const rest = await svc.request('GET', `/token/${viewer.id}`);
    const { user, ...fields } = viewer;
    expect(rest.body).toEqual(restToken(fields));
    expect(user.id).toBe(fields.userID);
    const admin = (await run('{ viewer { accessToken scope } }')).viewer;
    expect(admin).toEqual({ accessToken: svc.adminToken, scope: '*' });
  });

  test('tokens: typed filters (IDFilter, StringFilter, DateTimeFilter, version), orderBy and pages', async () => {
    const holder = await gqlUser();
    const tag = fresh('tk');
    const made: Json[] = [];
    const specs = [
      { accessToken: `${tag}-c`, scope: 'read', codeChallenge: null, expireAt: '2030-01-01T00:00:00Z' },
      { accessToken: `${tag}-a`, scope: 'write', codeChallenge: 'x', expireAt: null },
      { accessToken: `${tag}-b`, scope: 'read write', codeChallenge: null, expireAt: '2040-01-01T00:00:00Z' },
    ];
    for (const spec of specs) made.push((await run(CREATE_TOKEN, { input: { userID: holder.id, ...spec } })).createToken);
    await run(`mutation($id: ID!) { patchToken(id: $id, input: {code: "v2"}) { version } }`, { id: made[2].id });

    const LIST = `query($f: TokenFilter, $o: [TokenOrderBy!], $p: Int, $s: Int) {
      tokens(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { id accessToken } }
    }`;
    const list = async (v: Json) => (await run(LIST, v)).tokens;
    const ids = (page: Json) => page.data.map((t: Json) => t.id);
    const idsOf = (...i: number[]) => i.map((n) => made[n].id);
    const mine = { userID: { eq: holder.id } };

    expect((await list({ f: mine })).total).toBe(3);
    expect(ids(await list({ f: mine, o: [{ scope: 'DESC' }] }))).toEqual(idsOf(1, 2, 0));
    expect(ids(await list({ f: mine, o: [{ scope: 'ASC' }] }))).toEqual(idsOf(0, 2, 1));
    expect(ids(await list({ f: { ...mine, scope: { like: 'read%' } } }))).toEqual(idsOf(0, 2));
    expect(ids(await list({ f: { ...mine, codeChallenge: { isNull: true } } }))).toEqual(idsOf(0, 2));
    expect(ids(await list({ f: { ...mine, expireAt: { isNull: true } } }))).toEqual(idsOf(1));
    expect(ids(await list({ f: { ...mine, expireAt: { gt: '2035-01-01T00:00:00Z' } } }))).toEqual(idsOf(2));
    expect(ids(await list({ f: { ...mine, version: { eq: '2' } } }))).toEqual(idsOf(2));
    expect(ids(await list({ f: { ...mine, or: [{ scope: { eq: 'write' } }, { accessToken: { eq: `${tag}-c` } }] } }))).toEqual(idsOf(0, 1));
    expect(ids(await list({ f: { ...mine, not: { scope: { ilike: '%WRITE%' } } } }))).toEqual(idsOf(0));
    expect(await list({ f: mine, o: [{ scope: 'DESC' }], p: 2, s: 2 })).toEqual({
      total: 3,
      page: 2,
      pageSize: 2,
      data: [{ id: made[0].id, accessToken: `${tag}-c` }],
    });
    // pageSize above 1000 is read as 1000 (SPEC §5).
    expect(await list({ f: mine, o: [{ scope: 'DESC' }], s: 1001 })).toEqual({
      total: 3,
      page: 1,
      pageSize: 1000,
      data: [1, 2, 0].map((n) => ({ id: made[n].id, accessToken: made[n].accessToken })),
    });
    await fail(LIST, { f: mine, o: [{ scope: 'ASC', id: 'ASC' }] }, 'BAD_USER_INPUT');
    // accessToken is stored encrypted (SPEC §9): matched by equality, never sorted.
    const unsortable = await svc.graphql(LIST, { f: mine, o: [{ accessToken: 'ASC' }] });
    expect(unsortable.body.errors[0].message).toMatch(/"accessToken" is not defined by type "TokenOrderBy"/);
  });
});

// ---------------------------------------------------------------------------------------------

describe.each([
  { type: 'Application', one: 'application', many: 'applications', path: '/application/' },
  { type: 'Role', one: 'role', many: 'roles', path: '/role/' },
])('$many', ({ type, one, many, path }) => {
  const CREATE = `mutation($input: ${type}Input!) { create${type}(input: $input) { ${NAMED} } }`;
  const GET = `query($id: ID!) { ${one}(id: $id) { ${NAMED} } }`;
  const UPDATE = `mutation($id: ID!, $input: ${type}Input!) { update${type}(id: $id, input: $input) { ${NAMED} } }`;
  const PATCH = `mutation($id: ID!, $input: ${type}Patch!) { patch${type}(id: $id, input: $input) { ${NAMED} } }`;
  const DESTROY = `mutation($id: ID!) { destroy${type}(id: $id) }`;
  const LIST = `query($f: ${type}Filter, $o: [${type}OrderBy!], $p: Int, $s: Int) {
    ${many}(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { ${NAMED} } }
  }`;
  const create = async (name: string) => (await run(CREATE, { input: { name } }))[`create${type}`] as Json;

  test(`create${type}; ${one}(id) and REST GET read it identically; REST-made reads back too`, async () => {
    const name = fresh(one);
    const created = await create(name);
    expect(created).toEqual({ id: expect.stringMatching(/^[1-9]\d*$/), name, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO) });
    expect((await run(GET, { id: created.id }))[one]).toEqual(created);
    const rest = await svc.request('GET', `${path}${created.id}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual(restNamed(created));

    const viaRest = await restPost(path, { name: fresh(one) });
    expect(restNamed((await run(GET, { id: String(viaRest.id) }))[one])).toEqual(viaRest);
  });

  test(`create${type} with a duplicate name: CONFLICT naming name; a bad name: BAD_USER_INPUT; nothing stored`, async () => {
    const name = fresh(one);
    await create(name);
    await changesNothing(() => fail(CREATE, { input: { name } }, 'CONFLICT', 'input.name'));
    await changesNothing(() => fail(CREATE, { input: { name: 'n'.repeat(256) } }, 'BAD_USER_INPUT', 'input.name'));
    await changesNothing(() => fail(CREATE, { input: { name: '' } }, 'BAD_USER_INPUT', 'input.name'));
  });

  test(`${many}: filter (StringFilter, IDFilter, DateTimeFilter, and/or/not), orderBy, page, pageSize`, async () => {
    const tag = fresh(`${one}s`);
    const made: Json[] = [];
    for (const suffix of ['beta', 'Alpha', 'gamma']) made.push(await create(`${tag}-${suffix}`));
    const list = async (v: Json) => (await run(LIST, v))[many] as Json;
    const ids = (page: Json) => page.data.map((r: Json) => r.id);
    const idsOf = (...i: number[]) => i.map((n) => made[n].id);
    const mine = { name: { like: `${tag}-%` } };

    expect(await list({ f: mine })).toEqual({ total: 3, page: 1, pageSize: 20, data: made });
    expect(ids(await list({ f: mine, o: [{ name: 'DESC' }] }))).toEqual(idsOf(2, 0, 1));
    expect(ids(await list({ f: { name: { ilike: `${tag}-a%` } } }))).toEqual(idsOf(1));
    expect(ids(await list({ f: { name: { like: `${tag}-a%` } } }))).toEqual([]);
    expect(ids(await list({ f: { ...mine, id: { in: idsOf(0, 2) } } }))).toEqual(idsOf(0, 2));
    expect(ids(await list({ f: { ...mine, createdAt: { lte: '2999-12-31T23:59:59Z' } } }))).toEqual(idsOf(0, 1, 2));
    expect(ids(await list({ f: { ...mine, or: [{ name: { eq: `${tag}-beta` } }, { not: { name: { ne: `${tag}-gamma` } } }] } }))).toEqual(idsOf(0, 2));
    expect(await list({ f: mine, o: [{ id: 'DESC' }], p: 2, s: 2 })).toEqual({ total: 3, page: 2, pageSize: 2, data: [made[0]] });

    const filter = encodeURIComponent(JSON.stringify(mine));
    const rest = await svc.request('GET', `${path}?filter=${filter}&orderBy=-name`);
    expect(rest.headers.get('x-total-count')).toBe('3');
    expect(rest.body).toEqual((await list({ f: mine, o: [{ name: 'DESC' }] })).data.map(restNamed));

    // pageSize above 1000 is read as 1000 (SPEC §5).
    expect(await list({ f: mine, s: 1001 })).toEqual({ total: 3, page: 1, pageSize: 1000, data: made });
    await fail(LIST, { o: [{ name: 'ASC', id: 'DESC' }] }, 'BAD_USER_INPUT');
  });

  test(`update${type} and patch${type}; REST reads the result`, async () => {
    const created = await create(fresh(one));
    const replaced = (await run(UPDATE, { id: created.id, input: { name: fresh('replaced') } }))[`update${type}`];
    expect(replaced).toEqual({ ...created, name: replaced.name, updatedAt: expect.stringMatching(ISO) });
    const patched = (await run(PATCH, { id: created.id, input: { name: fresh('patched') } }))[`patch${type}`];
    expect(patched).toEqual({ ...replaced, name: patched.name, updatedAt: expect.stringMatching(ISO) });
    expect((await svc.request('GET', `${path}${created.id}`)).body).toEqual(restNamed(patched));
    const [row] = await svc.sql(`select name from ${many} where id = ?`, [created.id]);
    expect(row).toEqual({ name: patched.name });
    await changesNothing(async () => {
      expect((await run(PATCH, { id: created.id, input: {} }))[`patch${type}`]).toEqual(patched);
    });
  });

  test(`update${type}/patch${type}: NOT_FOUND on absent ids, CONFLICT on a taken name, BAD_USER_INPUT on null name`, async () => {
    const taken = await create(fresh(one));
    const mine = await create(fresh(one));
    await changesNothing(() => fail(UPDATE, { id: ABSENT, input: { name: fresh('x') } }, 'NOT_FOUND'));
    await changesNothing(() => fail(PATCH, { id: ABSENT, input: { name: fresh('x') } }, 'NOT_FOUND'));
    await changesNothing(() => fail(UPDATE, { id: mine.id, input: { name: taken.name } }, 'CONFLICT', 'input.name'));
    await changesNothing(() => fail(PATCH, { id: mine.id, input: { name: taken.name } }, 'CONFLICT', 'input.name'));
    await changesNothing(() => fail(PATCH, { id: mine.id, input: { name: null } }, 'BAD_USER_INPUT', 'input.name'));
    await changesNothing(() => fail(UPDATE, { id: 'x1', input: { name: 'x' } }, 'BAD_USER_INPUT', 'id'));
  });

  test(`destroy${type}: true; ${one}(id) null afterwards; the name is free again; twice is NOT_FOUND`, async () => {
    const created = await create(fresh(one));
    expect(await run(DESTROY, { id: created.id })).toEqual({ [`destroy${type}`]: true });
    expect((await svc.graphql(GET, { id: created.id })).body).toEqual({ data: { [one]: null } });
    expect((await svc.graphql(GET, { id: ABSENT })).body).toEqual({ data: { [one]: null } });
    expect((await svc.request('GET', `${path}${created.id}`)).status).toBe(404);
    const [row] = await svc.sql<Json>(`select deleted_at from ${many} where id = ?`, [created.id]);
    expect(row.deleted_at).not.toBeNull();
    await changesNothing(() => fail(DESTROY, { id: created.id }, 'NOT_FOUND'));
    const again = await create(created.name);
    expect(again.id).not.toBe(created.id);
  });
});

// ---------------------------------------------------------------------------------------------

describe('links', () => {
  const LINK_APPS = `mutation($id: ID!, $ids: [ID!]!) { linkUserApplications(id: $id, applicationIDs: $ids) }`;
  const UNLINK_APPS = `mutation($id: ID!, $ids: [ID!]!) { unlinkUserApplications(id: $id, applicationIDs: $ids) }`;
  const LINK_ROLES = `mutation($id: ID!, $ids: [ID!]!) { linkUserRoles(id: $id, roleIDs: $ids) }`;
  const UNLINK_ROLES = `mutation($id: ID!, $ids: [ID!]!) { unlinkUserRoles(id: $id, roleIDs: $ids) }`;
  const UPDATE_LINK = `mutation($id: ID!, $app: ID!, $right: SafeInt!) { updateUserApplication(id: $id, applicationID: $app, right: $right) { ${LINK} application { ${NAMED} } } }`;
  const GET_LINK = `query($user: ID!, $app: ID!) { userApplication(userID: $user, applicationID: $app) { ${LINK} application { ${NAMED} } } }`;
  const USER_APPS = `query($id: ID!, $f: ApplicationLinkFilter, $o: [ApplicationLinkOrderBy!], $p: Int, $s: Int) {
    user(id: $id) { applications(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { ${LINK} application { ${NAMED} } } } }
  }`;
  const USER_ROLES = `query($id: ID!, $f: RoleFilter, $o: [RoleOrderBy!], $p: Int, $s: Int) {
    user(id: $id) { roles(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { ${NAMED} } } }
  }`;

  test('linkUserApplications counts links created (duplicates once, existing links left alone); User.applications and REST show them', async () => {
    const user = await gqlUser();
    const [a, b, c] = [await gqlApp(), await gqlApp(), await gqlApp()];
    expect((await run(LINK_APPS, { id: user.id, ids: [a.id, b.id, a.id] })).linkUserApplications).toBe(2);
    expect((await run(LINK_APPS, { id: user.id, ids: [a.id, b.id, c.id] })).linkUserApplications).toBe(1);
    expect((await run(LINK_APPS, { id: user.id, ids: [] })).linkUserApplications).toBe(0);

    const { user: withApps } = await run(USER_APPS, { id: user.id });
    expect(withApps.applications).toEqual({
      total: 3,
      page: 1,
      pageSize: 20,
      data: [a, b, c].map((app) => ({
        applicationID: app.id,
        userID: user.id,
        right: 0,
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
        application: app,
      })),
    });

    const rest = await svc.request('GET', `/user/${user.id}/application/`);
    expect(rest.status).toBe(200);
    expect(rest.headers.get('x-total-count')).toBe('3');
    expect(rest.body).toEqual([a, b, c].map((app) => ({ ...restNamed(app), right: 0 })));
    // right is a bigint column (SPEC §4), read here as text.
    const rows = await svc.sql('select application_id::text as app, "right"::text as right, deleted_at from user_applications where user_id = ? order by 1', [
      user.id,
    ]);
    expect(rows).toEqual([a, b, c].map((app) => ({ app: app.id, right: '0', deleted_at: null })));
  });

  test('a link made over REST shows in User.applications and userApplication, identically', async () => {
    const user = await gqlUser();
    const app = await gqlApp();
    const linked = await svc.request('POST', `/user/${user.id}/application/`, { body: [Number(app.id)] });
    expect({ status: linked.status, body: linked.body }).toEqual({ status: 201, body: 1 });
    const put = await svc.request('PUT', `/user/${user.id}/application/${app.id}`, { body: { right: 6 } });
    expect({ status: put.status, body: put.body }).toEqual({ status: 200, body: 1 });
    const restLink = await svc.request('GET', `/user/${user.id}/application/${app.id}`);
    expect(restLink.body).toMatchObject({ userID: Number(user.id), applicationID: Number(app.id), right: 6 });

    const { user: withApps } = await run(USER_APPS, { id: user.id });
    expect(withApps.applications.data).toHaveLength(1);
    const { application, ...link } = withApps.applications.data[0];
    expect(application).toEqual(app);
    expect({ ...link, userID: Number(link.userID), applicationID: Number(link.applicationID) }).toEqual(restLink.body);

    const { userApplication } = await run(GET_LINK, { user: user.id, app: app.id });
    expect(userApplication).toEqual(withApps.applications.data[0]);
  });

  test('linkUserApplications with an unknown, deleted or malformed id: BAD_USER_INPUT, nothing linked; absent user NOT_FOUND', async () => {
    const user = await gqlUser();
    const live = await gqlApp();
    const dead = await gqlApp();
    await run(`mutation($id: ID!) { destroyApplication(id: $id) }`, { id: dead.id });
    await changesNothing(async () => {
      const error = await fail(LINK_APPS, { id: user.id, ids: [live.id, ABSENT] }, 'BAD_USER_INPUT', 'applicationIDs');
      expect(error.message).toContain(ABSENT);
    });
    await changesNothing(() => fail(LINK_APPS, { id: user.id, ids: [live.id, dead.id] }, 'BAD_USER_INPUT', 'applicationIDs'));
    await changesNothing(async () => {
      const error = await fail(LINK_APPS, { id: user.id, ids: [live.id, 'abc'] }, 'BAD_USER_INPUT');
      expect(error.extensions.field).toMatch(/^applicationIDs/);
    });
    await changesNothing(() => fail(LINK_APPS, { id: ABSENT, ids: [live.id] }, 'NOT_FOUND'));
    await changesNothing(() => fail(UNLINK_APPS, { id: ABSENT, ids: [live.id] }, 'NOT_FOUND'));
    expect((await run(USER_APPS, { id: user.id })).user.applications.total).toBe(0);
  });

  test('updateUserApplication sets the right; REST reads it; never creates a link (NOT_FOUND)', async () => {
    const user = await gqlUser();
    const [linkedApp, loneApp] = [await gqlApp(), await gqlApp()];
    await run(LINK_APPS, { id: user.id, ids: [linkedApp.id] });
    const { updateUserApplication } = await run(UPDATE_LINK, { id: user.id, app: linkedApp.id, right: 42 });
    expect(updateUserApplication).toEqual({
      applicationID: linkedApp.id,
      userID: user.id,
      right: 42,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
      application: linkedApp,
    });
    const rest = await svc.request('GET', `/user/${user.id}/application/${linkedApp.id}`);
    expect(rest.body).toEqual({
      userID: Number(user.id),
      applicationID: Number(linkedApp.id),
      right: 42,
      createdAt: updateUserApplication.createdAt,
      updatedAt: updateUserApplication.updatedAt,
    });

    // right is any safe integer, stored as a bigint (SPEC §4): both ends of the range round-trip.
    for (const right of [Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 40]) {
      expect((await run(UPDATE_LINK, { id: user.id, app: linkedApp.id, right })).updateUserApplication.right).toBe(right);
      expect((await svc.request('GET', `/user/${user.id}/application/${linkedApp.id}`)).body.right).toBe(right);
      expect(await svc.sql('select "right"::text as r from user_applications where user_id = ?', [user.id])).toEqual([{ r: String(right) }]);
    }
    // 2^53 is out of range: refused while the variables are read, nothing changes.
    await changesNothing(async () => {
      const res = await svc.graphql(UPDATE_LINK, { id: user.id, app: linkedApp.id, right: 2 ** 53 });
      expect({ status: res.status, code: res.body.errors?.[0]?.extensions?.code }).toEqual({ status: 400, code: 'BAD_USER_INPUT' });
    });

    await changesNothing(() => fail(UPDATE_LINK, { id: user.id, app: loneApp.id, right: 1 }, 'NOT_FOUND'));
    await changesNothing(() => fail(UPDATE_LINK, { id: ABSENT, app: linkedApp.id, right: 1 }, 'NOT_FOUND'));
    await changesNothing(() => fail(UPDATE_LINK, { id: user.id, app: 'nope', right: 1 }, 'BAD_USER_INPUT', 'applicationID'));
    expect(await svc.sql('select count(*)::int as n from user_applications where user_id = ?', [user.id])).toEqual([{ n: 1 }]);
  });

  test('userApplication: the link; null when not linked, after unlinking, or for an absent user', async () => {
    const user = await gqlUser();
    const [app, other] = [await gqlApp(), await gqlApp()];
    await run(LINK_APPS, { id: user.id, ids: [app.id] });
    const { userApplication } = await run(GET_LINK, { user: user.id, app: app.id });
    expect(userApplication).toMatchObject({ applicationID: app.id, userID: user.id, right: 0, application: app });

    expect((await svc.graphql(GET_LINK, { user: user.id, app: other.id })).body).toEqual({ data: { userApplication: null } });
    expect((await svc.graphql(GET_LINK, { user: ABSENT, app: app.id })).body).toEqual({ data: { userApplication: null } });
    expect((await svc.graphql(GET_LINK, { user: user.id, app: ABSENT })).body).toEqual({ data: { userApplication: null } });
    expect((await run(UNLINK_APPS, { id: user.id, ids: [app.id] })).unlinkUserApplications).toBe(1);
    expect((await svc.graphql(GET_LINK, { user: user.id, app: app.id })).body).toEqual({ data: { userApplication: null } });
    await fail(GET_LINK, { user: user.id, app: 'x' }, 'BAD_USER_INPUT', 'applicationID');
    await fail(GET_LINK, { user: 'x', app: app.id }, 'BAD_USER_INPUT', 'userID');
  });

  test('unlinkUserApplications counts links removed; absent links are a no-op; REST no longer lists them', async () => {
    const user = await gqlUser();
    const [a, b, c] = [await gqlApp(), await gqlApp(), await gqlApp()];
    await run(LINK_APPS, { id: user.id, ids: [a.id, b.id] });
    expect((await run(UNLINK_APPS, { id: user.id, ids: [a.id, c.id, a.id] })).unlinkUserApplications).toBe(1);
    expect((await run(UNLINK_APPS, { id: user.id, ids: [a.id] })).unlinkUserApplications).toBe(0);
    const rest = await svc.request('GET', `/user/${user.id}/application/`);
    expect(rest.headers.get('x-total-count')).toBe('1');
    expect(rest.body.map((x: Json) => x.id)).toEqual([Number(b.id)]);
    expect((await run(USER_APPS, { id: user.id })).user.applications.data.map((l: Json) => l.applicationID)).toEqual([b.id]);
    // Relinking revives the link with right 0.
    expect((await run(LINK_APPS, { id: user.id, ids: [a.id] })).linkUserApplications).toBe(1);
    // A REST unlink shows in GraphQL too.
    const unlinked = await svc.request('DELETE', `/user/${user.id}/application/`, { body: [Number(b.id)] });
    expect({ status: unlinked.status, body: unlinked.body }).toEqual({ status: 200, body: 1 });
    expect((await run(USER_APPS, { id: user.id })).user.applications.data.map((l: Json) => l.applicationID)).toEqual([a.id]);
  });

  test('User.applications: filter (applicationID, name, right; and/or/not), orderBy, page, pageSize', async () => {
    const user = await gqlUser();
    const tag = fresh('la');
    const apps = [await gqlApp(`${tag}-b`), await gqlApp(`${tag}-a`), await gqlApp(`${tag}-c`)];
    await run(LINK_APPS, { id: user.id, ids: apps.map((a) => a.id) });
    await run(UPDATE_LINK, { id: user.id, app: apps[0].id, right: 3 });
    await run(UPDATE_LINK, { id: user.id, app: apps[2].id, right: 7 });
    const page = async (v: Json) => (await run(USER_APPS, { id: user.id, ...v })).user.applications as Json;
    const ids = (p: Json) => p.data.map((l: Json) => l.applicationID);
    const idsOf = (...i: number[]) => i.map((n) => apps[n].id);

    expect(ids(await page({}))).toEqual(idsOf(0, 1, 2));
    expect(ids(await page({ o: [{ name: 'ASC' }] }))).toEqual(idsOf(1, 0, 2));
    expect(ids(await page({ o: [{ right: 'DESC' }] }))).toEqual(idsOf(2, 0, 1));
    expect(ids(await page({ o: [{ applicationID: 'DESC' }] }))).toEqual(idsOf(2, 1, 0));
    expect(ids(await page({ f: { right: { gt: 0 } } }))).toEqual(idsOf(0, 2));
    expect(ids(await page({ f: { right: { in: [0, 7] } } }))).toEqual(idsOf(1, 2));
    expect(ids(await page({ f: { name: { like: `${tag}-_` }, not: { right: { eq: 3 } } } }))).toEqual(idsOf(1, 2));
    expect(ids(await page({ f: { applicationID: { eq: apps[1].id } } }))).toEqual(idsOf(1));
    expect(ids(await page({ f: { or: [{ name: { eq: `${tag}-c` } }, { right: { lte: 0 } }] } }))).toEqual(idsOf(1, 2));
    expect(await page({ o: [{ name: 'DESC' }], p: 2, s: 2 })).toMatchObject({ total: 3, page: 2, pageSize: 2, data: [{ applicationID: apps[1].id }] });
    expect(await page({ p: 5, s: 2 })).toEqual({ total: 3, page: 5, pageSize: 2, data: [] });

    // REST gives the same order for the same request.
    const rest = await svc.request('GET', `/user/${user.id}/application/?orderBy=-right`);
    expect(rest.body.map((a: Json) => [String(a.id), a.right])).toEqual([
      [apps[2].id, 7],
      [apps[0].id, 3],
      [apps[1].id, 0],
    ]);

    // pageSize above 1000 is read as 1000, page below 1 as 1 (SPEC §5).
    expect(await page({ p: 0, s: 1001 })).toMatchObject({
      total: 3,
      page: 1,
      pageSize: 1000,
      data: idsOf(0, 1, 2).map((applicationID) => ({ applicationID })),
    });
    await fail(USER_APPS, { id: user.id, o: [{ name: 'ASC', right: 'ASC' }] }, 'BAD_USER_INPUT');
  });

  test('a deleted application drops out of User.applications', async () => {
    const user = await gqlUser();
    const [keep, drop] = [await gqlApp(), await gqlApp()];
    await run(LINK_APPS, { id: user.id, ids: [keep.id, drop.id] });
    await run(`mutation($id: ID!) { destroyApplication(id: $id) }`, { id: drop.id });
    const { user: u } = await run(USER_APPS, { id: user.id });
    expect(u.applications.total).toBe(1);
    expect(u.applications.data.map((l: Json) => l.applicationID)).toEqual([keep.id]);
  });

  test('linkUserRoles / unlinkUserRoles; User.roles with filter, orderBy and pages; REST parity both ways', async () => {
    const user = await gqlUser();
    const tag = fresh('lr');
    const roles = [await gqlRole(`${tag}-y`), await gqlRole(`${tag}-x`), await gqlRole(`${tag}-z`)];
    expect((await run(LINK_ROLES, { id: user.id, ids: [roles[0].id, roles[1].id, roles[0].id] })).linkUserRoles).toBe(2);
    expect((await run(LINK_ROLES, { id: user.id, ids: [roles[0].id] })).linkUserRoles).toBe(0);
    // One more over REST.
    const linked = await svc.request('POST', `/user/${user.id}/role/`, { body: [Number(roles[2].id)] });
    expect({ status: linked.status, body: linked.body }).toEqual({ status: 201, body: 1 });

    const page = async (v: Json) => (await run(USER_ROLES, { id: user.id, ...v })).user.roles as Json;
    expect(await page({})).toEqual({ total: 3, page: 1, pageSize: 20, data: roles });
    expect((await page({ o: [{ name: 'DESC' }] })).data).toEqual([roles[2], roles[0], roles[1]]);
    expect((await page({ f: { name: { in: [`${tag}-x`, `${tag}-z`] } } })).data).toEqual([roles[1], roles[2]]);
    expect((await page({ f: { not: { id: { eq: roles[0].id } } } })).data).toEqual([roles[1], roles[2]]);
    expect(await page({ o: [{ name: 'ASC' }], p: 2, s: 2 })).toEqual({ total: 3, page: 2, pageSize: 2, data: [roles[2]] });

    const rest = await svc.request('GET', `/user/${user.id}/role/`);
    expect(rest.headers.get('x-total-count')).toBe('3');
    expect(rest.body).toEqual(roles.map(restNamed));

    expect((await run(UNLINK_ROLES, { id: user.id, ids: [roles[0].id, roles[2].id, ABSENT] })).unlinkUserRoles).toBe(2);
    expect((await run(UNLINK_ROLES, { id: user.id, ids: [roles[0].id] })).unlinkUserRoles).toBe(0);
    expect((await page({})).data).toEqual([roles[1]]);
    const after = await svc.request('GET', `/user/${user.id}/role/`);
    expect(after.headers.get('x-total-count')).toBe('1');
    expect(after.body).toEqual([restNamed(roles[1])]);

    await changesNothing(() => fail(LINK_ROLES, { id: user.id, ids: [roles[0].id, ABSENT] }, 'BAD_USER_INPUT', 'roleIDs'));
    await changesNothing(() => fail(LINK_ROLES, { id: ABSENT, ids: [roles[0].id] }, 'NOT_FOUND'));
    await changesNothing(() => fail(UNLINK_ROLES, { id: ABSENT, ids: [roles[0].id] }, 'NOT_FOUND'));
    // pageSize above 1000 is read as 1000 (SPEC §5).
    expect(await page({ s: 1001 })).toEqual({ total: 1, page: 1, pageSize: 1000, data: [roles[1]] });
  });

  test('User.tokens with filter, orderBy and pages; Token.user; over a page of users', async () => {
    const [u1, u2] = [await gqlUser({ lastName: fresh('tu') }), await gqlUser({ lastName: fresh('tu') })];
    const tag = fresh('ut');
    const t = async (userID: string, suffix: string, scope: string) =>
      (await run(CREATE_TOKEN, { input: { userID, accessToken: `${tag}-${suffix}`, scope } })).createToken as Json;
    const t1 = [await t(u1.id, 'b', 'read'), await t(u1.id, 'a', 'write'), await t(u1.id, 'c', 'read')];
    const t2 = [await t(u2.id, 'd', 'read')];

    const Q = `query($ids: [ID!], $f: TokenFilter, $o: [TokenOrderBy!], $p: Int, $s: Int) {
      users(filter: {id: {in: $ids}}) { data { id tokens(filter: $f, orderBy: $o, page: $p, pageSize: $s) {
        total page pageSize data { id accessToken user { id lastName } } } } }
    }`;
    const fetch = async (v: Json) => (await run(Q, { ids: [u1.id, u2.id], ...v })).users.data as Json[];

    const all = await fetch({});
    expect(all.map((u) => u.tokens.total)).toEqual([3, 1]);
    expect(all[0].tokens.data.map((x: Json) => x.id)).toEqual(t1.map((x) => x.id));
    expect(all[0].tokens.data[0].user).toEqual({ id: u1.id, lastName: u1.lastName });
    expect(all[1].tokens.data).toEqual([{ id: t2[0].id, accessToken: `${tag}-d`, user: { id: u2.id, lastName: u2.lastName } }]);

    const ordered = await fetch({ o: [{ id: 'DESC' }] });
    expect(ordered[0].tokens.data.map((x: Json) => x.accessToken)).toEqual([`${tag}-c`, `${tag}-a`, `${tag}-b`]);
    const filtered = await fetch({ f: { scope: { eq: 'read' } }, o: [{ id: 'ASC' }], p: 2, s: 1 });
    expect(filtered.map((u) => [u.tokens.total, u.tokens.page, u.tokens.pageSize, u.tokens.data.map((x: Json) => x.accessToken)])).toEqual([
      [2, 2, 1, [`${tag}-c`]],
      [1, 2, 1, []],
    ]);
    const byNot = await fetch({ f: { not: { accessToken: { in: [`${tag}-b`, 'other'] } } } });
    expect(byNot[0].tokens.data.map((x: Json) => x.accessToken)).toEqual([`${tag}-a`, `${tag}-c`]);

    const SMALL = `query($id: ID!, $o: [TokenOrderBy!], $s: Int) { user(id: $id) { tokens(orderBy: $o, pageSize: $s) { total pageSize } } }`;
    // pageSize above 1000 is read as 1000, below 1 as 20 (SPEC §5).
    expect((await run(SMALL, { id: u1.id, s: 1001 })).user.tokens).toEqual({ total: 3, pageSize: 1000 });
    expect((await run(SMALL, { id: u1.id, s: 0 })).user.tokens).toEqual({ total: 3, pageSize: 20 });
    await fail(SMALL, { id: u1.id, o: [{ scope: 'ASC', id: 'DESC' }] }, 'BAD_USER_INPUT');
  });

  test('Token.user is null-safe and ApplicationLink.application carries the application record', async () => {
    const user = await gqlUser();
    const app = await gqlApp();
    await run(LINK_APPS, { id: user.id, ids: [app.id] });
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: user.id, accessToken: fresh('tu') } });
    const { token } = await run(`query($id: ID!) { token(id: $id) { id user { id applications { data { application { ${NAMED} } } } } } }`, {
      id: createToken.id,
    });
    expect(token).toEqual({ id: createToken.id, user: { id: user.id, applications: { data: [{ application: app }] } } });
  });
});

// ---------------------------------------------------------------------------------------------

describe('errors never expose SQL or a stack', () => {
  test('malformed ids in every argument position are BAD_USER_INPUT naming the field', async () => {
    const cases: [string, Json, string][] = [
      ['query($id: ID!) { token(id: $id) { id } }', { id: '-1' }, 'id'],
      ['query($id: ID!) { application(id: $id) { id } }', { id: '1.5' }, 'id'],
      ['query($id: ID!) { role(id: $id) { id } }', { id: "1'; drop table users; --" }, 'id'],
      ['mutation($id: ID!) { destroyUser(id: $id) }', { id: 'abc' }, 'id'],
      ['mutation($id: ID!) { destroyToken(id: $id) }', { id: '' }, 'id'],
      ['mutation($id: ID!) { updateUserStatus(id: $id, status: 1) { id } }', { id: 'x' }, 'id'],
      ['mutation($id: ID!) { linkUserRoles(id: $id, roleIDs: []) }', { id: '99999999999999999999' }, 'id'],
    ];
    for (const [query, variables, field] of cases) {
      await changesNothing(() => fail(query, variables, 'BAD_USER_INPUT', field));
    }
    expect((await svc.request('GET', '/user/')).status).toBe(200);
  });

  test('a GraphQL-level mistake (unknown field, wrong variable type) answers without internals', async () => {
    const unknown = await svc.graphql('{ users { data { password } } }');
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expectNoLeak(unknown);
    const wrongType = await svc.graphql(GET_USER, { id: { nested: true } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expectNoLeak(wrongType);
  });
});
