import {
  svc,
  ISO,
  ABSENT,
  USER,
  fresh,
  Json,
  run,
  fail,
  changesNothing,
  restUser,
  restPost,
  CREATE_USER,
  GET_USER,
  CREATE_TOKEN,
  GET_TOKEN,
  gqlUser,
  useService,
} from '../support/graphql-operations.js';
import { recordOf } from '../support/contracts.js';

/** The user queries and mutations over GraphQL: results, errors, lists (filters, orderBy, pages), parity with REST. */
useService();

describe('users', () => {
  test('createUser: the record with defaults; it reads back identically over REST and in the table', async () => {
    const { createUser } = await run(CREATE_USER, { input: { firstName: 'Grace', lastName: 'Hopper' } });
    expect(createUser).toEqual(recordOf('user', { id: expect.stringMatching(/^[1-9]\d*$/), firstName: 'Grace', lastName: 'Hopper' }));
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

  test('a write answers with the columns its selection asks for (and the id); what it writes is every field given', async () => {
    const before = await gqlUser({ outKey: 'narrow', status: 2 });
    svc.queries.length = 0;
    const { patchUser } = await run(`mutation($id: ID!) { patchUser(id: $id, input: { lastName: "Narrow", status: 4 }) { firstName } }`, { id: before.id });
    expect(patchUser).toEqual({ firstName: before.firstName });
    const write = svc.queries.find((text) => text.includes('insert into audit_events'))!;
    // The final select's list, but the flag that the update lost a race (src/resource/writes.ts).
    expect(write.split(') select ').at(-1)!.split(' from ')[0]).toBe('t.id as "id", t.first_name as "firstName", false as "writeRaced"');
    const [row] = await svc.sql<Json>('select last_name, status, out_key from users where id = ?', [before.id]);
    expect(row).toEqual({ last_name: 'Narrow', status: 4, out_key: 'narrow' });
    // Nested fields read from the record's id; a selection of every field answers every column, as REST's does.
    const { patchUser: whole } = await run(`mutation($id: ID!) { patchUser(id: $id, input: { status: 5 }) { ${USER} applications { total } } }`, {
      id: before.id,
    });
    expect(whole).toEqual({ ...before, lastName: 'Narrow', status: 5, updatedAt: expect.stringMatching(ISO), applications: { total: 0 } });
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
