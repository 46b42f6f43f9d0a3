import type { Permission } from '../../src/auth/caller.js';
import { svc, uniq, gql, tokenFor, snapshot, Fixture, makeFixture, PERMISSIONS, RESOURCES, useService } from '../support/graphql-platform.js';

/** The permission of every query and mutation, and of nested fields. */
useService();

interface Operation {
  /** The root field the operation calls. */
  field: string;
  query: string;
  variables: (f: Fixture) => Record<string, unknown>;
  /** null: any valid token (viewer). */
  permission: Permission | null;
  /** What the field answers on a fresh fixture with the permission. */
  expected: (f: Fixture) => unknown;
}

const page = { total: expect.any(Number), data: expect.any(Array) };
const connection = { totalCount: expect.any(Number), edges: expect.any(Array) };

const OPERATIONS: Operation[] = [
  // queries
  { field: 'users', query: '{ users { total data { id } } }', variables: () => ({}), permission: 'user:read', expected: () => page },
  { field: 'auditEvents', query: '{ auditEvents { total data { id } } }', variables: () => ({}), permission: 'audit:read', expected: () => page },
  {
    field: 'usersConnection',
    query: '{ usersConnection(first: 2) { totalCount edges { cursor } } }',
    variables: () => ({}),
    permission: 'user:read',
    expected: () => connection,
  },
  {
    field: 'user',
    query: 'query($id: ID!) { user(id: $id) { id } }',
    variables: (f) => ({ id: f.user }),
    permission: 'user:read',
    expected: (f) => ({ id: String(f.user) }),
  },
  { field: 'tokens', query: '{ tokens { total data { id } } }', variables: () => ({}), permission: 'token:read', expected: () => page },
  {
    field: 'tokensConnection',
    query: '{ tokensConnection(first: 2) { totalCount edges { cursor } } }',
    variables: () => ({}),
    permission: 'token:read',
    expected: () => connection,
  },
  {
    field: 'token',
    query: 'query($id: ID!) { token(id: $id) { id scope } }',
    variables: (f) => ({ id: f.token }),
    permission: 'token:read',
    expected: (f) => ({ id: String(f.token), scope: 'openid profile' }),
  },
  { field: 'applications', query: '{ applications { total data { id } } }', variables: () => ({}), permission: 'application:read', expected: () => page },
  {
    field: 'applicationsConnection',
    query: '{ applicationsConnection(first: 2) { totalCount edges { cursor } } }',
    variables: () => ({}),
    permission: 'application:read',
    expected: () => connection,
  },
  {
    field: 'application',
    query: 'query($id: ID!) { application(id: $id) { id } }',
    variables: (f) => ({ id: f.application }),
    permission: 'application:read',
    expected: (f) => ({ id: String(f.application) }),
  },
  { field: 'roles', query: '{ roles { total data { id } } }', variables: () => ({}), permission: 'role:read', expected: () => page },
  {
    field: 'rolesConnection',
    query: '{ rolesConnection(first: 2) { totalCount edges { cursor } } }',
    variables: () => ({}),
    permission: 'role:read',
    expected: () => connection,
  },
  {
    field: 'role',
    query: 'query($id: ID!) { role(id: $id) { id } }',
    variables: (f) => ({ id: f.role }),
    permission: 'role:read',
    expected: (f) => ({ id: String(f.role) }),
  },
  {
    field: 'userApplication',
    query: 'query($u: ID!, $a: ID!) { userApplication(userID: $u, applicationID: $a) { userID applicationID right } }',
    variables: (f) => ({ u: f.user, a: f.application }),
    permission: 'user:read',
    expected: (f) => ({ userID: String(f.user), applicationID: String(f.application), right: 0 }),
  },
  { field: 'viewer', query: '{ viewer { id } }', variables: () => ({}), permission: null, expected: () => ({ id: expect.any(String) }) },
  // user mutations
  {
    field: 'createUser',
    query: 'mutation { createUser(input: { firstName: "G", lastName: "Created" }) { lastName } }',
    variables: () => ({}),
    permission: 'user:write',
    expected: () => ({ lastName: 'Created' }),
  },
  {
    field: 'updateUser',
    query: 'mutation($id: ID!) { updateUser(id: $id, input: { firstName: "U", lastName: "Updated" }) { id lastName } }',
    variables: (f) => ({ id: f.user }),
    permission: 'user:write',
    expected: (f) => ({ id: String(f.user), lastName: 'Updated' }),
  },
  {
    field: 'patchUser',
    query: 'mutation($id: ID!) { patchUser(id: $id, input: { lastName: "Patched" }) { id lastName } }',
    variables: (f) => ({ id: f.user }),
    permission: 'user:write',
    expected: (f) => ({ id: String(f.user), lastName: 'Patched' }),
  },
  {
    field: 'updateUserStatus',
    query: 'mutation($id: ID!) { updateUserStatus(id: $id, status: 3) { id status } }',
    variables: (f) => ({ id: f.user }),
    permission: 'user:write',
    expected: (f) => ({ id: String(f.user), status: 3 }),
  },
  {
    field: 'destroyUser',
    query: 'mutation($id: ID!) { destroyUser(id: $id) }',
    variables: (f) => ({ id: f.user }),
    permission: 'user:write',
    expected: () => true,
  },
  {
    field: 'restoreUser',
    query: 'mutation($id: ID!) { restoreUser(id: $id) { id deletedAt } }',
    variables: (f) => ({ id: f.deleted.user }),
    permission: 'user:write',
    expected: (f) => ({ id: String(f.deleted.user), deletedAt: null }),
  },
  { field: 'applyUserID', query: 'mutation { applyUserID }', variables: () => ({}), permission: 'user:write', expected: () => expect.stringMatching(/^\d+$/) },
  {
    field: 'linkUserApplications',
    query: 'mutation($id: ID!, $a: [ID!]!) { linkUserApplications(id: $id, applicationIDs: $a) }',
    variables: (f) => ({ id: f.bareUser, a: [f.application] }),
    permission: 'user:write',
    expected: () => 1,
  },
  {
    field: 'unlinkUserApplications',
    query: 'mutation($id: ID!, $a: [ID!]!) { unlinkUserApplications(id: $id, applicationIDs: $a) }',
    variables: (f) => ({ id: f.user, a: [f.application] }),
    permission: 'user:write',
    expected: () => 1,
  },
  {
    field: 'updateUserApplication',
    query: 'mutation($id: ID!, $a: ID!) { updateUserApplication(id: $id, applicationID: $a, right: 5) { right } }',
    variables: (f) => ({ id: f.user, a: f.application }),
    permission: 'user:write',
    expected: () => ({ right: 5 }),
  },
  {
    field: 'linkUserRoles',
    query: 'mutation($id: ID!, $r: [ID!]!) { linkUserRoles(id: $id, roleIDs: $r) }',
    variables: (f) => ({ id: f.bareUser, r: [f.role] }),
    permission: 'user:write',
    expected: () => 1,
  },
  {
    field: 'unlinkUserRoles',
    query: 'mutation($id: ID!, $r: [ID!]!) { unlinkUserRoles(id: $id, roleIDs: $r) }',
    variables: (f) => ({ id: f.user, r: [f.role] }),
    permission: 'user:write',
    expected: () => 1,
  },
  // token mutations
  {
    field: 'createToken',
    query: 'mutation($u: ID!, $t: String!) { createToken(input: { userID: $u, accessToken: $t }) { userID } }',
    variables: (f) => ({ u: f.user, t: uniq('created') }),
    permission: 'token:write',
    expected: (f) => ({ userID: String(f.user) }),
  },
  {
    field: 'updateToken',
    query: 'mutation($id: ID!, $u: ID!, $t: String!) { updateToken(id: $id, input: { userID: $u, accessToken: $t }) { id userID } }',
    variables: (f) => ({ id: f.token, u: f.user, t: uniq('updated') }),
    permission: 'token:write',
    expected: (f) => ({ id: String(f.token), userID: String(f.user) }),
  },
  {
    field: 'patchToken',
    query: 'mutation($id: ID!) { patchToken(id: $id, input: { tokenType: "bearer" }) { id tokenType } }',
    variables: (f) => ({ id: f.token }),
    permission: 'token:write',
    expected: (f) => ({ id: String(f.token), tokenType: 'bearer' }),
  },
  {
    field: 'destroyToken',
    query: 'mutation($id: ID!) { destroyToken(id: $id) }',
    variables: (f) => ({ id: f.token }),
    permission: 'token:write',
    expected: () => true,
  },
  {
    field: 'destroyTokens',
    query: 'mutation($id: ID!) { destroyTokens(filter: { id: { eq: $id } }) { revoked skipped } }',
    variables: (f) => ({ id: f.token }),
    permission: 'token:write',
    expected: () => ({ revoked: 1, skipped: 0 }),
  },
  {
    field: 'restoreToken',
    query: 'mutation($id: ID!) { restoreToken(id: $id) { id version } }',
    variables: (f) => ({ id: f.deleted.token }),
    permission: 'token:write',
    expected: (f) => ({ id: String(f.deleted.token), version: '2' }),
  },
  {
    field: 'applyTokenID',
    query: 'mutation { applyTokenID }',
    variables: () => ({}),
    permission: 'token:write',
    expected: () => expect.stringMatching(/^\d+$/),
  },
  // applications and roles
  ...(['Application', 'Role'] as const).flatMap((type): Operation[] => {
    const permission = `${type.toLowerCase()}:write` as Permission;
    const key = type === 'Application' ? 'application' : 'role';
    return [
      {
        field: `create${type}`,
        query: `mutation($n: String!) { create${type}(input: { name: $n }) { name } }`,
        variables: () => ({ n: `created-${key}` }),
        permission,
        expected: () => ({ name: `created-${key}` }),
      },
      {
        field: `update${type}`,
        query: `mutation($id: ID!, $n: String!) { update${type}(id: $id, input: { name: $n }) { id name } }`,
        variables: (f) => ({ id: f[key], n: `updated-${key}-${f[key]}` }),
        permission,
        expected: (f) => ({ id: String(f[key]), name: `updated-${key}-${f[key]}` }),
      },
      {
        field: `patch${type}`,
        query: `mutation($id: ID!, $n: String!) { patch${type}(id: $id, input: { name: $n }) { id name } }`,
        variables: (f) => ({ id: f[key], n: `patched-${key}-${f[key]}` }),
        permission,
        expected: (f) => ({ id: String(f[key]), name: `patched-${key}-${f[key]}` }),
      },
      {
        field: `destroy${type}`,
        query: `mutation($id: ID!) { destroy${type}(id: $id) }`,
        variables: (f) => ({ id: f[key] }),
        permission,
        expected: () => true,
      },
      {
        field: `restore${type}`,
        query: `mutation($id: ID!) { restore${type}(id: $id) { id } }`,
        variables: (f) => ({ id: f.deleted[key] }),
        permission,
        expected: (f) => ({ id: String(f.deleted[key]) }),
      },
    ];
  }),
  // webhooks
  { field: 'webhooks', query: '{ webhooks { total data { id } } }', variables: () => ({}), permission: 'webhook:read', expected: () => page },
  {
    field: 'webhooksConnection',
    query: '{ webhooksConnection(first: 2) { totalCount edges { cursor } } }',
    variables: () => ({}),
    permission: 'webhook:read',
    expected: () => connection,
  },
  {
    field: 'webhook',
    query: 'query($id: ID!) { webhook(id: $id) { id active secret } }',
    variables: (f) => ({ id: f.webhook }),
    permission: 'webhook:read',
    expected: (f) => ({ id: String(f.webhook), active: false, secret: null }),
  },
  {
    field: 'createWebhook',
    query: 'mutation { createWebhook(input: { url: "https://created.example.invalid/", events: ["user.*"], active: false }) { events secret } }',
    variables: () => ({}),
    permission: 'webhook:write',
    expected: () => ({ events: ['user.*'], secret: expect.stringMatching(/^whsec_/) }),
  },
  {
    field: 'updateWebhook',
    query: 'mutation($id: ID!) { updateWebhook(id: $id, input: { url: "https://updated.example.invalid/", active: false }) { id url } }',
    variables: (f) => ({ id: f.webhook }),
    permission: 'webhook:write',
    expected: (f) => ({ id: String(f.webhook), url: 'https://updated.example.invalid/' }),
  },
  {
    field: 'patchWebhook',
    query: 'mutation($id: ID!) { patchWebhook(id: $id, input: { description: "patched" }) { id description } }',
    variables: (f) => ({ id: f.webhook }),
    permission: 'webhook:write',
    expected: (f) => ({ id: String(f.webhook), description: 'patched' }),
  },
  {
    field: 'destroyWebhook',
    query: 'mutation($id: ID!) { destroyWebhook(id: $id) }',
    variables: (f) => ({ id: f.webhook }),
    permission: 'webhook:write',
    expected: () => true,
  },
  {
    field: 'restoreWebhook',
    query: 'mutation($id: ID!) { restoreWebhook(id: $id) { id deletedAt } }',
    variables: (f) => ({ id: f.deleted.webhook }),
    permission: 'webhook:write',
    expected: (f) => ({ id: String(f.deleted.webhook), deletedAt: null }),
  },
  {
    field: 'rotateWebhookSecret',
    query: 'mutation($id: ID!) { rotateWebhookSecret(id: $id) { id secret } }',
    variables: (f) => ({ id: f.webhook }),
    permission: 'webhook:write',
    expected: (f) => ({ id: String(f.webhook), secret: expect.stringMatching(/^whsec_/) }),
  },
  {
    field: 'replayWebhook',
    query: 'mutation($id: ID!) { replayWebhook(id: $id, after: "1") { id } }',
    variables: (f) => ({ id: f.webhook }),
    permission: 'webhook:write',
    expected: (f) => ({ id: String(f.webhook) }),
  },
];

