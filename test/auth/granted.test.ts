import type { Permission } from '../../src/auth/caller.js';
import { scopeVocabulary } from '../../src/module/registry.js';
import { MODULES } from '../../src/modules.js';
import group from '../support/group/index.js';
import {
  COVERED,
  INVALID_TOKEN,
  PERMISSIONED,
  PERMISSIONS,
  RESOURCES,
  ROUTES,
  SUCCESS,
  answerOf,
  denial,
  expectedDenial,
  expectedPass,
  grantingScopes,
  insufficientScope,
  lackingScopes,
  makeFixture,
  passed,
  refusedCalls,
  routeTable,
  send,
  tokenFor,
  validCall,
  uniq,
  type Fixture,
} from '../support/authorization.js';
import { startTestService, svc, useService, type TestService } from '../support/service.js';

/**
 * The authorization matrix of SPEC §2, its grants: every REST route with a token holding exactly
 * its permission, its resource's wildcard, `*`, and the permission among other words; no wildcard
 * or sibling permission reaching further. The denials are test/auth/authorization.test.ts; the
 * routes are the route table the application mounts (test/support/authorization.ts), and a module
 * registered beside src/modules.ts's (test/support/group/) is judged here too, with no edit.
 */

useService();

/** The records the refusals below are tried on (they must stay as they are). */
let fixture: Fixture;
beforeAll(async () => {
  fixture = await makeFixture(svc);
});

describe('a token holding the permission passes authorization', () => {
  test.each(COVERED.map((r) => [r.name, r.needs ?? 'any valid token', r] as const))('%s with %s', async (_name, _needs, route) => {
    const example = SUCCESS[route.name];
    for (const scope of grantingScopes(route.needs!)) {
      const token = await tokenFor(svc, scope);
      const f = await makeFixture(svc, { deleted: example?.onDeleted }); // routes that write (or delete) get records of their own
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
      const token = await tokenFor(svc, `${resource}:*`);
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
      const res = await send(svc, validCall(route, fixture), `Bearer ${await tokenFor(svc, sibling)}`);
      const label = `${sibling} on ${route.name}`;
      expect({ label, status: res.status, www: res.headers.get('www-authenticate') }).toEqual({ label, status: 403, www: insufficientScope(route.needs) });
    }
  });

  test('a token that expires in the future is valid', async () => {
    const token = await svc.tokenWith('user:read', { expireAt: new Date(Date.now() + 3_600_000).toISOString() });
    expect((await send(svc, ['GET', '/user/', {}], `Bearer ${token}`)).status).toBe(200);
  });

  test('the scheme name is case-insensitive and the value exact', async () => {
    const token = await tokenFor(svc, 'user:read');
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
