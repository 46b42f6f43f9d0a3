import { randomBytes } from 'node:crypto';
import { apiRoutes } from '../../src/app.js';
import type { Permission } from '../../src/auth/caller.js';
import { Keyring } from '../../src/db/keyring.js';
import type { Method } from '../../src/http/routes.js';
import type { AnyModule } from '../../src/module/module.js';
import { scopeVocabulary } from '../../src/module/registry.js';
import { MODULES } from '../../src/modules.js';
import { createServices } from '../../src/services.js';
import group from '../support/group/index.js';
import { startTestService, type Reply, type RequestOptions, type TestService } from '../support/service.js';

/**
 * The authorization matrix of SPEC §2: every REST route against every kind of bad credential (401),
 * against valid tokens that lack the route's permission (403), and against tokens that hold it.
 * Failing requests must change nothing: each denial is checked against a snapshot of every table
 * (and of the id sequences, so that a refused "apply id" does not burn an id).
 *
 * The routes are not listed here: they are the route table the application mounts (src/app.ts's
 * `apiRoutes` over the modules of src/modules.ts), each with the permission it declares, so that a
 * new module's routes are in the matrix without an edit. What this file lists is what the table
 * cannot say: the routes whose service checks the permission itself, the public operations (and
 * why they are public), and what a successful call of a known route looks like.
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
// The route table, from the application: every REST method + path and the permission it needs.
// ---------------------------------------------------------------------------------------------

interface Route {
  /** `GET /user/{id}`: as the OpenAPI document names the operation. */
  name: string;
  method: Method;
  /** As the OpenAPI document writes it: `{id}`-style parameters, collections with their trailing slash. */
  path: string;
  /**
   * The permission a valid token must hold; null: any valid token will do; undefined: nobody said
   * (the route declares none and its service's check is not listed in CHECKED_BY_SERVICE).
   */
  needs: Permission | null | undefined;
  /** Who checks it: the route pipeline (before the input is parsed) or the route's service. */
  checkedBy: 'route' | 'service' | undefined;
}

/**
 * Routes that declare no permission because their service decides (src/oauth/oauth.routes.ts):
 * what a token needs there, and where that is written.
 */
const CHECKED_BY_SERVICE: Record<string, { needs: Permission | null; why: string }> = {
  'POST /oauth/introspect': { needs: 'token:read', why: 'RFC 7662 (SPEC §7): the tokens service checks token:read once the body is read' },
  'POST /oauth/revoke': {
    needs: 'token:write',
    why: 'RFC 7009 (SPEC §7): a caller may revoke its own token; another’s needs token:write, which the tokens service checks once it knows whose it is',
  },
  'GET /authorize/{applicationID}/': { needs: null, why: 'SPEC §7: the original family’s authorize needs a valid token and no scope' },
};

/**
 * Operations the service serves without a token, by design (SPEC §1, §8): they are outside the
 * matrix. GraphQL (/graphql) is not in the OpenAPI document: its matrix is
 * test/graphql/permissions.test.ts.
 */
const PUBLIC: Record<string, string> = {
  'GET /healthz': 'the liveness probe: no token (SPEC §1)',
  'GET /readyz': 'the readiness probe: no token (SPEC §1)',
  'GET /metrics': 'Prometheus scrapes it without a token (METRICS=false turns it off)',
  'GET /openapi.json': 'the API’s document is public (SPEC §8)',
  'GET /docs': 'the API’s document rendered by Swagger UI, public like the document (SPEC §8)',
};

/**
 * The routes the router of a service made of these modules serves (below an empty BASE_PATH),
 * each with what it needs. The services only lend their routes' handlers here (none is called),
 * as `npm run openapi` builds the document without a database.
 */
