import {
  COVERED,
  CHECKED_BY_SERVICE,
  INVALID_TOKEN,
  PERMISSIONED,
  ROUTES,
  SUCCESS,
  denial,
  expectedDenial,
  faultyCall,
  insufficientScope,
  lackingScopes,
  makeFixture,
  refusedCalls,
  send,
  tokenFor,
  tokenRow,
  validCall,
  uniq,
  type Fixture,
} from '../support/authorization.js';
import { svc, useService } from '../support/service.js';

/**
 * The authorization matrix of SPEC §2, its denials: every REST route against every kind of bad
 * credential (401) and against valid tokens that lack the route's permission (403); the grants are
 * test/auth/granted.test.ts. Failing requests must change nothing: each denial is checked against a
 * snapshot of every table (and of the id sequences, so that a refused "apply id" does not burn an
 * id).
 *
 * The routes are the route table the application mounts (test/support/authorization.ts: src/app.ts's
 * `apiRoutes` over src/modules.ts), so that a new module's routes are in the matrix without an edit;
 * every operation the service serves is judged, or listed below as public with the reason.
 */

useService();

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
  fixture = await makeFixture(svc, { deleted: true });

  // Each of these tokens has scope "*", so only its credential state can be the reason for a 401.
  const expired = await svc.tokenWith('*', { expireAt: new Date(Date.now() - 60_000).toISOString() });

  const ownerDeleted = await svc.tokenWith('*');
  const ownerDeletedRow = await tokenRow(svc, ownerDeleted);
  expect((await svc.request('GET', '/user/', { token: ownerDeleted })).status).toBe(200);
  expect(await svc.request('DELETE', `/user/${ownerDeletedRow.userId}`)).toMatchObject({ status: 200, body: 1 });

  // The owning user is marked deleted while the token row itself stays live (no cascade involved).
  const ownerRowDeleted = await svc.tokenWith('*');
  const ownerRowDeletedRow = await tokenRow(svc, ownerRowDeleted);
  expect((await svc.request('GET', '/user/', { token: ownerRowDeleted })).status).toBe(200);
  await svc.sql('update users set deleted_at = now() where id = ?', [ownerRowDeletedRow.userId]);

  const revoked = await svc.tokenWith('*');
  expect((await svc.request('GET', '/user/', { token: revoked })).status).toBe(200);
  expect(await svc.request('DELETE', `/token/${(await tokenRow(svc, revoked)).id}`)).toMatchObject({ status: 200, body: 1 });

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

describe('403 for a valid token without the permission; nothing is written', () => {
  test.each(PERMISSIONED.map((r) => [r.name, r.needs, r] as const))('%s needs %s', async (_name, needed, route) => {
    const scopes = lackingScopes(needed);
    const tokens = await Promise.all(scopes.map((scope) => tokenFor(svc, scope)));
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
// Revocation and expiry take effect on the very next request.
// ---------------------------------------------------------------------------------------------

describe('revoking or expiring a token takes effect on the next request', () => {
  const works = async (token: string) => (await send(svc, ['GET', '/user/', {}], `Bearer ${token}`)).status;

  test('DELETE /token/{id} by another caller', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    expect(await svc.request('DELETE', `/token/${(await tokenRow(svc, token)).id}`)).toMatchObject({ status: 200, body: 1 });
    const res = await send(svc, ['GET', '/user/', {}], `Bearer ${token}`);
    expect(denial('revoked', res)).toEqual(expectedDenial('revoked', 401, INVALID_TOKEN, res.headers.get('x-request-id')));
  });

  test('a token deleting itself', async () => {
    const token = await svc.tokenWith('user:read token:write');
    const { id } = await tokenRow(svc, token);
    expect(await send(svc, ['DELETE', `/token/${id}`, {}], `Bearer ${token}`)).toMatchObject({ status: 200, body: 1 });
    expect(await works(token)).toBe(401);
    const [row] = await svc.sql<{ deleted: boolean }>('select deleted_at is not null as deleted from tokens where id = ?', [id]);
    expect(row.deleted).toBe(true);
  });

  test('PATCH expireAt into the past', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    const past = new Date(Date.now() - 1_000).toISOString();
    expect(await svc.request('PATCH', `/token/${(await tokenRow(svc, token)).id}`, { body: { expireAt: past } })).toMatchObject({ status: 200, body: 1 });
    expect(await works(token)).toBe(401);
  });

  test('DELETE /user/{id} of the owner', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    expect(await svc.request('DELETE', `/user/${(await tokenRow(svc, token)).userId}`)).toMatchObject({ status: 200, body: 1 });
    expect(await works(token)).toBe(401);
  });

  test('narrowing the scope: PATCH scope takes effect at once (403 next)', async () => {
    const token = await svc.tokenWith('user:read');
    expect(await works(token)).toBe(200);
    expect(await svc.request('PATCH', `/token/${(await tokenRow(svc, token)).id}`, { body: { scope: 'role:read' } })).toMatchObject({ status: 200, body: 1 });
    const res = await send(svc, ['GET', '/user/', {}], `Bearer ${token}`);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe(insufficientScope('user:read'));
  });
});
