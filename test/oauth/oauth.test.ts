import { randomBytes } from 'node:crypto';
import { startTestService, type Reply, type TestService } from '../support/service.js';
import { createToken, createUser } from '../support/users.js';

/**
 * SPEC §9: RFC 7662 introspection, RFC 7009 revocation, the original's GET /authorize/{applicationID}/
 * and bulk revoke by filter (REST and GraphQL).
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const value = () => `tp-${randomBytes(12).toString('hex')}`;
/** A user of this file's tests, and a token of it (by default a bearer token with `user:read`). */
const user = (lastName = 'Platform') => createUser(svc, { firstName: 'Ada', lastName });
const token = (userID: number, fields: Record<string, unknown> = {}) =>
  createToken(svc, userID, { accessToken: value(), scope: 'user:read', tokenType: 'bearer', ...fields });
const form = (fields: Record<string, string>) => ({
  rawBody: new URLSearchParams(fields).toString(),
  headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
});
const introspect = (tokenValue: string, caller?: string) => svc.request('POST', '/oauth/introspect', { ...form({ token: tokenValue }), token: caller });

describe('POST /oauth/introspect (RFC 7662)', () => {
  test('a live token: active, with scope, client_id, username, sub, exp, iat and token_type; form or JSON', async () => {
    const owner = await user('Lovelace');
    const live = await token(owner, { expireAt: '2099-01-01T00:00:00Z' });
    const res = await introspect(live.accessToken);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({
      active: true,
      scope: 'user:read',
      client_id: expect.any(String),
      username: 'Ada Lovelace',
      sub: String(owner),
      exp: Date.parse('2099-01-01T00:00:00Z') / 1000,
      iat: expect.any(Number),
      token_type: 'bearer',
    });
    expect(Math.abs(res.body.iat - Date.now() / 1000)).toBeLessThan(60);
    const json = await svc.request('POST', '/oauth/introspect', { body: { token: live.accessToken } });
    expect(json.body).toEqual(res.body);
  });

  test('active: false for every token that is not live: unknown, expired, deleted, its user deleted; never a 404', async () => {
    const owner = await user();
    const expired = await token(owner, { expireAt: '2001-01-01T00:00:00Z' });
    const deleted = await token(owner);
    await svc.request('DELETE', `/token/${deleted.id}`);
    const orphanOwner = await user();
    const orphan = await token(orphanOwner);
    await svc.request('DELETE', `/user/${orphanOwner}`);
    for (const tokenValue of [value(), expired.accessToken, deleted.accessToken, orphan.accessToken]) {
      const res = await introspect(tokenValue);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { active: false } });
    }
  });

  test('needs token:read; a missing token parameter is a 400; a non-form, non-JSON body a 415', async () => {
    const reader = await svc.tokenWith('user:read');
    const probe = await token(await user());
    expect((await introspect(probe.accessToken, reader)).status).toBe(403);
    const missing = await svc.request('POST', '/oauth/introspect', form({ token_type_hint: 'access_token' }));
    expect(missing.status).toBe(400);
    expect(missing.body.details[0].field).toBe('token');
    expect((await svc.request('POST', '/oauth/introspect', { rawBody: 'token=x', headers: { 'Content-Type': 'text/plain' } })).status).toBe(415);
    expect((await svc.request('POST', '/oauth/introspect', { token: null, ...form({ token: probe.accessToken }) })).status).toBe(401);
  });
});

describe('POST /oauth/revoke (RFC 7009)', () => {
  test('revokes a token: the next request with it is a 401; revoking again is still a 200', async () => {
    const victim = await token(await user());
    expect((await svc.request('GET', '/user/', { token: victim.accessToken })).status).toBe(200);
    const res = await svc.request('POST', '/oauth/revoke', form({ token: victim.accessToken }));
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { revoked: 1 } });
    expect((await svc.request('GET', '/user/', { token: victim.accessToken })).status).toBe(401);
    const [row] = await svc.sql<{ deleted_at: unknown }>('select deleted_at from tokens where id = ?', [victim.id]);
    expect(row.deleted_at).not.toBeNull();
    expect((await svc.request('POST', '/oauth/revoke', form({ token: victim.accessToken }))).body).toEqual({ revoked: 0 });
    expect((await svc.request('POST', '/oauth/revoke', form({ token: value() }))).status).toBe(200);
  });

  test('a token may revoke itself without token:write, but no other token', async () => {
    const own = await svc.tokenWith('user:read');
    const other = await token(await user());
    const before = await svc.snapshot();
    const refused = await svc.request('POST', '/oauth/revoke', { ...form({ token: other.accessToken }), token: own });
    expect(refused.status).toBe(403);
    expect((await svc.request('POST', '/oauth/revoke', { ...form({ token: value() }), token: own })).status).toBe(403); // no existence oracle
    expect(await svc.snapshot()).toEqual(before);
    const self = await svc.request('POST', '/oauth/revoke', { body: { token: own }, token: own });
    expect({ status: self.status, body: self.body }).toEqual({ status: 200, body: { revoked: 1 } });
    expect((await svc.request('GET', '/user/', { token: own })).status).toBe(401);
  });

  test('with token:write, a token whose scope the caller could not grant is a 403 and stays', async () => {
    const writer = await svc.tokenWith('token:write');
    const strong = await token(await user(), { scope: 'user:write' });
    expect((await svc.request('POST', '/oauth/revoke', { ...form({ token: strong.accessToken }), token: writer })).status).toBe(403);
    expect((await svc.request('GET', '/user/', { token: strong.accessToken })).status).toBe(403); // user:write alone cannot read, but authenticates
  });
});