function routeTable(modules: readonly AnyModule[]): Route[] {
  const services = createServices(Keyring.of(Buffer.alloc(32, 1)), { modules });
  return apiRoutes({ services, modules }, '').map((route) => {
    const path = `${route.path.replace(/:([A-Za-z]+)/g, '{$1}')}${route.docs.trailingSlash ? '/' : ''}`;
    const name = `${route.method} ${path}`;
    const byService = route.permission ? undefined : CHECKED_BY_SERVICE[name];
    return {
      name,
      method: route.method,
      path,
      needs: route.permission ?? byService?.needs,
      checkedBy: route.permission ? 'route' : byService ? 'service' : undefined,
    };
  });
}

const ROUTES = routeTable(MODULES);
/** The routes the matrix can judge: every route, once the table checks below pass. */
const COVERED = ROUTES.filter((r) => r.needs !== undefined);
/** Routes that need a permission (the others take any valid token). */
const PERMISSIONED = COVERED.filter((r): r is Route & { needs: Permission } => r.needs !== null);

const VOCABULARY = scopeVocabulary(MODULES);
const PERMISSIONS = [...VOCABULARY.permissions];
const RESOURCES = [...new Set(PERMISSIONS.map((p) => p.split(':')[0]))];

// ---------------------------------------------------------------------------------------------
// What a successful call of a known route looks like (a route without one is judged only on
// passing authorization: a new module's routes are still in the matrix).
// ---------------------------------------------------------------------------------------------

/** Records a route's path and body refer to, by resource name (the path segment before `{id}`, or `{<name>ID}`). */
interface Fixture {
  ids: Record<string, number>;
  /** Soft-deleted records, for the restores. */
  deleted: Record<string, number>;
  /** The access token of the fixture's token. */
  tokenValue: string;
  /** The user owning the fixture's token. */
  owner: number;
}

interface Example {
  /** The status of a successful call on a fresh fixture. */
  success: number;
  /** The body of that successful call (SPEC §4: arrays, records, bare ids and counts). */
  answer: unknown | ((f: Fixture) => unknown);
  body?: (f: Fixture) => unknown;
  /** The query string (without `?`). */
  query?: (f: Fixture) => string;
  /** The path's ids are the fixture's deleted records. */
  onDeleted?: true;
}

/** A new id, a bare JSON number. */
const NEW_ID = expect.any(Number);
/** The record the path names. */
const RECORD = (resource: string) => (f: Fixture) => expect.objectContaining({ id: f.ids[resource] });
const LIST = expect.any(Array);
const RESTORED: Example = { success: 200, answer: 1, onDeleted: true };
const webhookBody = () => ({ url: `https://${uniq('hooks')}.example.invalid/`, events: ['user.*'], active: false });

