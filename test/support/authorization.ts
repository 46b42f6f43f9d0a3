/**
 * The authorization matrix's parts (test/auth/authorization.test.ts: the denials,
 * test/auth/granted.test.ts: the grants): the route table of the service as the application mounts
 * it, what a successful call of a known route looks like, fixtures, and the shape of a denial.
 *
 * The routes are not listed by hand: they are src/app.ts's `apiRoutes` over the modules (the table
 * the router is built from), each with the permission it declares, so that a new module's routes
 * are in the matrix without an edit. What is listed here is what the table cannot say: the routes
 * whose service checks the permission itself, and what a successful call of a known route answers.
 */
import { apiRoutes } from '../../src/app.js';
import type { Permission } from '../../src/auth/caller.js';
import { Keyring } from '../../src/db/keyring.js';
import type { Method } from '../../src/http/routes.js';
import type { AnyModule } from '../../src/module/module.js';
import { scopeVocabulary } from '../../src/module/registry.js';
import { MODULES } from '../../src/modules.js';
import { createServices } from '../../src/services.js';
import { uniq } from './names.js';
import { tokenFor } from './users.js';
import type { Reply, RequestOptions, TestService } from './service.js';

export { uniq };

// ---------------------------------------------------------------------------------------------
// The route table, from the application: every REST method + path and the permission it needs.
// ---------------------------------------------------------------------------------------------

