import { randomBytes } from 'node:crypto';
import type { Permission } from '../../src/auth/caller.js';
import { startTestService, type Reply, type RequestOptions, type TestService } from '../support/service.js';

/**
 * The authorization matrix of SPEC §2: every REST route against every kind of bad credential (401),
 * against valid tokens that lack the route's permission (403), and against tokens that hold it.
 * Failing requests must change nothing: each denial is checked against a snapshot of every table
 * (and of the id sequences, so that a refused "apply id" does not burn an id).
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const uniq = (prefix: string) => `${prefix}-${randomBytes(6).toString('hex')}`;

// ---------------------------------------------------------------------------------------------
// The route table: every REST method + path, the permission it needs, a valid body, its success.
// ---------------------------------------------------------------------------------------------

/** Records a route's path and body refer to. */
interface Fixture {
  user: number;
  token: number;
  application: number;
  role: number;
}

interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** With {user}, {token}, {application}, {role} placeholders. */
  path: string;
  permission: Permission;
  /** The status of a successful call on a fresh fixture. */
  success: number;
  /** The body of that successful call (SPEC §4: arrays, records, bare ids and counts). */
  answer: unknown | ((f: Fixture) => unknown);
  body?: (f: Fixture) => unknown;
}

/** A new id, a bare JSON number. */
const NEW_ID = expect.any(Number);
/** The record the path names. */
const RECORD = (key: keyof Fixture) => (f: Fixture) => expect.objectContaining({ id: f[key] });
const LIST = expect.any(Array);

