import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { buildClientSchema, buildSchema, getIntrospectionQuery, printSchema, type IntrospectionQuery } from 'graphql';
import type { Permission } from '../../src/auth/caller.js';
import { schemaText } from '../../src/graphql/schema.js';
import { startTestService, type Reply, type TestService } from '../support/service.js';

/**
 * The GraphQL endpoint as a platform (SPEC §2, §7): authentication, the permission of every
 * operation and nested field, DataLoader batching, abuse limits, CSRF prevention, Sandbox and
 * introspection switches, and schema.graphql being the schema the code emits and serves.
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const uniq = (prefix: string) => `${prefix}-${randomBytes(6).toString('hex')}`;

const PERMISSIONS: Permission[] = ['user:read', 'user:write', 'token:read', 'token:write', 'application:read', 'application:write', 'role:read', 'role:write'];
const RESOURCES = ['user', 'token', 'application', 'role'] as const;

/** A GraphQL call that must succeed (no errors), as the admin. */
async function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  const res = await svc.graphql(query, variables);
  if (res.status !== 200 || res.body?.errors) throw new Error(`${query} → ${res.status}: ${res.text}`);
  return res.body.data;
}

async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const res = await svc.request(method, path, body === undefined ? {} : { body });
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${res.text}`);
  return res.body;
}

const tokenCache = new Map<string, Promise<string>>();
/** A live token with exactly this scope string (one per distinct scope). */
function tokenFor(scope: string): Promise<string> {
  let token = tokenCache.get(scope);
  if (!token) {
    token = svc.tokenWith(scope);
    tokenCache.set(scope, token);
  }
  return token;
}

const snapshot = () => svc.snapshot();

async function get(path: string, headers: Record<string, string> = {}, base = svc): Promise<Reply> {
  const response = await fetch(`${base.url}${path}`, { headers });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: response.status, headers: response.headers, body, text };
}

// ---------------------------------------------------------------------------------------------
// 1. Authentication
// ---------------------------------------------------------------------------------------------

describe('authentication', () => {
  const INVALID_TOKEN = 'Bearer error="invalid_token"';
  let credentials: { label: string; header: string | null; wwwAuthenticate: string }[];

  beforeAll(async () => {
    const expired = await svc.tokenWith('*', { expireAt: new Date(Date.now() - 60_000).toISOString() });
    const ownerDeleted = await svc.tokenWith('*');
    expect((await svc.graphql('{ viewer { id } }', undefined, { token: ownerDeleted })).status).toBe(200);
    const [row] = await svc.sql<{ user_id: string }>('select user_id from tokens where access_token_hmac = ?', [svc.hmac(ownerDeleted)]);
    expect((await svc.graphql('mutation($id: ID!) { destroyUser(id: $id) }', { id: row.user_id })).body.data).toEqual({ destroyUser: true });
    const revoked = await svc.tokenWith('*');
    const [revokedRow] = await svc.sql<{ id: string }>('select id from tokens where access_token_hmac = ?', [svc.hmac(revoked)]);
    await gql('mutation($id: ID!) { destroyToken(id: $id) }', { id: revokedRow.id });
    credentials = [
      { label: 'no Authorization header', header: null, wwwAuthenticate: 'Bearer' },
      { label: 'Basic scheme', header: 'Basic abc', wwwAuthenticate: INVALID_TOKEN },
      { label: 'Bearer without a value', header: 'Bearer', wwwAuthenticate: INVALID_TOKEN },
      { label: 'Bearer with two values', header: `Bearer ${svc.adminToken} extra`, wwwAuthenticate: INVALID_TOKEN },
      { label: 'unknown token', header: `Bearer ${uniq('unknown')}`, wwwAuthenticate: INVALID_TOKEN },
      { label: 'expired token', header: `Bearer ${expired}`, wwwAuthenticate: INVALID_TOKEN },
      { label: 'token of a deleted user', header: `Bearer ${ownerDeleted}`, wwwAuthenticate: INVALID_TOKEN },
      { label: 'deleted token', header: `Bearer ${revoked}`, wwwAuthenticate: INVALID_TOKEN },
    ];
  });

  const send = (query: string, header: string | null, variables?: Record<string, unknown>) =>
    svc.graphql(query, variables, { token: null, headers: header === null ? {} : { Authorization: header } });

  test.each([
    ['a query', '{ users { total } }'],
    ['a query mixing __typename with a field', '{ __typename viewer { id } }'],
    ['a mutation', 'mutation { createApplication(input: { name: "never-written" }) { id } }'],
    ['a named query with an alias', 'query Q { me: viewer { id } }'],
  ])('%s with a bad credential: 401, UNAUTHENTICATED, WWW-Authenticate; nothing is written', async (_kind, query) => {
    const before = await snapshot();
    for (const credential of credentials) {
      const res = await send(query, credential.header);
      expect({
        label: credential.label,
        status: res.status,
        wwwAuthenticate: res.headers.get('www-authenticate'),
        code: res.body?.errors?.[0]?.extensions?.code,
        data: res.body?.data ?? null,
      }).toEqual({ label: credential.label, status: 401, wwwAuthenticate: credential.wwwAuthenticate, code: 'UNAUTHENTICATED', data: null });
      expect(res.text).not.toContain(svc.adminToken);
    }
    expect(await snapshot()).toEqual(before);
  });

  test('introspection needs no token outside production', async () => {
    const schema = await send('{ __schema { types { name } } }', null);
    expect(schema.status).toBe(200);
    expect(schema.body.errors).toBeUndefined();
    const names = schema.body.data.__schema.types.map((t: { name: string }) => t.name);
    expect(names).toEqual(expect.arrayContaining(['Query', 'Mutation', 'User', 'Token', 'Application', 'Role', 'ApplicationLink']));

    // A credential that is there but wrong is a 401 all the same (the README's table).
    for (const header of [`Bearer ${uniq('unknown')}`, 'Basic abc']) {
      const wrong = await send('{ __schema { types { name } } }', header);
      expect(wrong.status).toBe(401);
      expect(wrong.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }

    const typename = await send('{ __typename }', null);
    expect(typename.status).toBe(200);
    expect(typename.body).toEqual({ data: { __typename: 'Query' } });

    const type = await send('{ __type(name: "User") { fields { name } } }', null);
    expect(type.status).toBe(200);
    expect(type.body.data.__type.fields.map((f: { name: string }) => f.name)).toEqual(expect.arrayContaining(['id', 'tokens']));
  });

  test('a valid token works; the scheme name is case-insensitive', async () => {
    const token = await tokenFor('');
    for (const header of [`Bearer ${token}`, `bearer ${token}`]) {
      const res = await send('{ viewer { scope } }', header);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { viewer: { scope: '' } } });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// 2. The permission of every query and mutation, and of nested fields
// ---------------------------------------------------------------------------------------------

interface Fixture {
  user: number;
  /** A user with no links, for link mutations that must create something. */
  bareUser: number;
  token: number;
  application: number;
  role: number;
  /** Soft-deleted records, for the restore mutations. */
  deleted: { user: number; token: number; application: number; role: number };
}

/** Creates over REST as the admin; REST answers the new id as a bare number. */
async function adminCreate(path: string, body: unknown): Promise<number> {
  const id = await admin('POST', path, body);
  expect(id).toEqual(expect.any(Number));
  return id as number;
}

async function makeFixture(): Promise<Fixture> {
  const user = await adminCreate('/user/', { firstName: 'Target', lastName: uniq('user') });
  const bareUser = await adminCreate('/user/', { firstName: 'Bare', lastName: uniq('user') });
  const owner = await adminCreate('/user/', { firstName: 'Owner', lastName: uniq('user') });
  const application = await adminCreate('/application/', { name: uniq('fixture-app') });
  const role = await adminCreate('/role/', { name: uniq('fixture-role') });
  const token = await adminCreate('/token/', { userID: owner, accessToken: uniq('fixture-token'), scope: 'openid profile' });
  // Links answer how many were created.
  expect(await admin('POST', `/user/${user}/application/`, [application])).toBe(1);
  expect(await admin('POST', `/user/${user}/role/`, [role])).toBe(1);
  const deleted = {
    user: await adminCreate('/user/', { firstName: 'Deleted', lastName: uniq('user') }),
    token: await adminCreate('/token/', { userID: owner, accessToken: uniq('deleted-token'), scope: 'openid' }),
    application: await adminCreate('/application/', { name: uniq('deleted-app') }),
    role: await adminCreate('/role/', { name: uniq('deleted-role') }),
  };
  for (const [resource, id] of Object.entries(deleted)) expect(await admin('DELETE', `/${resource}/${id}`)).toBe(1);
  return { user, bareUser, token, application, role, deleted };
}

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

const INTROSPECTION = '{ __schema { types { name } } }';
const isSandbox = (res: Reply) => res.status === 200 && (res.headers.get('content-type') ?? '').startsWith('text/html') && /sandbox/i.test(res.text);

describe('Sandbox and introspection', () => {
  test('outside production GET /graphql from a browser shows Apollo Sandbox', async () => {
    const res = await get('/graphql', { Accept: 'text/html' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(isSandbox(res)).toBe(true);
  });

  describe('NODE_ENV=production', () => {
    let prod: TestService;
    beforeAll(async () => {
      prod = await startTestService({ NODE_ENV: 'production' });
    });
    afterAll(async () => {
      await prod?.stop();
    });

    test('no Sandbox', async () => {
      const res = await get('/graphql', { Accept: 'text/html' }, prod);
      expect(isSandbox(res)).toBe(false);
      expect(res.headers.get('content-type') ?? '').not.toMatch(/^text\/html/);
    });

    test('introspection is rejected: 400 with a token, 401 without one; ordinary queries still work', async () => {
      const res = await prod.graphql(INTROSPECTION, undefined, { token: prod.adminToken });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
      expect(res.body.errors[0].message).toMatch(/introspection/i);
      expect(res.body.data).toBeUndefined();
      const anonymous = await prod.graphql(INTROSPECTION, undefined, { token: null });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(anonymous.body.data).toBeUndefined();
      const type = await prod.graphql('{ __type(name: "User") { name } }');
      expect(type.status).toBe(400);
      const viewer = await prod.graphql('{ viewer { scope } }');
      expect(viewer.body).toEqual({ data: { viewer: { scope: '*' } } });
    });
  });

  describe('NODE_ENV=production with GRAPHQL_INTROSPECTION=true', () => {
    let prod: TestService;
    beforeAll(async () => {
      prod = await startTestService({ NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'true' });
    });
    afterAll(async () => {
      await prod?.stop();
    });

    test('Sandbox and introspection are both on', async () => {
      expect(isSandbox(await get('/graphql', { Accept: 'text/html' }, prod))).toBe(true);
      const res = await prod.graphql(INTROSPECTION, undefined, { token: null });
      expect(res.status).toBe(200);
      expect(res.body.data.__schema.types.map((t: { name: string }) => t.name)).toContain('User');
    });
  });
});

// ---------------------------------------------------------------------------------------------
// 6. schema.graphql is the schema the code emits and the server serves
// ---------------------------------------------------------------------------------------------

describe('schema.graphql', () => {
  let file: string;
  beforeAll(async () => {
    file = await readFile(new URL('../../schema.graphql', import.meta.url), 'utf8');
  });

  test('matches the schema emitted by the code (run `npm run schema` when this fails)', async () => {
    const emitted = await schemaText();
    if (emitted !== file) {
      throw new Error('schema.graphql is stale: run `npm run schema` and commit the result');
    }
    expect(emitted).toBe(file);
  });

  test('matches the schema the running server serves through introspection', async () => {
    const res = await svc.graphql(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true }), undefined, { token: null });
    expect(res.status).toBe(200);
    const served = printSchema(buildClientSchema(res.body.data as IntrospectionQuery));
    const checkedIn = printSchema(buildSchema(file));
    if (served !== checkedIn) {
      throw new Error('the served schema differs from schema.graphql: run `npm run schema` and commit the result');
    }
    expect(served).toBe(checkedIn);
  });
});
