import { uniq } from '../support/names.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * The read path (issue: reads at the speed of raw SQL): keyset connections, the statements a read
 * sends (only the work asked for, independent statements together), and totals kept by the writes.
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

async function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  const res = await svc.graphql(query, variables);
  if (res.status !== 200 || res.body?.errors) throw new Error(`${query} → ${res.status}: ${res.text}`);
  return res.body.data;
}

/** The statements one call sends (the listener sees every one, on both databases). */
async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
  svc.queries.length = 0;
  await work();
  return [...svc.queries];
}

describe('keyset connections', () => {
  const group = uniq('conn');
  let ids: string[]; // in id order
  // outKey: null for every third user, so that a nullable sort key is walked too.
  const outKeyOf = (i: number) => (i % 3 === 0 ? null : `k${i % 4}`);

  beforeAll(async () => {
    const created = await gql(
      `mutation { ${Array.from({ length: 11 }, (_, i) => `u${i}: createUser(input: { firstName: "${group}", lastName: "L${i % 5}", outKey: ${JSON.stringify(outKeyOf(i))} }) { id }`).join(' ')} }`,
    );
    ids = Array.from({ length: 11 }, (_, i) => created[`u${i}`].id);
  });

  const filter = { firstName: { eq: group } };
  const page = (args: string) =>
    gql(
      `query($filter: UserFilter) { usersConnection(filter: $filter, ${args}) { totalCount edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`,
      { filter },
    ).then((d) => d.usersConnection);

  test('first/after walks every record once, in order, with page info and the total', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    for (let i = 0; i < 10; i++) {
      const { usersConnection: c } = await gql(
        `query($filter: UserFilter, $after: String) { usersConnection(filter: $filter, first: 4, after: $after) { totalCount edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`,
        { filter, after },
      );
      expect(c.totalCount).toBe(11);
      seen.push(...c.edges.map((e: any) => e.node.id));
      expect(c.pageInfo.startCursor).toBe(c.edges[0]?.cursor ?? null);
      expect(c.pageInfo.endCursor).toBe(c.edges.at(-1)?.cursor ?? null);
      expect(c.pageInfo.hasPreviousPage).toBe(after !== null);
      if (!c.pageInfo.hasNextPage) break;
      after = c.pageInfo.endCursor;
    }
    expect(seen).toEqual(ids);
  });

  test('last/before walks backwards to the same order', async () => {
    const seen: string[] = [];
    let before: string | null = null;
    for (let i = 0; i < 10; i++) {
      const { usersConnection: c } = await gql(
        `query($filter: UserFilter, $before: String) { usersConnection(filter: $filter, last: 3, before: $before) { edges { node { id } } pageInfo { hasNextPage hasPreviousPage startCursor } } }`,
        { filter, before },
      );
      seen.unshift(...c.edges.map((e: any) => e.node.id));
      expect(c.pageInfo.hasNextPage).toBe(before !== null);
      if (!c.pageInfo.hasPreviousPage) break;
      before = c.pageInfo.startCursor;
    }
    expect(seen).toEqual(ids);
  });

  test.each([
    ['outKey ASC', '[{ outKey: ASC }]', 'outKey asc'],
    ['outKey DESC, lastName ASC', '[{ outKey: DESC }, { lastName: ASC }]', 'outKey desc, lastName asc'],
    ['lastName DESC', '[{ lastName: DESC }]', 'lastName desc'],
  ])('a keyset walk ordered by %s (nulls included) matches the offset page, both ways', async (_, orderBy, restOrder) => {
    const offset = await svc.request(
      'GET',
      `/user/?pageSize=1000&orderBy=${encodeURIComponent(restOrder)}&filter=${encodeURIComponent(JSON.stringify(filter))}`,
    );
    const expected = offset.body.map((u: any) => String(u.id));
    expect(expected).toHaveLength(11);
    expect(offset.headers.get('x-total-count')).toBe('11');
    const forward: string[] = [];
    let after: string | null = null;
    do {
      const { usersConnection: c }: any = await gql(
        `query($filter: UserFilter, $after: String) { usersConnection(filter: $filter, first: 2, after: $after, orderBy: ${orderBy}) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`,
        { filter, after },
      );
      forward.push(...c.edges.map((e: any) => e.node.id));
      after = c.pageInfo.hasNextPage ? c.pageInfo.endCursor : null;
    } while (after);
    expect(forward).toEqual(expected);
    const backward: string[] = [];
    let before: string | null = null;
    do {
      const { usersConnection: c }: any = await gql(
        `query($filter: UserFilter, $before: String) { usersConnection(filter: $filter, last: 2, before: $before, orderBy: ${orderBy}) { edges { node { id } } pageInfo { hasPreviousPage startCursor } } }`,
        { filter, before },
      );
      backward.unshift(...c.edges.map((e: any) => e.node.id));
      before = c.pageInfo.hasPreviousPage ? c.pageInfo.startCursor : null;
    } while (before);
    expect(backward).toEqual(expected);
  });

  // As every resolver error of this service: HTTP 200, the field null, the error BAD_USER_INPUT (the 400 class) naming the argument.
  test('a forged, foreign or malformed cursor is BAD_USER_INPUT naming the argument, never an internal error', async () => {
    const { edges } = await page('first: 1');
    const byLastName = (await page('first: 1, orderBy: [{ lastName: ASC }]')).edges[0].cursor;
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const [args, field] of [
      ['first: 2, after: "garbage!"', 'after'],
      [`first: 2, after: "${b64(['id:asc', 'x'])}"`, 'after'],
      [`first: 2, after: "${b64(['id:asc', 1e300])}"`, 'after'],
      [`first: 2, after: "${b64(['id:asc'])}"`, 'after'],
      [`first: 2, after: "${b64({})}"`, 'after'],
      [`last: 2, before: "${b64(['id:asc', null])}"`, 'before'],
      [`first: 2, after: "${byLastName}"`, 'after'], // made for another order
      [`first: 2, after: "${edges[0].cursor}", orderBy: [{ lastName: ASC }]`, 'after'],
      ['first: 1001', 'first'],
      ['first: -1', 'first'],
      ['first: 1, last: 1', 'last'],
    ]) {
      const res = await svc.graphql(`query($filter: UserFilter) { usersConnection(filter: $filter, ${args}) { edges { node { id } } } }`, { filter });
      expect({ args, status: res.status, code: res.body.errors?.[0]?.extensions?.code, field: res.body.errors?.[0]?.extensions?.field }).toEqual({
        args,
        status: 200,
        code: 'BAD_USER_INPUT',
        field,
      });
      expect(res.body.data).toBeNull();
    }
  });

  test('the cursor of a record deleted since still marks its place', async () => {
    const { usersConnection: c } = await gql(`query($filter: UserFilter) { usersConnection(filter: $filter, first: 3) { edges { cursor node { id } } } }`, {
      filter,
    });
    const extra = await gql(`mutation { createUser(input: { firstName: "${group}-x", lastName: "gone" }) { id } }`);
    const gone = await gql(`query { usersConnection(filter: { id: { eq: ${extra.createUser.id} } }, first: 1) { edges { cursor } } }`);
    await gql(`mutation { destroyUser(id: ${extra.createUser.id}) }`);
    const after = await gql(
      `query { usersConnection(first: 5, after: "${gone.usersConnection.edges[0].cursor}", filter: { id: { gte: ${c.edges[0].node.id} } }) { edges { node { id } } } }`,
    );
    expect(after.usersConnection.edges).toEqual([]); // nothing live after the newest user
  });

  test('nested connections page each parent on its own, with totals only when asked', async () => {
    const { createUser: a } = await gql(`mutation { createUser(input: { firstName: "${group}-n", lastName: "a" }) { id } }`);
    const { createUser: b } = await gql(`mutation { createUser(input: { firstName: "${group}-n", lastName: "b" }) { id } }`);
    for (let k = 0; k < 3; k++) await gql(`mutation { createToken(input: { userID: ${a.id}, accessToken: "${uniq('nc')}" }) { id } }`);
    const query = (after: string | null) =>
      gql(
        `query($after: String) { users(filter: { firstName: { eq: "${group}-n" } }) { data { id tokensConnection(first: 2, after: $after) { totalCount edges { cursor node { userID } } pageInfo { hasNextPage endCursor } } } } }`,
        { after },
      );
    const first = (await query(null)).users.data;
    expect(first.map((u: any) => [u.id, u.tokensConnection.totalCount, u.tokensConnection.edges.length, u.tokensConnection.pageInfo.hasNextPage])).toEqual([
      [a.id, 3, 2, true],
      [b.id, 0, 0, false],
    ]);
    expect(first[0].tokensConnection.edges.every((e: any) => e.node.userID === a.id)).toBe(true);
    const second = (await query(first[0].tokensConnection.pageInfo.endCursor)).users.data;
    expect(second[0].tokensConnection.edges).toHaveLength(1);
    expect(second[0].tokensConnection.pageInfo.hasNextPage).toBe(false);
  });
});