describe('GET /authorize/{applicationID}/', () => {
  test('answers the token’s user and its right on the application (0 when not linked)', async () => {
    const owner = await user();
    const endUser = await token(owner);
    const linked = (await svc.request('POST', '/application/', { body: { name: `tp-${value()}` } })).body;
    const unlinked = (await svc.request('POST', '/application/', { body: { name: `tp-${value()}` } })).body;
    await svc.request('POST', `/user/${owner}/application/`, { body: [linked] });
    await svc.request('PUT', `/user/${owner}/application/${linked}`, { body: { right: 2 ** 40 + 3 } });
    const res = await svc.request('GET', `/authorize/${linked}/`, { token: endUser.accessToken });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { userID: owner, userRight: 2 ** 40 + 3 } });
    expect((await svc.request('GET', `/authorize/${unlinked}`, { token: endUser.accessToken })).body).toEqual({ userID: owner, userRight: 0 });
    await svc.request('DELETE', `/user/${owner}/application/`, { body: [linked] });
    expect((await svc.request('GET', `/authorize/${linked}`, { token: endUser.accessToken })).body).toEqual({ userID: owner, userRight: 0 });
  });

  test('401 for an invalid token; 404 for an unknown application; 400 for a malformed id', async () => {
    const endUser = await token(await user());
    expect((await svc.request('GET', '/authorize/1', { token: value() })).status).toBe(401);
    expect((await svc.request('GET', '/authorize/987654321', { token: endUser.accessToken })).status).toBe(404);
    const bad: Reply = await svc.request('GET', '/authorize/abc', { token: endUser.accessToken });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].field).toBe('applicationID');
  });
});

describe('bulk revoke: DELETE /token/?filter=… and destroyTokens(filter)', () => {
  test('revokes the live matches the caller could have granted and counts the others as skipped', async () => {
    const owner = await user();
    const weak = [await token(owner, { scope: 'user:read' }), await token(owner, { scope: 'user:read' })];
    const strong = await token(owner, { scope: 'token:write' });
    const writer = await svc.tokenWith('token:write user:read');
    const other = await token(await user(), { scope: 'user:read' });
    const res = await svc.request('DELETE', `/token/?filter=${encodeURIComponent(`userID eq ${owner}`)}`, { token: writer });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { revoked: 3, skipped: 0 } });
    for (const t of [...weak, strong]) expect((await svc.request('GET', '/user/', { token: t.accessToken })).status).toBe(401);
    expect((await svc.request('GET', '/user/', { token: other.accessToken })).status).toBe(200);
    // Again: nothing live matches any more.
    expect((await svc.request('DELETE', `/token/?filter=${encodeURIComponent(`userID eq ${owner}`)}`)).body).toEqual({ revoked: 0, skipped: 0 });
  });

  test('a token the caller could not have granted is skipped and stays live', async () => {
    const owner = await user();
    const reader = await token(owner, { scope: 'user:read' });
    const admin = await token(owner, { scope: '*' });
    const writer = await svc.tokenWith('token:write user:read');
    const res = await svc.request('DELETE', `/token/?filter=${encodeURIComponent(JSON.stringify({ userID: owner }))}`, { token: writer });
    expect(res.body).toEqual({ revoked: 1, skipped: 1 });
    expect((await svc.request('GET', '/user/', { token: reader.accessToken })).status).toBe(401);
    expect((await svc.request('GET', '/user/', { token: admin.accessToken })).status).toBe(200);
  });

  test('an absent, blank or empty filter is a 400 and revokes nothing; a bad one a 400; token:write needed', async () => {
    const reader = await svc.tokenWith('token:read');
    const before = await svc.snapshot();
    for (const query of ['', '?filter=', '?filter=%20%20', `?filter=${encodeURIComponent('{}')}`, `?filter=${encodeURIComponent('{"and":[{}]}')}`]) {
      const res = await svc.request('DELETE', `/token/${query}`);
      expect({ query, status: res.status, field: res.body.details?.[0]?.field }).toEqual({ query, status: 400, field: 'filter' });
    }
    expect((await svc.request('DELETE', `/token/?filter=${encodeURIComponent('scope like x')}`)).status).toBe(400);
    expect((await svc.request('DELETE', `/token/?filter=${encodeURIComponent('id gt 0')}`, { token: reader })).status).toBe(403);
    expect(await svc.snapshot()).toEqual(before);
  });

  test('GraphQL destroyTokens(filter) does the same; an empty filter is BAD_USER_INPUT', async () => {
    const owner = await user();
    const victims = [await token(owner), await token(owner)];
    const res = await svc.graphql('mutation($f: TokenFilter!) { destroyTokens(filter: $f) { revoked skipped } }', { f: { userID: { eq: String(owner) } } });
    expect(res.body).toEqual({ data: { destroyTokens: { revoked: 2, skipped: 0 } } });
    for (const t of victims) expect((await svc.request('GET', '/user/', { token: t.accessToken })).status).toBe(401);
    const empty = await svc.graphql('mutation { destroyTokens(filter: {}) { revoked } }');
    expect(empty.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
  });
});