const SUCCESS: Record<string, Example> = {
  // users
  'GET /user/': { success: 200, answer: LIST },
  'POST /user/': { success: 201, answer: NEW_ID, body: () => ({ firstName: 'New', lastName: 'User' }) },
  'GET /user/{id}': { success: 200, answer: RECORD('user') },
  'PUT /user/{id}': { success: 200, answer: 1, body: () => ({ firstName: 'Put', lastName: 'User' }) },
  'PATCH /user/{id}': { success: 200, answer: 1, body: () => ({ lastName: 'Patched' }) },
  'DELETE /user/{id}': { success: 200, answer: 1 },
  'POST /user/{id}/restore': RESTORED,
  'PATCH /user/{id}/status/': { success: 200, answer: 1, body: () => ({ status: 2 }) },
  'PUT /user/{id}/status/': { success: 200, answer: 1, body: () => ({ status: 3 }) },
  'POST /apply/user/id/': { success: 201, answer: NEW_ID, body: () => ({}) },
  // tokens
  'GET /token/': { success: 200, answer: LIST },
  'POST /token/': { success: 201, answer: NEW_ID, body: (f) => ({ userID: f.ids.user, accessToken: uniq('posted') }) },
  'GET /token/{id}': { success: 200, answer: RECORD('token') },
  'PUT /token/{id}': { success: 200, answer: 1, body: (f) => ({ userID: f.ids.user, accessToken: uniq('put') }) },
  'PATCH /token/{id}': { success: 200, answer: 1, body: () => ({ tokenType: 'bearer' }) },
  'DELETE /token/{id}': { success: 200, answer: 1 },
  'POST /token/{id}/restore': RESTORED,
  'POST /apply/token/id/': { success: 201, answer: NEW_ID },
  'DELETE /token/': { success: 200, answer: { revoked: 1, skipped: 0 }, query: (f) => `filter=${encodeURIComponent(`id eq ${f.ids.token}`)}` },
  // applications
  'GET /application/': { success: 200, answer: LIST },
  'POST /application/': { success: 201, answer: NEW_ID, body: () => ({ name: uniq('app') }) },
  'GET /application/{id}': { success: 200, answer: RECORD('application') },
  'PUT /application/{id}': { success: 200, answer: 1, body: () => ({ name: uniq('app') }) },
  'PATCH /application/{id}': { success: 200, answer: 1, body: () => ({ name: uniq('app') }) },
  'DELETE /application/{id}': { success: 200, answer: 1 },
  'POST /application/{id}/restore': RESTORED,
  // roles
  'GET /role/': { success: 200, answer: LIST },
  'POST /role/': { success: 201, answer: NEW_ID, body: () => ({ name: uniq('role') }) },
  'GET /role/{id}': { success: 200, answer: RECORD('role') },
  'PUT /role/{id}': { success: 200, answer: 1, body: () => ({ name: uniq('role') }) },
  'PATCH /role/{id}': { success: 200, answer: 1, body: () => ({ name: uniq('role') }) },
  'DELETE /role/{id}': { success: 200, answer: 1 },
  'POST /role/{id}/restore': RESTORED,
  // a user's links (reads need user:read, writes user:write); the fixture's user is linked to its
  // application and role already, so linking them again creates 0 links and unlinking removes 1
  'GET /user/{id}/application/': { success: 200, answer: LIST },
  'POST /user/{id}/application/': { success: 201, answer: 0, body: (f) => [f.ids.application] },
  'DELETE /user/{id}/application/': { success: 200, answer: 1, body: (f) => [f.ids.application] },
  'GET /user/{id}/application/{applicationID}': {
    success: 200,
    answer: (f: Fixture) => ({ userID: f.ids.user, applicationID: f.ids.application, right: 0, createdAt: expect.any(String), updatedAt: expect.any(String) }),
  },
  'PUT /user/{id}/application/{applicationID}': { success: 200, answer: 1, body: () => ({ right: 5 }) },
  'GET /user/{id}/role/': { success: 200, answer: LIST },
  'POST /user/{id}/role/': { success: 201, answer: 0, body: (f) => [f.ids.role] },
  'DELETE /user/{id}/role/': { success: 200, answer: 1, body: (f) => [f.ids.role] },
  // webhooks (inactive: nothing is delivered to the made-up addresses)
  'GET /webhook/': { success: 200, answer: LIST },
  'POST /webhook/': { success: 201, answer: NEW_ID, body: webhookBody },
  'GET /webhook/{id}': { success: 200, answer: RECORD('webhook') },
  'PUT /webhook/{id}': { success: 200, answer: 1, body: webhookBody },
  'PATCH /webhook/{id}': { success: 200, answer: 1, body: () => ({ description: 'patched' }) },
  'DELETE /webhook/{id}': { success: 200, answer: 1 },
  'POST /webhook/{id}/restore': RESTORED,
  'POST /webhook/{id}/secret': { success: 200, answer: expect.stringMatching(/^whsec_/) },
  'POST /webhook/{id}/replay': { success: 200, answer: 1, body: () => ({ after: 0 }) },
  'GET /webhook/{id}/delivery/': { success: 200, answer: LIST },
  // the audit log
  'GET /audit/': { success: 200, answer: LIST },
  // the token platform
  'POST /oauth/introspect': {
    success: 200,
    answer: (f: Fixture) => expect.objectContaining({ active: true, sub: String(f.owner) }),
    body: (f) => ({ token: f.tokenValue }),
  },
  'POST /oauth/revoke': { success: 200, answer: { revoked: 1 }, body: (f) => ({ token: f.tokenValue }) },
  'GET /authorize/{applicationID}/': { success: 200, answer: { userID: expect.any(Number), userRight: 0 } },
};