/** Every other permission and every other resource's wildcard: all but the one needed. */
const allBut = (needed: Permission) =>
  [...PERMISSIONS.filter((p) => p !== needed), ...RESOURCES.filter((r) => !needed.startsWith(`${r}:`)).map((r) => `${r}:*`)].join(' ');

describe('permissions', () => {
  let fixture: Fixture;
  beforeAll(async () => {
    fixture = await makeFixture();
  });

  test('the operation table covers every Query and Mutation field once', async () => {
    const data = await gql('{ q: __type(name: "Query") { fields { name } } m: __type(name: "Mutation") { fields { name } } }');
    const fields = [...data.q.fields, ...data.m.fields].map((f: { name: string }) => f.name).sort();
    expect(OPERATIONS.map((o) => o.field).sort()).toEqual(fields);
  });

  const guarded = OPERATIONS.filter((o) => o.permission !== null);

  test.each(guarded.map((o) => [o.field, o.permission, o] as const))(
    '%s without %s: FORBIDDEN, its field null, nothing is written',
    async (field, needed, op) => {
      const scopes = [allBut(needed!), '', needed!.endsWith(':read') ? needed!.replace(':read', ':write') : needed!.replace(':write', ':read')];
      const tokens = await Promise.all(scopes.map(tokenFor));
      const before = await snapshot();
      for (const [i, token] of tokens.entries()) {
        const res = await svc.graphql(op.query, op.variables(fixture), { token });
        const label = `scope ${JSON.stringify(scopes[i])}`;
        expect({
          label,
          status: res.status,
          errors: res.body?.errors?.length,
          code: res.body?.errors?.[0]?.extensions?.code,
          path: res.body?.errors?.[0]?.path,
          field: res.body?.data?.[field] ?? null,
        }).toEqual({ label, status: 200, errors: 1, code: 'FORBIDDEN', path: [field], field: null });
        expect(res.body.errors[0].message).toContain(needed);
      }
      expect(await snapshot()).toEqual(before);
    },
  );

  test.each(OPERATIONS.map((o) => [o.field, o.permission ?? 'no permission', o] as const))('%s with exactly %s succeeds', async (field, scope, op) => {
    const f = await makeFixture();
    const token = await tokenFor(op.permission ?? '');
    const res = await svc.graphql(op.query, op.variables(f), { token });
    expect({ status: res.status, errors: res.body?.errors }).toEqual({ status: 200, errors: undefined });
    expect(res.body.data[field]).toEqual(op.expected(f));
  });

  test('writes with exactly the permission reach the database', async () => {
    const f = await makeFixture();
    await svc.graphql(
      'mutation($id: ID!) { patchUser(id: $id, input: { lastName: "Stored" }) { id } }',
      { id: f.user },
      { token: await tokenFor('user:write') },
    );
    const [row] = await svc.sql<{ last_name: string }>('select last_name from users where id = ?', [f.user]);
    expect(row.last_name).toBe('Stored');
    await svc.graphql('mutation($id: ID!) { destroyRole(id: $id) }', { id: f.role }, { token: await tokenFor('role:write') });
    const [role] = await svc.sql<{ deleted: boolean }>('select deleted_at is not null as deleted from roles where id = ?', [f.role]);
    expect(role.deleted).toBe(true);
  });

  test('a nested field checks its own permission: users with a user:read token, tokens FORBIDDEN', async () => {
    const res = await svc.graphql(
      'query($id: ID!) { users(filter: { id: { eq: $id } }) { total data { id lastName tokens { total } } } }',
      { id: fixture.user },
      { token: await tokenFor('user:read') },
    );
    expect(res.status).toBe(200);
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect(res.body.errors[0].message).toContain('token:read');
    expect(res.body.errors[0].path).toEqual(['users', 'data', 0, 'tokens']);
    expect(res.body.data?.users?.total).toBe(1);
    expect(res.body.data?.users?.data?.[0]).toMatchObject({ id: String(fixture.user), tokens: null });
  });

  test('the same query with user:read token:read answers the nested tokens', async () => {
    const res = await svc.graphql(
      'query($id: ID!) { users(filter: { id: { eq: $id } }) { data { id tokens { total } } } }',
      { id: fixture.user },
      { token: await tokenFor('user:read token:read') },
    );
    expect(res.body).toEqual({ data: { users: { data: [{ id: String(fixture.user), tokens: { total: 0 } }] } } });
  });

  test('Token.user needs user:read: tokens come back, user is null with FORBIDDEN', async () => {
    const res = await svc.graphql('query($id: ID!) { token(id: $id) { id user { id } } }', { id: fixture.token }, { token: await tokenFor('token:read') });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ token: { id: String(fixture.token), user: null } });
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0]).toMatchObject({ path: ['token', 'user'], extensions: { code: 'FORBIDDEN' } });
  });

  test('User.applications and User.roles need user:read only (application:read and role:read are not asked)', async () => {
    const res = await svc.graphql(
      'query($id: ID!) { user(id: $id) { applications { data { right application { id } } } roles { data { id } } } }',
      { id: fixture.user },
      { token: await tokenFor('user:read') },
    );
    expect(res.body).toEqual({
      data: {
        user: {
          applications: { data: [{ right: 0, application: { id: String(fixture.application) } }] },
          roles: { data: [{ id: String(fixture.role) }] },
        },
      },
    });
  });
});

// ---------------------------------------------------------------------------------------------
// 3. Batching: the statement count of a page of users with nested lists does not grow with it
// ---------------------------------------------------------------------------------------------