describe('only the work asked for', () => {
  const group = uniq('work');
  beforeAll(async () => {
    const { a, r } = await gql(`mutation { a: createApplication(input: { name: "${group}-a" }) { id } r: createRole(input: { name: "${group}-r" }) { id } }`);
    const users = await gql(`mutation { ${[0, 1, 2].map((i) => `u${i}: createUser(input: { firstName: "${group}", lastName: "${i}" }) { id }`).join(' ')} }`);
    for (const u of Object.values(users) as { id: string }[]) {
      await gql(`mutation { linkUserApplications(id: ${u.id}, applicationIDs: [${a.id}]) linkUserRoles(id: ${u.id}, roleIDs: [${r.id}]) }`);
    }
  });

  const PAGE = (totals: boolean) =>
    `{ users(pageSize: 50) { ${totals ? 'total' : ''} data { id applications { ${totals ? 'total' : ''} data { right application { id name } } } roles { ${totals ? 'total' : ''} data { id name } } } } }`;

  test('a page of users with nested lists: 4 statements without totals, 7 with them (one count each)', async () => {
    const without = await statementsOf(() => gql(PAGE(false)));
    expect(without).toHaveLength(4); // bearer, users, applications, roles
    expect(without.filter((q) => /count\(\*\)|live_counts/.test(q))).toEqual([]);
    const withTotals = await statementsOf(() => gql(PAGE(true)));
    expect(withTotals).toHaveLength(7);
    // The unfiltered total is the kept live count, never a count(*) over users.
    expect(withTotals.filter((q) => /live_counts/.test(q))).toHaveLength(1);
    expect(withTotals.filter((q) => /count\(\*\)/.test(q))).toHaveLength(2); // the two nested totals, grouped by user
    expect(withTotals.some((q) => /count\(\*\)[\s\S]*from users/.test(q))).toBe(false);
  });

  test('a connection counts only when totalCount is selected; a filtered total is counted with the filter', async () => {
    const plain = await statementsOf(() => gql('{ usersConnection(first: 5) { edges { node { id } } } }'));
    expect(plain).toHaveLength(2);
    const counted = await statementsOf(() => gql(`{ usersConnection(first: 5, filter: { firstName: { eq: "${group}" } }) { totalCount } }`));
    expect(counted).toHaveLength(3);
    expect(counted.filter((q) => /count\(\*\)/.test(q))).toHaveLength(1);
  });

  /** The select list of the statement that reads `from` (`users t`, `user_roles l`). */
  const selectOf = (statements: string[], from: string) => {
    const statement = statements.find((q) => q.includes(` from ${from} `));
    if (!statement) throw new Error(`no statement reads ${from} in ${statements.join('\n')}`);
    return statement.slice(0, statement.indexOf(` from ${from} `));
  };

  test('GraphQL reads only the columns a query selects, through aliases, fragments and inline fragments', async () => {
    const [id] = (await svc.sql<{ id: string }>(`select id from users where first_name = $1 order by id limit 1`, [group])).map((r) => Number(r.id));
    const statements = await statementsOf(async () => {
      const data = await gql(`query { user(id: ${id}) { who: lastName ...Names ... on User { status } } } fragment Names on User { firstName }`);
      expect(data.user).toEqual({ who: '0', firstName: group, status: 0 });
    });
    const read = selectOf(statements, 'users t');
    expect(read).toContain('t.last_name');
    expect(read).toContain('t.first_name');
    expect(read).toContain('t.status');
    expect(read).not.toMatch(/avatar_url|photo_url|out_key|created_at|updated_at/);
  });

  test('a page reads its records’ selected columns, and its nested links theirs', async () => {
    const statements = await statementsOf(async () => {
      const data = await gql(
        `{ users(pageSize: 3, filter: { firstName: { eq: "${group}" } }) { data { id lastName applications { data { right application { name } } } roles { data { name } } } } }`,
      );
      expect(data.users.data.map((u: any) => u.lastName)).toEqual(['0', '1', '2']);
      for (const user of data.users.data) {
        expect(user.applications.data).toEqual([{ right: 0, application: { name: `${group}-a` } }]);
        expect(user.roles.data).toEqual([{ name: `${group}-r` }]);
      }
    });
    expect(selectOf(statements, 'users t')).toBe('select t.id as "id", t.last_name as "lastName"');
    const links = selectOf(statements, 'user_applications l');
    expect(links).toContain('l."right"');
    expect(links).not.toMatch(/t\.created_at|l\.created_at/);
    expect(selectOf(statements, 'user_roles l')).not.toMatch(/created_at/);
  });

  test('REST: a list is a page and its total sent together, a get is one statement after the bearer', async () => {
    const list = await statementsOf(() => svc.request('GET', '/user/?pageSize=5'));
    expect(list).toHaveLength(3);
    expect(list.filter((q) => /live_counts/.test(q))).toHaveLength(1);
    const one = await statementsOf(() => svc.request('GET', '/user/1'));
    expect(one).toHaveLength(2);
  });
});