const ABSENT_ID = 987654321;
const NO_IDS: Record<string, number> = {};

/** The path with its parameters filled: `{id}` by the record of the segment before it, `{applicationID}` by the application; ABSENT_ID for any other. */
const pathOf = (route: Route, ids: Record<string, number>) =>
  route.path.replace(/\{(\w+)\}/g, (_whole, param: string, offset: number) => {
    const resource = param === 'id' ? route.path.slice(0, offset).split('/').filter(Boolean).at(-1)! : param.replace(/ID$/, '');
    return String(ids[resource] ?? ABSENT_ID);
  });

/** A well-formed call of the route on the fixture (a route without an example: its path on the fixture, no body). */
const validCall = (route: Route, f: Fixture): [string, string, RequestOptions] => {
  const example = SUCCESS[route.name];
  const query = example?.query ? `?${example.query(f)}` : '';
  return [route.method, `${pathOf(route, example?.onDeleted ? f.deleted : f.ids)}${query}`, example?.body ? { body: example.body(f) } : {}];
};

/**
 * A call that is wrong in every other way the route allows: ids of absent records, a body that is
 * JSON but of the wrong shape (or, with `unparseable`, not JSON at all), an invalid page size (not
 * an integer: one out of range is clamped, SPEC §5) and an unparseable filter.
 * Authentication and authorization must be decided before any of that is looked at.
 */
const faultyCall = (route: Route, unparseable: boolean): [string, string, RequestOptions] => {
  let path = pathOf(route, NO_IDS);
  if (route.method === 'GET' && path.endsWith('/')) path += '?pageSize=ten&filter=(nonsense';
  const options: RequestOptions =
    route.method === 'GET' ? {} : unparseable ? { rawBody: '{"oops', headers: { 'Content-Type': 'application/json' } } : { body: 'not the right shape' };
  return [route.method, path, options];
};

const answerOf = (example: Example, f: Fixture) => (typeof example.answer === 'function' ? example.answer(f) : example.answer);

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

/** A user, an application, a role, a webhook and a token of another user (the owner), created by the admin. */
async function makeRecords(): Promise<{ ids: Record<string, number>; tokenValue: string; owner: number }> {
  const user = await createId('/user/', { firstName: 'Target', lastName: uniq('user') });
  const owner = await createId('/user/', { firstName: 'Owner', lastName: uniq('user') });
  const application = await createId('/application/', { name: uniq('fixture-app') });
  const role = await createId('/role/', { name: uniq('fixture-role') });
  const webhook = await createId('/webhook/', webhookBody());
  const tokenValue = uniq('fixture-token');
  const token = await createId('/token/', { userID: owner, accessToken: tokenValue, scope: 'openid profile' });
  return { ids: { user, token, application, role, webhook }, tokenValue, owner };
}

/**
 * The records above, the user linked to the application and the role; with `deleted`, a second
 * set soft-deleted (the token's owner stays live: a token of a deleted user cannot be restored).
 */
