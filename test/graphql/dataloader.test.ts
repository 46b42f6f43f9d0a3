import { svc, uniq, gql, useService } from '../support/graphql-platform.js';

/** Nested fields are loaded in batches (DataLoader): the statements a query sends. */
useService();

describe('DataLoader batching', () => {
  const USERS = 50;
  let seeded: number[];

  beforeAll(async () => {
    const apps = await gql(
      `mutation { a: createApplication(input: { name: "${uniq('batch-a')}" }) { id } b: createApplication(input: { name: "${uniq('batch-b')}" }) { id } }`,
    );
    const roles = await gql(
      `mutation { a: createRole(input: { name: "${uniq('batch-a')}" }) { id } b: createRole(input: { name: "${uniq('batch-b')}" }) { id } }`,
    );
    const created = await gql(
      `mutation { ${Array.from({ length: USERS }, (_, i) => `u${i}: createUser(input: { firstName: "Batch", lastName: "User ${i}" }) { id }`).join(' ')} }`,
    );
    seeded = Array.from({ length: USERS }, (_, i) => Number(created[`u${i}`].id));
    const appIDs = [apps.a.id, apps.b.id];
    const roleIDs = [roles.a.id, roles.b.id];
    const links = await gql(
      `mutation($apps: [ID!]!, $roles: [ID!]!) { ${seeded
        .map((id, i) => `a${i}: linkUserApplications(id: ${id}, applicationIDs: $apps) r${i}: linkUserRoles(id: ${id}, roleIDs: $roles)`)
        .join(' ')} }`,
      { apps: appIDs, roles: roleIDs },
    );
    expect(Object.values(links)).toEqual(Array(2 * USERS).fill(2));
    const tokens = await gql(
      `mutation { ${seeded
        .flatMap((id, i) => [0, 1].map((k) => `t${i}_${k}: createToken(input: { userID: ${id}, accessToken: "${uniq(`batch-${i}-${k}`)}" }) { id }`))
        .join(' ')} }`,
    );
    expect(Object.keys(tokens)).toHaveLength(2 * USERS);
  });

  // The newest users first, so that every user on the page is one of the seeded ones.
  const query = (n: number) =>
    `{ users(pageSize: ${n}, orderBy: [{ id: DESC }]) { data { id applications { data { right application { name } } } roles { data { name } } tokens { data { id user { id } } } } } }`;

  async function statementsFor(n: number): Promise<{ count: number; body: any }> {
    svc.queries.length = 0;
    const res = await svc.graphql(query(n));
    const count = svc.queries.length;
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    return { count, body: res.body };
  }

  test('pageSize 1 and pageSize 50 send the same, small number of statements (measured: 10 and 10)', async () => {
    const one = await statementsFor(1);
    const fifty = await statementsFor(USERS);

    // The answers are complete: every seeded user with its 2 applications, 2 roles, 2 tokens.
    const users = fifty.body.data.users.data;
    expect(users.map((u: { id: string }) => Number(u.id)).sort((a: number, b: number) => a - b)).toEqual(seeded);
    for (const user of users) {
      expect(user.applications.data).toHaveLength(2);
      expect(user.applications.data.every((l: any) => l.right === 0 && typeof l.application.name === 'string')).toBe(true);
      expect(user.roles.data).toHaveLength(2);
      expect(user.tokens.data).toHaveLength(2);
      expect(user.tokens.data.map((t: any) => t.user.id)).toEqual([user.id, user.id]);
    }
    expect(one.body.data.users.data).toEqual([users[0]]);

    expect({ pageSize1: one.count, pageSize50: fifty.count }).toEqual({ pageSize1: fifty.count, pageSize50: one.count });
    expect(fifty.count).toBeLessThanOrEqual(10);
  });

  test('each parent gets its own page, cut in SQL: users with 0, 1, 3 and 5 tokens, pageSize 2, pages 1 to 3', async () => {
    const counts = [0, 1, 3, 5];
    const users: { id: string; tokens: string[] }[] = [];
    for (const n of counts) {
      const { createUser } = await gql(`mutation { createUser(input: { firstName: "Paged", lastName: "${uniq('p')}" }) { id } }`);
      const tokens: string[] = [];
      for (let k = 0; k < n; k++) {
        const { createToken } = await gql(`mutation { createToken(input: { userID: ${createUser.id}, accessToken: "${uniq('pg')}" }) { id } }`);
        tokens.push(createToken.id);
      }
      users.push({ id: createUser.id, tokens: tokens.reverse() }); // newest first, as ordered below
    }
    const ids = users.map((u) => u.id);
    for (const page of [1, 2, 3]) {
      svc.queries.length = 0;
      const { users: got } = await gql(
        `query($ids: [ID!]) { users(filter: { id: { in: $ids } }) { data { id tokens(pageSize: 2, page: ${page}, orderBy: [{ id: DESC }]) { total page pageSize data { id } } } } }`,
        { ids },
      );
      expect(got.data.map((u: any) => ({ id: u.id, tokens: u.tokens }))).toEqual(
        users.map((u) => ({
          id: u.id,
          tokens: { total: u.tokens.length, page, pageSize: 2, data: u.tokens.slice((page - 1) * 2, page * 2).map((id) => ({ id })) },
        })),
      );
      // Only the requested pages leave the database: the rows statement numbers each user's rows.
      const rowsStatement = svc.queries.find((q) => /from tokens t/.test(q) && /row_number\(\) over \(partition by/.test(q));
      expect(rowsStatement).toMatch(/p\.rn > (\?|\$\d+|\d+) and p\.rn <= (\?|\$\d+|\d+)/);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// 4. Abuse limits and HTTP rules
// ---------------------------------------------------------------------------------------------