describe('totals kept by the writes', () => {
  const liveCount = async (table: string) => Number((await svc.sql<{ n: string }>(`select count(*) as n from ${table} where deleted_at is null`))[0].n);
  const restTotal = async (path: string) => Number((await svc.request('GET', `${path}?pageSize=1`)).headers.get('x-total-count'));

  test('every kind of write keeps the unfiltered totals exact', async () => {
    const check = async () => {
      for (const [table, path] of [
        ['users', '/user/'],
        ['tokens', '/token/'],
        ['applications', '/application/'],
        ['roles', '/role/'],
      ]) {
        expect({ table, total: await restTotal(path) }).toEqual({ table, total: await liveCount(table) });
      }
    };
    await check();
    const user = (await svc.request('POST', '/user/', { body: { firstName: 'Count', lastName: 'Me' } })).body as number;
    for (let k = 0; k < 3; k++) expect((await svc.request('POST', '/token/', { body: { userID: user, accessToken: uniq('cnt') } })).status).toBe(201);
    const app = (await svc.request('POST', '/application/', { body: { name: uniq('cnt') } })).body as number;
    await check();
    const reserved = (await svc.request('POST', '/apply/user/id/')).body as number;
    expect((await svc.request('PUT', `/user/${reserved}`, { body: { firstName: 'Re', lastName: 'Served' } })).status).toBe(201);
    await check();
    // A create that claims a reserved id (apply, then POST with the id) is counted like any create.
    const claimed = (await svc.request('POST', '/apply/user/id/')).body as number;
    const created = await svc.request('POST', '/user/', { body: { id: claimed, firstName: 'Claimed', lastName: 'Id' } });
    expect({ status: created.status, body: created.body }).toEqual({ status: 201, body: claimed });
    await check();
    // Deleting a user takes its tokens with it (one statement for many rows).
    for (const path of [`/user/${user}`, `/application/${app}`]) {
      const res = await svc.request('DELETE', path);
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 200, body: 1 });
    }
    await check();
    // A GraphQL mutation that fails as a whole rolls the counts back with the rows.
    const before = await restTotal('/user/');
    const failed = await svc.graphql(`mutation { a: createUser(input: { firstName: "x", lastName: "y" }) { id } b: destroyUser(id: 999999999) }`);
    expect(failed.body.data).toBeNull();
    expect(await restTotal('/user/')).toBe(before);
    await check();
  });
});