const ROUTES: Route[] = [
  // users
  { method: 'GET', path: '/user/', permission: 'user:read', success: 200, answer: LIST },
  { method: 'POST', path: '/user/', permission: 'user:write', success: 201, answer: NEW_ID, body: () => ({ firstName: 'New', lastName: 'User' }) },
  { method: 'GET', path: '/user/{user}', permission: 'user:read', success: 200, answer: RECORD('user') },
  { method: 'PUT', path: '/user/{user}', permission: 'user:write', success: 200, answer: 1, body: () => ({ firstName: 'Put', lastName: 'User' }) },
  { method: 'PATCH', path: '/user/{user}', permission: 'user:write', success: 200, answer: 1, body: () => ({ lastName: 'Patched' }) },
  { method: 'DELETE', path: '/user/{user}', permission: 'user:write', success: 200, answer: 1 },
  { method: 'PATCH', path: '/user/{user}/status/', permission: 'user:write', success: 200, answer: 1, body: () => ({ status: 2 }) },
  { method: 'PUT', path: '/user/{user}/status/', permission: 'user:write', success: 200, answer: 1, body: () => ({ status: 3 }) },
  { method: 'POST', path: '/apply/user/id/', permission: 'user:write', success: 201, answer: NEW_ID, body: () => ({}) },
  // tokens
  { method: 'GET', path: '/token/', permission: 'token:read', success: 200, answer: LIST },
  {
    method: 'POST',
    path: '/token/',
    permission: 'token:write',
    success: 201,
    answer: NEW_ID,
    body: (f) => ({ userID: f.user, accessToken: uniq('posted') }),
  },
  { method: 'GET', path: '/token/{token}', permission: 'token:read', success: 200, answer: RECORD('token') },
  {
    method: 'PUT',
    path: '/token/{token}',
    permission: 'token:write',
    success: 200,
    answer: 1,
    body: (f) => ({ userID: f.user, accessToken: uniq('put') }),
  },
  { method: 'PATCH', path: '/token/{token}', permission: 'token:write', success: 200, answer: 1, body: () => ({ tokenType: 'bearer' }) },
  { method: 'DELETE', path: '/token/{token}', permission: 'token:write', success: 200, answer: 1 },
  { method: 'POST', path: '/apply/token/id/', permission: 'token:write', success: 201, answer: NEW_ID },
  // applications
  { method: 'GET', path: '/application/', permission: 'application:read', success: 200, answer: LIST },
  { method: 'POST', path: '/application/', permission: 'application:write', success: 201, answer: NEW_ID, body: () => ({ name: uniq('app') }) },
  { method: 'GET', path: '/application/{application}', permission: 'application:read', success: 200, answer: RECORD('application') },
  { method: 'PUT', path: '/application/{application}', permission: 'application:write', success: 200, answer: 1, body: () => ({ name: uniq('app') }) },
  { method: 'PATCH', path: '/application/{application}', permission: 'application:write', success: 200, answer: 1, body: () => ({ name: uniq('app') }) },
  { method: 'DELETE', path: '/application/{application}', permission: 'application:write', success: 200, answer: 1 },
  // roles
  { method: 'GET', path: '/role/', permission: 'role:read', success: 200, answer: LIST },
  { method: 'POST', path: '/role/', permission: 'role:write', success: 201, answer: NEW_ID, body: () => ({ name: uniq('role') }) },
  { method: 'GET', path: '/role/{role}', permission: 'role:read', success: 200, answer: RECORD('role') },
  { method: 'PUT', path: '/role/{role}', permission: 'role:write', success: 200, answer: 1, body: () => ({ name: uniq('role') }) },
  { method: 'PATCH', path: '/role/{role}', permission: 'role:write', success: 200, answer: 1, body: () => ({ name: uniq('role') }) },
  { method: 'DELETE', path: '/role/{role}', permission: 'role:write', success: 200, answer: 1 },
  // a user's links (reads need user:read, writes user:write); the fixture's user is linked to its
  // application and role already, so linking them again creates 0 links and unlinking removes 1
  { method: 'GET', path: '/user/{user}/application/', permission: 'user:read', success: 200, answer: LIST },
  { method: 'POST', path: '/user/{user}/application/', permission: 'user:write', success: 201, answer: 0, body: (f) => [f.application] },
  { method: 'DELETE', path: '/user/{user}/application/', permission: 'user:write', success: 200, answer: 1, body: (f) => [f.application] },
  {
    method: 'GET',
    path: '/user/{user}/application/{application}',
    permission: 'user:read',
    success: 200,
    answer: (f: Fixture) => ({ userID: f.user, applicationID: f.application, right: 0, createdAt: expect.any(String), updatedAt: expect.any(String) }),
  },
  { method: 'PUT', path: '/user/{user}/application/{application}', permission: 'user:write', success: 200, answer: 1, body: () => ({ right: 5 }) },
  { method: 'GET', path: '/user/{user}/role/', permission: 'user:read', success: 200, answer: LIST },
  { method: 'POST', path: '/user/{user}/role/', permission: 'user:write', success: 201, answer: 0, body: (f) => [f.role] },
  { method: 'DELETE', path: '/user/{user}/role/', permission: 'user:write', success: 200, answer: 1, body: (f) => [f.role] },
];

const PERMISSIONS: Permission[] = ['user:read', 'user:write', 'token:read', 'token:write', 'application:read', 'application:write', 'role:read', 'role:write'];
const RESOURCES = ['user', 'token', 'application', 'role'] as const;

const ABSENT_ID = 987654321;
const ABSENT: Fixture = { user: ABSENT_ID, token: ABSENT_ID, application: ABSENT_ID, role: ABSENT_ID };

const pathOf = (route: Route, f: Fixture) => route.path.replace(/\{(user|token|application|role)\}/g, (_, key: keyof Fixture) => String(f[key]));

/** A well-formed call of the route on the fixture. */
const validCall = (route: Route, f: Fixture): [string, string, RequestOptions] => [route.method, pathOf(route, f), route.body ? { body: route.body(f) } : {}];

/**
 * A call that is wrong in every other way the route allows: ids of absent records, a body that is
 * JSON but of the wrong shape (or, with `unparseable`, not JSON at all), an invalid page size (not
 * an integer: one out of range is clamped, SPEC §5) and an unparseable filter.
 * Authentication and authorization must be decided before any of that is looked at.
 */
const faultyCall = (route: Route, unparseable: boolean): [string, string, RequestOptions] => {
  let path = pathOf(route, ABSENT);
  if (route.method === 'GET' && path.endsWith('/')) path += '?pageSize=ten&filter=(nonsense';
  const options: RequestOptions =
    route.method === 'GET' ? {} : unparseable ? { rawBody: '{"oops', headers: { 'Content-Type': 'application/json' } } : { body: 'not the right shape' };
  return [route.method, path, options];
};