async function makeFixture({ deleted = false } = {}): Promise<Fixture> {
  const { ids, tokenValue, owner } = await makeRecords();
  expect(await admin('POST', `/user/${ids.user}/application/`, [ids.application])).toBe(1);
  expect(await admin('POST', `/user/${ids.user}/role/`, [ids.role])).toBe(1);
  const gone: Record<string, number> = {};
  if (deleted) {
    const other = await makeRecords();
    for (const [resource, id] of Object.entries(other.ids)) {
      expect(await admin('DELETE', `/${resource}/${id}`)).toBe(1);
      gone[resource] = id;
    }
  }
  return { ids, deleted: gone, tokenValue, owner };
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

/** A reply that got past authentication and authorization: no 401 or 403, no challenge, no such error in the body. */
function passed(label: string, res: Reply) {
  return {
    label,
    status: res.status === 401 || res.status === 403 ? res.status : 'neither 401 nor 403',
    wwwAuthenticate: res.headers.get('www-authenticate'),
    error: ['UNAUTHORIZED', 'FORBIDDEN'].includes(res.body?.error) ? res.body.error : 'no authorization error',
  };
}
const expectedPass = (label: string) => ({ label, status: 'neither 401 nor 403', wwwAuthenticate: null, error: 'no authorization error' });

const INVALID_TOKEN = 'Bearer error="invalid_token"';
const insufficientScope = (needed: Permission) => `Bearer error="insufficient_scope", scope="${needed}"`;

async function send(service: TestService, [method, path, options]: [string, string, RequestOptions], header: string | null): Promise<Reply> {
  const headers = { ...options.headers, ...(header === null ? {} : { Authorization: header }) };
  return service.request(method, path, { ...options, token: null, headers });
}

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
  fixture = await makeFixture({ deleted: true });

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

// ---------------------------------------------------------------------------------------------
// The table itself: every route the service serves is judged, or listed as public with a reason.
// ---------------------------------------------------------------------------------------------

describe('the matrix is the route table of the service', () => {
  test('every operation the service serves is a route of the matrix or a listed public one, each once', async () => {
    const doc = (await svc.request('GET', '/openapi.json', { token: null })).body;
    const served = Object.entries(doc.paths as Record<string, object>).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const names = ROUTES.map((r) => r.name);
    expect(new Set(names).size).toBe(names.length);
    expect(served.sort()).toEqual([...names, ...Object.keys(PUBLIC)].sort());
  });

  test('every route declares the permission it needs, or its service’s check is listed', () => {
    const unjudged = ROUTES.filter((r) => r.needs === undefined).map((r) => r.name);
    expect({ unjudged }).toEqual({ unjudged: [] });
    // Nor may the lists outlive the routes they name.
    const names = ROUTES.map((r) => r.name);
    const stale = [...Object.keys(CHECKED_BY_SERVICE), ...Object.keys(SUCCESS)].filter((name) => !names.includes(name));
    expect({ stale }).toEqual({ stale: [] });
    const declaredAfterAll = Object.keys(CHECKED_BY_SERVICE).filter((name) => ROUTES.find((r) => r.name === name)?.checkedBy !== 'service');
    expect({ declaredAfterAll }).toEqual({ declaredAfterAll: [] });
  });

  test('the routes the old hand-written table missed are in it', () => {
    const needs = Object.fromEntries(ROUTES.map((r) => [r.name, r.needs]));
    expect({
      'POST /user/{id}/restore': needs['POST /user/{id}/restore'],
      'POST /token/{id}/restore': needs['POST /token/{id}/restore'],
      'POST /application/{id}/restore': needs['POST /application/{id}/restore'],
      'POST /role/{id}/restore': needs['POST /role/{id}/restore'],
      'DELETE /token/': needs['DELETE /token/'],
      'GET /audit/': needs['GET /audit/'],
      'POST /oauth/revoke': needs['POST /oauth/revoke'],
      'GET /webhook/': needs['GET /webhook/'],
      'POST /webhook/{id}/secret': needs['POST /webhook/{id}/secret'],
    }).toEqual({
      'POST /user/{id}/restore': 'user:write',
      'POST /token/{id}/restore': 'token:write',
      'POST /application/{id}/restore': 'application:write',
      'POST /role/{id}/restore': 'role:write',
      'DELETE /token/': 'token:write',
      'GET /audit/': 'audit:read',
      'POST /oauth/revoke': 'token:write',
      'GET /webhook/': 'webhook:read',
      'POST /webhook/{id}/secret': 'webhook:write',
    });
  });

  test('the public operations answer without a token', async () => {
    for (const name of Object.keys(PUBLIC)) {
      const [method, path] = name.split(' ');
      const res = await svc.request(method, path, { token: null });
      expect({ name, status: res.status }).toEqual({ name, status: 200 });
    }
  });

  test('the faulty calls are refused even with every permission, and change nothing', async () => {
    // Otherwise the denial matrix would not show that authorization comes before validation.
    const before = await svc.snapshot();
    for (const route of COVERED) {
      for (const unparseable of [false, true]) {
        // Apply ignores its body (any JSON, SPEC §4): only the unparseable one is refused.
        if (!unparseable && route.path.startsWith('/apply/')) continue;
        const call = faultyCall(route, unparseable);
        const res = await send(svc, call, `Bearer ${svc.adminToken}`);
        const label = `${call[0]} ${call[1]}${unparseable ? ' (unparseable body)' : ''}`;
        expect({ label, refused: [400, 404].includes(res.status), code: res.body?.code }).toEqual({ label, refused: true, code: res.status });
      }
    }
    expect(await svc.snapshot()).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------
// 401: missing, malformed, unknown, expired, revoked tokens, tokens of deleted users.
// ---------------------------------------------------------------------------------------------

describe('401 for every route and every bad credential; nothing is written', () => {
  test.each(COVERED.map((r) => [r.name, r] as const))('%s', async (_name, route) => {
    const before = await svc.snapshot();
    for (const credential of badCredentials) {
      const calls = [
        ['well-formed call', validCall(route, fixture)],
        ['faulty call', faultyCall(route, false)],
        ['unparseable body', faultyCall(route, true)],
      ] as const;
      for (const [kind, call] of calls) {
        const label = `${credential.label}, ${kind}`;
        const res = await send(svc, call, credential.header);
        expect(denial(label, res)).toEqual(expectedDenial(label, 401, credential.wwwAuthenticate, res.headers.get('x-request-id')));
      }
    }
    expect(await svc.snapshot()).toEqual(before);
  });

  test('the error message and the log never carry a bearer value', async () => {
    const secret = uniq('secret-bearer');
    const res = await send(svc, ['GET', '/user/', {}], `Bearer ${secret}`);
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
function lackingScopes(needed: Permission, vocabulary = VOCABULARY): string[] {
  const [resource, action] = needed.split(':');
  const permissions = [...vocabulary.permissions];
  const resources = new Set(permissions.map((p) => p.split(':')[0]));
  const everythingElse = [...permissions.filter((p) => p !== needed), ...[...resources].filter((r) => r !== resource).map((r) => `${r}:*`)].join(' ');
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

/**
 * The calls a token without the permission is refused on. A route's own permission is checked
 * before its input is parsed, so 403 comes before any 400 or 404; a service that checks it itself
 * does so once it has the input, so only its well-formed call is a 403 (SPEC §2 orders 401 before
 * 403, and says nothing of 403 and 400 there).
 */
const refusedCalls = (route: Route, f: Fixture) =>
  route.checkedBy === 'route'
    ? ([
        ['well-formed call', validCall(route, f)],
        ['absent ids / wrong body shape / bad page size', faultyCall(route, false)],
      ] as const)
    : ([['well-formed call', validCall(route, f)]] as const);

describe('403 for a valid token without the permission; nothing is written', () => {
  test.each(PERMISSIONED.map((r) => [r.name, r.needs, r] as const))('%s needs %s', async (_name, needed, route) => {
    const scopes = lackingScopes(needed);
    const tokens = await Promise.all(scopes.map((scope) => tokenFor(scope)));
    const before = await svc.snapshot();
    for (const [i, scope] of scopes.entries()) {
      for (const [kind, call] of refusedCalls(route, fixture)) {
        const label = `scope ${JSON.stringify(scope)}, ${kind}`;
        const res = await send(svc, call, `Bearer ${tokens[i]}`);
        expect(denial(label, res)).toEqual(expectedDenial(label, 403, insufficientScope(needed), res.headers.get('x-request-id')));
      }
    }
    expect(await svc.snapshot()).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------
// The positive side: the exact permission, its resource wildcard, `*`, and scope word parsing.
// ---------------------------------------------------------------------------------------------

function grantingScopes(needed: Permission | null): string[] {
  // Any valid token: one without a word of this service's, an unrelated one, everything.
  if (needed === null) return ['', 'openid profile', '*'];
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
  test.each(COVERED.map((r) => [r.name, r.needs ?? 'any valid token', r] as const))('%s with %s', async (_name, _needs, route) => {
    const example = SUCCESS[route.name];
    for (const scope of grantingScopes(route.needs!)) {
      const token = await tokenFor(scope);
      const f = await makeFixture({ deleted: example?.onDeleted }); // routes that write (or delete) get records of their own
      const res = await send(svc, validCall(route, f), `Bearer ${token}`);
      const label = `scope ${JSON.stringify(scope)}`;
      if (!example) {
        expect(passed(label, res)).toEqual(expectedPass(label));
        continue;
      }
      expect({
        label,
        status: res.status,
        wwwAuthenticate: res.headers.get('www-authenticate'),
        text: res.status === example.success ? '' : res.text,
        body: res.body,
      }).toEqual({ label, status: example.success, wwwAuthenticate: null, text: '', body: answerOf(example, f) });
    }
  });

  test('a resource wildcard grants nothing on the other resources', async () => {
    for (const resource of RESOURCES) {
      const token = await tokenFor(`${resource}:*`);
      const before = await svc.snapshot();
      for (const route of PERMISSIONED.filter((r) => !r.needs.startsWith(`${resource}:`))) {
        const res = await send(svc, validCall(route, fixture), `Bearer ${token}`);
        const label = `${resource}:* on ${route.name}`;
        expect(denial(label, res)).toEqual(expectedDenial(label, 403, insufficientScope(route.needs), res.headers.get('x-request-id')));
      }
      expect(await svc.snapshot()).toEqual(before);
    }
  });

  test('read does not grant write and write does not grant read', async () => {
    for (const route of PERMISSIONED) {
      const [resource, action] = route.needs.split(':');
      const sibling = `${resource}:${action === 'read' ? 'write' : 'read'}`;
      const res = await send(svc, validCall(route, fixture), `Bearer ${await tokenFor(sibling)}`);
      const label = `${sibling} on ${route.name}`;
      expect({ label, status: res.status, www: res.headers.get('www-authenticate') }).toEqual({ label, status: 403, www: insufficientScope(route.needs) });
    }
  });

  test('a token that expires in the future is valid', async () => {
    const token = await svc.tokenWith('user:read', { expireAt: new Date(Date.now() + 3_600_000).toISOString() });
    expect((await send(svc, ['GET', '/user/', {}], `Bearer ${token}`)).status).toBe(200);
  });

  test('the scheme name is case-insensitive and the value exact', async () => {
    const token = await tokenFor('user:read');
    expect((await send(svc, ['GET', '/user/', {}], `bearer ${token}`)).status).toBe(200);
    expect((await send(svc, ['GET', '/user/', {}], `BEARER ${token}`)).status).toBe(200);
    expect((await send(svc, ['GET', '/user/', {}], `Bearer ${token.toUpperCase()}`)).status).toBe(401);
  });
});

// ---------------------------------------------------------------------------------------------
// A module registered beside src/modules.ts's (test/support/group/) is in the matrix with no edit.
// ---------------------------------------------------------------------------------------------

describe('a module registered beside the others has its routes in the matrix without an edit', () => {
  const modules = [...MODULES, group];
  const shipped = new Set(ROUTES.map((r) => r.name));
  const added = routeTable(modules).filter((r) => !shipped.has(r.name));

  let withGroup: TestService;
  beforeAll(async () => {
    withGroup = await startTestService({}, { modules });
  });
  afterAll(async () => {
    await withGroup?.stop();
  });

  test('the table is derived from the module list', () => {
    expect(added.map((r) => [r.name, r.needs, r.checkedBy])).toEqual([
      ['GET /group/', 'group:read', 'route'],
      ['POST /group/', 'group:write', 'route'],
      ['GET /group/{id}', 'group:read', 'route'],
      ['PUT /group/{id}', 'group:write', 'route'],
      ['PATCH /group/{id}', 'group:write', 'route'],
      ['DELETE /group/{id}', 'group:write', 'route'],
      ['POST /group/{id}/restore', 'group:write', 'route'],
    ]);
    // Its scope joins the vocabulary the 403 scopes are drawn from.
    expect([...scopeVocabulary(modules).permissions]).toEqual([...PERMISSIONS, 'group:read', 'group:write']);
  });

  test.each(added.map((r) => [r.name, r] as const))('%s: 401 without a valid token, 403 without its permission, through with it', async (_name, route) => {
    const f: Fixture = { ids: {}, deleted: {}, tokenValue: '', owner: 0 };
    const needed = route.needs as Permission;
    const lacking = lackingScopes(needed, scopeVocabulary(modules));
    const tokens = await Promise.all(lacking.map((scope) => withGroup.tokenWith(scope)));
    const groups = () => withGroup.sql('select * from groups order by id');
    const before = { tables: await withGroup.snapshot(), groups: await groups() };
    for (const [label, header, www] of [
      ['no Authorization header', null, 'Bearer'],
      ['unknown token', `Bearer ${uniq('unknown')}`, INVALID_TOKEN],
    ] as const) {
      const res = await send(withGroup, validCall(route, f), header);
      expect(denial(label, res)).toEqual(expectedDenial(label, 401, www, res.headers.get('x-request-id')));
    }
    for (const [i, scope] of lacking.entries()) {
      for (const [kind, call] of refusedCalls(route, f)) {
        const label = `scope ${JSON.stringify(scope)}, ${kind}`;
        const res = await send(withGroup, call, `Bearer ${tokens[i]}`);
        expect(denial(label, res)).toEqual(expectedDenial(label, 403, insufficientScope(needed), res.headers.get('x-request-id')));
      }
    }
    expect({ tables: await withGroup.snapshot(), groups: await groups() }).toEqual(before);
    for (const scope of grantingScopes(needed)) {
      const res = await send(withGroup, validCall(route, f), `Bearer ${await withGroup.tokenWith(scope)}`);
      expect(passed(`scope ${JSON.stringify(scope)}`, res)).toEqual(expectedPass(`scope ${JSON.stringify(scope)}`));
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Revocation and expiry take effect on the very next request.
// ---------------------------------------------------------------------------------------------

describe('revoking or expiring a token takes effect on the next request', () => {
  const works = async (token: string) => (await send(svc, ['GET', '/user/', {}], `Bearer ${token}`)).status;

  test('DELETE /token/{id} by another caller', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    expect(await svc.request('DELETE', `/token/${(await tokenRow(token)).id}`)).toMatchObject({ status: 200, body: 1 });
    const res = await send(svc, ['GET', '/user/', {}], `Bearer ${token}`);
    expect(denial('revoked', res)).toEqual(expectedDenial('revoked', 401, INVALID_TOKEN, res.headers.get('x-request-id')));
  });

  test('a token deleting itself', async () => {
    const token = await svc.tokenWith('user:read token:write');
    const { id } = await tokenRow(token);
    expect(await send(svc, ['DELETE', `/token/${id}`, {}], `Bearer ${token}`)).toMatchObject({ status: 200, body: 1 });
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
    const res = await send(svc, ['GET', '/user/', {}], `Bearer ${token}`);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe(insufficientScope('user:read'));
  });
});