export interface Route {
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
export const CHECKED_BY_SERVICE: Record<string, { needs: Permission | null; why: string }> = {
  'POST /oauth/introspect': { needs: 'token:read', why: 'RFC 7662 (SPEC §7): the tokens service checks token:read once the body is read' },
  'POST /oauth/revoke': {
    needs: 'token:write',
    why: 'RFC 7009 (SPEC §7): a caller may revoke its own token; another’s needs token:write, which the tokens service checks once it knows whose it is',
  },
  'GET /authorize/{applicationID}/': { needs: null, why: 'SPEC §7: the original family’s authorize needs a valid token and no scope' },
};

/**
 * The routes the router of a service made of these modules serves (below an empty BASE_PATH),
 * each with what it needs. The services only lend their routes' handlers here (none is called),
 * as `npm run openapi` builds the document without a database.
 */
export function routeTable(modules: readonly AnyModule[]): Route[] {
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

export const ROUTES = routeTable(MODULES);
/** The routes the matrix can judge: every route, once the table checks below pass. */
export const COVERED = ROUTES.filter((r) => r.needs !== undefined);
/** Routes that need a permission (the others take any valid token). */
export const PERMISSIONED = COVERED.filter((r): r is Route & { needs: Permission } => r.needs !== null);

export const VOCABULARY = scopeVocabulary(MODULES);
export const PERMISSIONS = [...VOCABULARY.permissions];
export const RESOURCES = [...new Set(PERMISSIONS.map((p) => p.split(':')[0]))];

// ---------------------------------------------------------------------------------------------
// What a successful call of a known route looks like (a route without one is judged only on
// passing authorization: a new module's routes are still in the matrix).
// ---------------------------------------------------------------------------------------------

/** Records a route's path and body refer to, by resource name (the path segment before `{id}`, or `{<name>ID}`). */
export interface Fixture {
  ids: Record<string, number>;
  /** Soft-deleted records, for the restores. */
  deleted: Record<string, number>;
  /** The access token of the fixture's token. */
  tokenValue: string;
  /** The user owning the fixture's token. */
  owner: number;
}

export interface Example {
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
export const webhookBody = () => ({ url: `https://${uniq('hooks')}.example.invalid/`, events: ['user.*'], active: false });

export const SUCCESS: Record<string, Example> = {
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
export const pathOf = (route: Route, ids: Record<string, number>) =>
  route.path.replace(/\{(\w+)\}/g, (_whole, param: string, offset: number) => {
    const resource = param === 'id' ? route.path.slice(0, offset).split('/').filter(Boolean).at(-1)! : param.replace(/ID$/, '');
    return String(ids[resource] ?? ABSENT_ID);
  });

/** A well-formed call of the route on the fixture (a route without an example: its path on the fixture, no body). */
export const validCall = (route: Route, f: Fixture): [string, string, RequestOptions] => {
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
export const faultyCall = (route: Route, unparseable: boolean): [string, string, RequestOptions] => {
  let path = pathOf(route, NO_IDS);
  if (route.method === 'GET' && path.endsWith('/')) path += '?pageSize=ten&filter=(nonsense';
  const options: RequestOptions =
    route.method === 'GET' ? {} : unparseable ? { rawBody: '{"oops', headers: { 'Content-Type': 'application/json' } } : { body: 'not the right shape' };
  return [route.method, path, options];
};

export const answerOf = (example: Example, f: Fixture) => (typeof example.answer === 'function' ? example.answer(f) : example.answer);

// ---------------------------------------------------------------------------------------------
// Fixtures, tokens, and the shape of a denial.
// ---------------------------------------------------------------------------------------------

async function admin(svc: TestService, method: string, path: string, body?: unknown): Promise<any> {
  const res = await svc.request(method, path, body === undefined ? {} : { body });
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${res.text}`);
  return res.body;
}

/** POSTs a record and answers its id (a create answers the new id as a bare number). */
async function createId(svc: TestService, path: string, body: unknown): Promise<number> {
  const id = await admin(svc, 'POST', path, body);
  if (typeof id !== 'number') throw new Error(`POST ${path} answered ${JSON.stringify(id)}, not an id`);
  return id;
}

/** A user, an application, a role, a webhook and a token of another user (the owner), created by the admin. */
async function makeRecords(svc: TestService): Promise<{ ids: Record<string, number>; tokenValue: string; owner: number }> {
  const user = await createId(svc, '/user/', { firstName: 'Target', lastName: uniq('user') });
  const owner = await createId(svc, '/user/', { firstName: 'Owner', lastName: uniq('user') });
  const application = await createId(svc, '/application/', { name: uniq('fixture-app') });
  const role = await createId(svc, '/role/', { name: uniq('fixture-role') });
  const webhook = await createId(svc, '/webhook/', webhookBody());
  const tokenValue = uniq('fixture-token');
  const token = await createId(svc, '/token/', { userID: owner, accessToken: tokenValue, scope: 'openid profile' });
  return { ids: { user, token, application, role, webhook }, tokenValue, owner };
}

/**
 * The records above, the user linked to the application and the role; with `deleted`, a second
 * set soft-deleted (the token's owner stays live: a token of a deleted user cannot be restored).
 */
export async function makeFixture(svc: TestService, { deleted = false } = {}): Promise<Fixture> {
  const { ids, tokenValue, owner } = await makeRecords(svc);
  expect(await admin(svc, 'POST', `/user/${ids.user}/application/`, [ids.application])).toBe(1);
  expect(await admin(svc, 'POST', `/user/${ids.user}/role/`, [ids.role])).toBe(1);
  const gone: Record<string, number> = {};
  if (deleted) {
    const other = await makeRecords(svc);
    for (const [resource, id] of Object.entries(other.ids)) {
      expect(await admin(svc, 'DELETE', `/${resource}/${id}`)).toBe(1);
      gone[resource] = id;
    }
  }
  return { ids, deleted: gone, tokenValue, owner };
}

export { tokenFor };

export async function tokenRow(svc: TestService, accessToken: string): Promise<{ id: number; userId: number }> {
  const [row] = await svc.sql<{ id: string; user_id: string }>('select id, user_id from tokens where access_token_hmac = ?', [svc.hmac(accessToken)]);
  return { id: Number(row.id), userId: Number(row.user_id) };
}

/**
 * The parts of a reply a denial is judged on, labelled so that a failing expectation names the
 * credential and the call that went wrong.
 */
export function denial(label: string, res: Reply) {
  return {
    label,
    status: res.status,
    wwwAuthenticate: res.headers.get('www-authenticate'),
    body: res.body,
    requestIdHeader: res.headers.get('x-request-id'),
  };
}

export function expectedDenial(label: string, status: 401 | 403, wwwAuthenticate: string, requestId: string | null) {
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
export function passed(label: string, res: Reply) {
  return {
    label,
    status: res.status === 401 || res.status === 403 ? res.status : 'neither 401 nor 403',
    wwwAuthenticate: res.headers.get('www-authenticate'),
    error: ['UNAUTHORIZED', 'FORBIDDEN'].includes(res.body?.error) ? res.body.error : 'no authorization error',
  };
}
export const expectedPass = (label: string) => ({ label, status: 'neither 401 nor 403', wwwAuthenticate: null, error: 'no authorization error' });

export const INVALID_TOKEN = 'Bearer error="invalid_token"';
export const insufficientScope = (needed: Permission) => `Bearer error="insufficient_scope", scope="${needed}"`;

export async function send(service: TestService, [method, path, options]: [string, string, RequestOptions], header: string | null): Promise<Reply> {
  const headers = { ...options.headers, ...(header === null ? {} : { Authorization: header }) };
  return service.request(method, path, { ...options, token: null, headers });
}

// ---------------------------------------------------------------------------------------------
// Scopes that grant and scopes that do not.
// ---------------------------------------------------------------------------------------------

/**
 * Scopes that do not grant `needed`: every other permission and every other resource's wildcard
 * at once, nothing at all, and near misses (a comma is not a separator, words match whole).
 */
export function lackingScopes(needed: Permission, vocabulary = VOCABULARY): string[] {
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
export const refusedCalls = (route: Route, f: Fixture) =>
  route.checkedBy === 'route'
    ? ([
        ['well-formed call', validCall(route, f)],
        ['absent ids / wrong body shape / bad page size', faultyCall(route, false)],
      ] as const)
    : ([['well-formed call', validCall(route, f)]] as const);

export function grantingScopes(needed: Permission | null): string[] {
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