const answerOf = (route: Route, f: Fixture) => (typeof route.answer === 'function' ? route.answer(f) : route.answer);

const routeName = (route: Route) => `${route.method} ${route.path}`;

// ---------------------------------------------------------------------------------------------
// Helpers: fixtures, tokens, snapshots, and the shape of a denial.
// ---------------------------------------------------------------------------------------------

async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const res = await svc.request(method, path, body === undefined ? {} : { body });
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${res.text}`);
  return res.body;
}

/** POSTs a record and answers its id (a create answers the new id as a bare number). */
async function createId(path: string, body: unknown): Promise<number> {
  const id = await admin('POST', path, body);
  if (typeof id !== 'number') throw new Error(`POST ${path} answered ${JSON.stringify(id)}, not an id`);
  return id;
}

/** A user linked to an application and a role, and a token of another user. */
async function makeFixture(): Promise<Fixture> {
  const user = await createId('/user/', { firstName: 'Target', lastName: uniq('user') });
  const owner = await createId('/user/', { firstName: 'Owner', lastName: uniq('user') });
  const application = await createId('/application/', { name: uniq('fixture-app') });
  const role = await createId('/role/', { name: uniq('fixture-role') });
  const token = await createId('/token/', { userID: owner, accessToken: uniq('fixture-token'), scope: 'openid profile' });
  expect(await admin('POST', `/user/${user}/application/`, [application])).toBe(1);
  expect(await admin('POST', `/user/${user}/role/`, [role])).toBe(1);
  return { user, token, application, role };
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

async function tokenRow(accessToken: string): Promise<{ id: number; userId: number }> {
  const [row] = await svc.sql<{ id: string; user_id: string }>('select id, user_id from tokens where access_token_hmac = ?', [svc.hmac(accessToken)]);
  return { id: Number(row.id), userId: Number(row.user_id) };
}

const snapshot = () => svc.snapshot();

/**
 * The parts of a reply a denial is judged on, labelled so that a failing expectation names the
 * credential and the call that went wrong.
 */
function denial(label: string, res: Reply) {
  return {
    label,
    status: res.status,
    wwwAuthenticate: res.headers.get('www-authenticate'),
    body: res.body,
    requestIdHeader: res.headers.get('x-request-id'),
  };
}

function expectedDenial(label: string, status: 401 | 403, wwwAuthenticate: string, requestId: string | null) {
  return {
    label,
    status,
    wwwAuthenticate,
    body: {
      code: status,
      error: status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN',
      message: expect.stringMatching(/\S/),
      requestId: requestId ?? 'missing X-Request-Id',
    },
    requestIdHeader: expect.any(String),
  };
}

const INVALID_TOKEN = 'Bearer error="invalid_token"';
const insufficientScope = (needed: Permission) => `Bearer error="insufficient_scope", scope="${needed}"`;

// ---------------------------------------------------------------------------------------------
// Shared state for the denial matrix: one fixture, and one credential of every bad kind.
// ---------------------------------------------------------------------------------------------

let fixture: Fixture;

interface Credential {
  label: string;
  /** The Authorization header to send; null sends none. */
  header: string | null;
  wwwAuthenticate: string;
}
let badCredentials: Credential[];

beforeAll(async () => {
  fixture = await makeFixture();

  // Each of these tokens has scope "*", so only its credential state can be the reason for a 401.
  const expired = await svc.tokenWith('*', { expireAt: new Date(Date.now() - 60_000).toISOString() });

  const ownerDeleted = await svc.tokenWith('*');
  const ownerDeletedRow = await tokenRow(ownerDeleted);
  expect((await svc.request('GET', '/user/', { token: ownerDeleted })).status).toBe(200);
  expect(await svc.request('DELETE', `/user/${ownerDeletedRow.userId}`)).toMatchObject({ status: 200, body: 1 });

  // The owning user is marked deleted while the token row itself stays live (no cascade involved).
  const ownerRowDeleted = await svc.tokenWith('*');
  const ownerRowDeletedRow = await tokenRow(ownerRowDeleted);
  expect((await svc.request('GET', '/user/', { token: ownerRowDeleted })).status).toBe(200);
  await svc.sql('update users set deleted_at = now() where id = ?', [ownerRowDeletedRow.userId]);

  const revoked = await svc.tokenWith('*');
  expect((await svc.request('GET', '/user/', { token: revoked })).status).toBe(200);
  expect(await svc.request('DELETE', `/token/${(await tokenRow(revoked)).id}`)).toMatchObject({ status: 200, body: 1 });

  badCredentials = [
    { label: 'no Authorization header', header: null, wwwAuthenticate: 'Bearer' },
    { label: 'Basic scheme', header: 'Basic abc', wwwAuthenticate: INVALID_TOKEN },
    { label: 'Bearer without a value', header: 'Bearer', wwwAuthenticate: INVALID_TOKEN },
    { label: 'Bearer with two values', header: `Bearer ${svc.adminToken} extra`, wwwAuthenticate: INVALID_TOKEN },
    { label: 'valid value under another scheme', header: `Token ${svc.adminToken}`, wwwAuthenticate: INVALID_TOKEN },
    { label: 'unknown token', header: `Bearer ${uniq('unknown')}`, wwwAuthenticate: INVALID_TOKEN },
    { label: 'admin token with a suffix', header: `Bearer ${svc.adminToken}x`, wwwAuthenticate: INVALID_TOKEN },
    { label: 'admin token cut short', header: `Bearer ${svc.adminToken.slice(0, -1)}`, wwwAuthenticate: INVALID_TOKEN },
    { label: 'expired token', header: `Bearer ${expired}`, wwwAuthenticate: INVALID_TOKEN },
    { label: 'token of a deleted user (DELETE /user)', header: `Bearer ${ownerDeleted}`, wwwAuthenticate: INVALID_TOKEN },
    { label: 'token whose user row is deleted', header: `Bearer ${ownerRowDeleted}`, wwwAuthenticate: INVALID_TOKEN },
    { label: 'token deleted by DELETE /token', header: `Bearer ${revoked}`, wwwAuthenticate: INVALID_TOKEN },
  ];
});

async function send([method, path, options]: [string, string, RequestOptions], header: string | null): Promise<Reply> {
  const headers = { ...options.headers, ...(header === null ? {} : { Authorization: header }) };
  return svc.request(method, path, { ...options, token: null, headers });
}

test('the route table covers every route once', () => {
  const names = ROUTES.map(routeName);
  expect(new Set(names).size).toBe(names.length);
  expect(names.length).toBe(36);
});

test('the faulty calls are refused even with every permission, and change nothing', async () => {
  // Otherwise the denial matrix would not show that authorization comes before validation.
  const before = await snapshot();
  for (const route of ROUTES) {
    for (const unparseable of [false, true]) {
      // Apply ignores its body (any JSON, SPEC §4): only the unparseable one is refused.
      if (!unparseable && route.path.startsWith('/apply/')) continue;
      const call = faultyCall(route, unparseable);
      const res = await send(call, `Bearer ${svc.adminToken}`);
      const label = `${call[0]} ${call[1]}${unparseable ? ' (unparseable body)' : ''}`;
      expect({ label, refused: [400, 404].includes(res.status), code: res.body?.code }).toEqual({ label, refused: true, code: res.status });
    }
  }
  expect(await snapshot()).toEqual(before);
});

// ---------------------------------------------------------------------------------------------
// 401: missing, malformed, unknown, expired, revoked tokens, tokens of deleted users.
// ---------------------------------------------------------------------------------------------

describe('401 for every route and every bad credential; nothing is written', () => {
  test.each(ROUTES.map((r) => [routeName(r), r] as const))('%s', async (_name, route) => {
    const before = await snapshot();
    for (const credential of badCredentials) {
      const calls = [
        ['well-formed call', validCall(route, fixture)],
        ['faulty call', faultyCall(route, false)],
        ['unparseable body', faultyCall(route, true)],
      ] as const;
      for (const [kind, call] of calls) {
        const label = `${credential.label}, ${kind}`;
        const res = await send(call, credential.header);
        expect(denial(label, res)).toEqual(expectedDenial(label, 401, credential.wwwAuthenticate, res.headers.get('x-request-id')));
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  test('the error message and the log never carry a bearer value', async () => {
    const secret = uniq('secret-bearer');
    const res = await send(['GET', '/user/', {}], `Bearer ${secret}`);
    expect(res.status).toBe(401);
    expect(res.text).not.toContain(secret);
    for (const credential of badCredentials) {
      const value = credential.header?.split(' ')[1];
      if (value && value.length >= 16) expect(svc.logLines.join('\n')).not.toContain(value);
    }
    expect(svc.logLines.join('\n')).not.toContain(secret);
    expect(svc.logLines.join('\n')).not.toContain(svc.adminToken);
  });
});

// ---------------------------------------------------------------------------------------------
// 403: a valid token that lacks the route's permission.
// ---------------------------------------------------------------------------------------------

/**
 * Scopes that do not grant `needed`: every other permission and every other resource's wildcard
 * at once, nothing at all, and near misses (a comma is not a separator, words match whole).
 */
function lackingScopes(needed: Permission): string[] {
  const [resource, action] = needed.split(':');
  const everythingElse = [...PERMISSIONS.filter((p) => p !== needed), ...RESOURCES.filter((r) => r !== resource).map((r) => `${r}:*`)].join(' ');
  return [
    everythingElse,
    '',
    `${resource}s:${action}`,
    `${needed}x`,
    `x${needed}`,
    resource,
    `${resource}:`,
    `${resource}:read,${resource}:write`,
    `${resource}:*,token:read`,
    `${resource}:**`,
  ];
}

describe('403 for a valid token without the permission; nothing is written', () => {
  test.each(ROUTES.map((r) => [routeName(r), r.permission, r] as const))('%s needs %s', async (_name, needed, route) => {
    const scopes = lackingScopes(needed);
    const tokens = await Promise.all(scopes.map((scope) => tokenFor(scope)));
    const before = await snapshot();
    for (const [i, scope] of scopes.entries()) {
      const calls = [
        ['well-formed call', validCall(route, fixture)],
        ['absent ids / wrong body shape / bad page size', faultyCall(route, false)],
      ] as const;
      for (const [kind, call] of calls) {
        const label = `scope ${JSON.stringify(scope)}, ${kind}`;
        const res = await send(call, `Bearer ${tokens[i]}`);
        expect(denial(label, res)).toEqual(expectedDenial(label, 403, insufficientScope(needed), res.headers.get('x-request-id')));
      }
    }
    expect(await snapshot()).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------
// The positive side: the exact permission, its resource wildcard, `*`, and scope word parsing.
// ---------------------------------------------------------------------------------------------

function grantingScopes(needed: Permission): string[] {
  const [resource] = needed.split(':');
  const other = needed.endsWith(':read') ? needed.replace(':read', ':write') : needed.replace(':write', ':read');
  return [
    needed,
    `${resource}:*`,
    '*',
    // Space-separated words, extra spaces, unrelated words, the sibling permission alongside.
    `  openid   ${other}  ${needed}  profile:read `,
  ];
}

describe('a token holding the permission passes authorization', () => {
  test.each(ROUTES.map((r) => [routeName(r), r.permission, r] as const))('%s with %s', async (_name, needed, route) => {
    for (const scope of grantingScopes(needed)) {
      const token = await tokenFor(scope);
      const f = await makeFixture(); // routes that write (or delete) get records of their own
      const res = await send(validCall(route, f), `Bearer ${token}`);
      const label = `scope ${JSON.stringify(scope)}`;
      expect({
        label,
        status: res.status,
        wwwAuthenticate: res.headers.get('www-authenticate'),
        text: res.status === route.success ? '' : res.text,
        body: res.body,
      }).toEqual({ label, status: route.success, wwwAuthenticate: null, text: '', body: answerOf(route, f) });
    }
  });

  test('a resource wildcard grants nothing on the other resources', async () => {
    for (const resource of RESOURCES) {
      const token = await tokenFor(`${resource}:*`);
      const before = await snapshot();
      for (const route of ROUTES.filter((r) => !r.permission.startsWith(`${resource}:`))) {
        const res = await send(validCall(route, fixture), `Bearer ${token}`);
        const label = `${resource}:* on ${routeName(route)}`;
        expect(denial(label, res)).toEqual(expectedDenial(label, 403, insufficientScope(route.permission), res.headers.get('x-request-id')));
      }
      expect(await snapshot()).toEqual(before);
    }
  });

  test('read does not grant write and write does not grant read', async () => {
    for (const route of ROUTES) {
      const [resource, action] = route.permission.split(':');
      const sibling = `${resource}:${action === 'read' ? 'write' : 'read'}`;
      const res = await send(validCall(route, fixture), `Bearer ${await tokenFor(sibling)}`);
      const label = `${sibling} on ${routeName(route)}`;
      expect({ label, status: res.status, www: res.headers.get('www-authenticate') }).toEqual({ label, status: 403, www: insufficientScope(route.permission) });
    }
  });

  test('a token that expires in the future is valid', async () => {
    const token = await svc.tokenWith('user:read', { expireAt: new Date(Date.now() + 3_600_000).toISOString() });
    expect((await send(['GET', '/user/', {}], `Bearer ${token}`)).status).toBe(200);
  });

  test('the scheme name is case-insensitive and the value exact', async () => {
    const token = await tokenFor('user:read');
    expect((await send(['GET', '/user/', {}], `bearer ${token}`)).status).toBe(200);
    expect((await send(['GET', '/user/', {}], `BEARER ${token}`)).status).toBe(200);
    expect((await send(['GET', '/user/', {}], `Bearer ${token.toUpperCase()}`)).status).toBe(401);
  });
});

// ---------------------------------------------------------------------------------------------
// Revocation and expiry take effect on the very next request.
// ---------------------------------------------------------------------------------------------

describe('revoking or expiring a token takes effect on the next request', () => {
  const works = async (token: string) => (await send(['GET', '/user/', {}], `Bearer ${token}`)).status;

  test('DELETE /token/{id} by another caller', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    expect(await svc.request('DELETE', `/token/${(await tokenRow(token)).id}`)).toMatchObject({ status: 200, body: 1 });
    const res = await send(['GET', '/user/', {}], `Bearer ${token}`);
    expect(denial('revoked', res)).toEqual(expectedDenial('revoked', 401, INVALID_TOKEN, res.headers.get('x-request-id')));
  });

  test('a token deleting itself', async () => {
    const token = await svc.tokenWith('user:read token:write');
    const { id } = await tokenRow(token);
    expect(await send(['DELETE', `/token/${id}`, {}], `Bearer ${token}`)).toMatchObject({ status: 200, body: 1 });
    expect(await works(token)).toBe(401);
    const [row] = await svc.sql<{ deleted: boolean }>('select deleted_at is not null as deleted from tokens where id = ?', [id]);
    expect(row.deleted).toBe(true);
  });

  test('PATCH expireAt into the past', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    const past = new Date(Date.now() - 1_000).toISOString();
    expect(await svc.request('PATCH', `/token/${(await tokenRow(token)).id}`, { body: { expireAt: past } })).toMatchObject({ status: 200, body: 1 });
    expect(await works(token)).toBe(401);
  });

  test('DELETE /user/{id} of the owner', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    expect(await svc.request('DELETE', `/user/${(await tokenRow(token)).userId}`)).toMatchObject({ status: 200, body: 1 });
    expect(await works(token)).toBe(401);
  });

  test('narrowing the scope: PATCH scope takes effect at once (403 next)', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    expect(await svc.request('PATCH', `/token/${(await tokenRow(token)).id}`, { body: { scope: 'role:read' } })).toMatchObject({ status: 200, body: 1 });
    const res = await send(['GET', '/user/', {}], `Bearer ${token}`);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe(insufficientScope('user:read'));
  });
});
