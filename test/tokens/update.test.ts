import { type RequestOptions } from '../support/service.js';
import {
  svc,
  ISO_UTC_MS,
  secrets,
  newAccessToken,
  call,
  expectCreated,
  expectOne,
  makeUser,
  getToken,
  makeToken,
  applyTokenId,
  callerWith,
  tokensTable,
  reservations,
  failsUnchanged,
  useService,
} from '../support/tokens.js';

/** PUT, PATCH and DELETE /token/{id}, expiry, and the permissions of token writes. */
useService();

describe('PUT /token/{id}', () => {
  test('replaces every writable field (absent → default), keeps id, client and createdAt, bumps version', async () => {
    const created = await makeToken(
      { refreshToken: 'r', scope: 'openid', code: 'c', codeChallenge: 'cc', tokenType: 'Bearer', expireAt: '2031-01-01T00:00:00Z' },
      { headers: { 'X-Client': 'creator' } },
    );
    const otherUser = await makeUser();
    const accessToken = newAccessToken();
    const res = await call('PUT', `/token/${created.id}`, {
      body: { userID: otherUser, accessToken, client: 'forged', version: '42', id: 1 },
      headers: { 'X-Client': 'updater' },
    });
    expectOne(res);
    expect(res.headers.get('vary')).toMatch(/\bPrefer\b/);
    const replaced = await getToken(created.id);
    expect(replaced).toEqual({
      id: created.id,
      userID: otherUser,
      accessToken,
      refreshToken: '',
      scope: '',
      code: '',
      codeChallenge: null,
      tokenType: '',
      expireAt: null,
      client: 'creator',
      version: '2',
      createdAt: created.createdAt,
      updatedAt: expect.stringMatching(ISO_UTC_MS),
    });
    const [row] = await svc.sql<any>('select user_id, refresh_token_cipher, code_challenge, expire_at, version, client from tokens where id = ?', [created.id]);
    expect({ ...row, refresh_token_cipher: svc.open(row.refresh_token_cipher, 'refreshToken') }).toEqual({
      user_id: String(otherUser),
      refresh_token_cipher: '',
      code_challenge: null,
      expire_at: null,
      version: 2,
      client: 'creator',
    });
    expect(replaced.updatedAt >= created.updatedAt).toBe(true);
  });

  test('a PUT that changes nothing leaves version and updatedAt as they are', async () => {
    const created = await makeToken({ scope: 'openid', expireAt: '2031-01-01T01:00:00+01:00' });
    const body = { userID: created.userID, accessToken: created.accessToken, scope: 'openid', expireAt: '2031-01-01T00:00:00.000Z' };
    // Still counted as matched: 1 (SPEC §4), and with Prefer the record as it was.
    expectOne(await call('PUT', `/token/${created.id}`, { body }));
    expect(await getToken(created.id)).toEqual(created);
    const shown = await call('PUT', `/token/${created.id}`, { body, headers: { Prefer: 'return=representation' } });
    expect(shown.status).toBe(200);
    expect(shown.headers.get('preference-applied')).toBe('return=representation');
    expect(shown.body).toEqual(created);
    const [row] = await svc.sql('select version from tokens where id = ?', [created.id]);
    expect(row).toEqual({ version: 1 });
  });

  test('invalid, unknown-user and duplicate bodies fail and change nothing', async () => {
    const created = await makeToken();
    const other = await makeToken();
    const path = `/token/${created.id}`;
    const missing = await failsUnchanged('PUT', path, { body: { userID: created.userID } }, 400);
    expect(missing.body.details).toEqual([{ field: 'accessToken', message: 'is required' }]);
    const wrongType = await failsUnchanged('PUT', path, { body: { userID: created.userID, accessToken: 'x', expireAt: 'yesterday' } }, 400);
    expect(wrongType.body.details).toEqual([{ field: 'expireAt', message: expect.stringContaining('ISO 8601') }]);
    const unknownUser = await failsUnchanged('PUT', path, { body: { userID: 876543210, accessToken: 'x' } }, 400);
    expect(unknownUser.body.details).toEqual([{ field: 'userID', message: expect.any(String) }]);
    const dup = await failsUnchanged('PUT', path, { body: { userID: created.userID, accessToken: other.accessToken } }, 409);
    expect(dup.body.error).toBe('CONFLICT');
    expect((await call('GET', path)).body).toEqual(created);
  });
});

describe('PATCH /token/{id}', () => {
  test('without Attrs changes the fields present in the body and bumps version', async () => {
    const created = await makeToken({ scope: 'openid', tokenType: 'Bearer', refreshToken: 'r1' });
    // With Prefer: return=representation, the patched record.
    const res = await call('PATCH', `/token/${created.id}`, {
      body: { scope: 'openid profile', codeChallenge: 'cc', client: 'forged', version: '9', password: 'p' },
      headers: { Prefer: 'return=representation' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.body).toEqual({
      ...created,
      scope: 'openid profile',
      codeChallenge: 'cc',
      version: '2',
      updatedAt: expect.stringMatching(ISO_UTC_MS),
    });
    expect(await getToken(created.id)).toEqual(res.body);
    // By default, 1.
    const again = await call('PATCH', `/token/${created.id}`, { body: { expireAt: '2032-02-02T02:02:02+02:00' } });
    expectOne(again);
    expect(again.headers.get('preference-applied')).toBeNull();
    expect(await getToken(created.id)).toMatchObject({
      expireAt: '2032-02-02T00:02:02.000Z',
      version: '3',
      scope: 'openid profile',
      refreshToken: 'r1',
    });
    const [row] = await svc.sql('select version, scope, client from tokens where id = ?', [created.id]);
    expect(row).toEqual({ version: 3, scope: 'openid profile', client: created.client });
  });

  test('a PATCH that changes nothing leaves version as it is', async () => {
    const created = await makeToken({ scope: 'openid' });
    expectOne(await call('PATCH', `/token/${created.id}`, { body: { scope: 'openid' } }));
    expect(await getToken(created.id)).toEqual(created);
    expectOne(await call('PATCH', `/token/${created.id}`, { body: {} }));
    expect(await getToken(created.id)).toEqual(created);
    const [row] = await svc.sql('select version from tokens where id = ?', [created.id]);
    expect(row).toEqual({ version: 1 });
  });

  test('with Attrs changes only the named fields (header name and field names in any case)', async () => {
    const created = await makeToken({ scope: 'openid', tokenType: 'Bearer', code: 'c1', codeChallenge: 'cc' });
    const res = await call('PATCH', `/token/${created.id}`, {
      body: { tokenType: 'MAC', scope: 'ignored', code: 'ignored', codeChallenge: null },
      headers: { aTTrs: 'tokenType, codeChallenge' },
    });
    expectOne(res);
    expect(await getToken(created.id)).toMatchObject({ scope: 'openid', code: 'c1', tokenType: 'MAC', codeChallenge: null, version: '2' });
    const [row] = await svc.sql('select scope, code, token_type from tokens where id = ?', [created.id]);
    expect(row).toEqual({ scope: 'openid', code: 'c1', token_type: 'MAC' });

    // Names match the fields case-insensitively, spaces around them ignored.
    expectOne(
      await call('PATCH', `/token/${created.id}`, {
        body: { tokenType: 'DPoP', scope: 'ignored', code: 'c2' },
        headers: { Attrs: '  TokenType ,CODE  ' },
      }),
    );
    expect(await getToken(created.id)).toMatchObject({ scope: 'openid', code: 'c2', tokenType: 'DPoP', codeChallenge: null, version: '3' });
  });

  test('Attrs naming a field the body lacks writes its default ("", null)', async () => {
    const created = await makeToken({ scope: 'openid', code: 'c1', codeChallenge: 'cc', refreshToken: 'r1', expireAt: '2031-01-01T00:00:00Z' });
    const path = `/token/${created.id}`;
    expectOne(await call('PATCH', path, { body: { scope: 'x' }, headers: { Attrs: 'scope,code,codeChallenge,expireAt' } }));
    expect(await getToken(created.id)).toEqual({
      ...created,
      scope: 'x',
      code: '',
      codeChallenge: null,
      expireAt: null,
      version: '2',
      updatedAt: expect.stringMatching(ISO_UTC_MS),
    });
    const [row] = await svc.sql<any>('select scope, code, code_challenge, expire_at, refresh_token_hmac from tokens where id = ?', [created.id]);
    expect(row).toEqual({ scope: 'x', code: '', code_challenge: null, expire_at: null, refresh_token_hmac: svc.hmac('r1', 'refreshToken') });
  });

  test('Attrs naming a field the body lacks whose default that field refuses (userID 0, accessToken "") is a 400 and changes nothing', async () => {
    const created = await makeToken({ scope: 'openid' });
    const path = `/token/${created.id}`;
    for (const name of ['userID', 'accessToken']) {
      const res = await failsUnchanged('PATCH', path, { body: { scope: 'x' }, headers: { Attrs: `scope,${name}` } }, 400);
      expect(res.body.details).toEqual([{ field: name, message: expect.any(String) }]);
    }
    expect(await getToken(created.id)).toEqual(created);
  });

  test('Attrs: read-only names are skipped (in any case), unknown names are a 400 and change nothing', async () => {
    const created = await makeToken({ scope: 'openid' }, { headers: { 'X-Client': 'original' } });
    const path = `/token/${created.id}`;
    for (const name of ['nonsense', 'scopes', 'deleted']) {
      const res = await failsUnchanged('PATCH', path, { body: { scope: 'x', [name]: 'y' }, headers: { Attrs: `scope,${name}` } }, 400);
      expect(res.body.error).toBe('BAD_REQUEST');
      expect(res.body.details).toEqual([{ field: 'Attrs', message: expect.stringContaining(name) }]);
    }
    const readOnly = ['client', 'version', 'id', 'password', 'rememberToken', 'createdAt', 'UpdatedAt', 'ID'];
    for (const name of readOnly) {
      const scope = `scope-${name}`;
      expectOne(
        await call('PATCH', path, {
          body: { scope, [name]: name === 'id' || name === 'ID' ? 1 : '2000-01-01T00:00:00Z' },
          headers: { Attrs: `scope, ${name}` },
        }),
      );
      const record = await getToken(created.id);
      expect(record).toMatchObject({ id: created.id, scope, client: 'original', createdAt: created.createdAt });
      expect(record.updatedAt).not.toBe('2000-01-01T00:00:00.000Z');
    }
    expect((await getToken(created.id)).version).toBe(String(1 + readOnly.length));
    // Only read-only names: nothing is written, still 1.
    const before = await tokensTable();
    expectOne(await call('PATCH', path, { body: { scope: 'never', client: 'forged' }, headers: { Attrs: 'client,version' } }));
    expect(await tokensTable()).toEqual(before);
  });

  test('invalid values, unknown users and duplicates fail and change nothing', async () => {
    const created = await makeToken();
    const other = await makeToken();
    const path = `/token/${created.id}`;
    const cases: [Record<string, unknown>, string][] = [
      [{ expireAt: '2026-11-21' }, 'expireAt'],
      [{ expireAt: '2026-02-30T00:00:00Z' }, 'expireAt'],
      [{ expireAt: 'yesterday' }, 'expireAt'],
      [{ accessToken: 'x'.repeat(1025) }, 'accessToken'],
      [{ scope: 's'.repeat(256) }, 'scope'],
      [{ userID: 'one' }, 'userID'],
      [{ accessToken: null }, 'accessToken'],
      [{ scope: 7 }, 'scope'],
      [{ userID: 876543210 }, 'userID'],
    ];
    for (const [body, field] of cases) {
      const res = await failsUnchanged('PATCH', path, { body }, 400);
      expect(res.body.details).toEqual([{ field, message: expect.any(String) }]);
    }
    const deletedUser = await makeUser('Gone');
    expectOne(await call('DELETE', `/user/${deletedUser}`));
    const toDeleted = await failsUnchanged('PATCH', path, { body: { userID: deletedUser } }, 400);
    expect(toDeleted.body.details).toEqual([{ field: 'userID', message: expect.any(String) }]);
    const dup = await failsUnchanged('PATCH', path, { body: { accessToken: other.accessToken } }, 409);
    expect(dup.body.error).toBe('CONFLICT');
    await failsUnchanged('PATCH', '/token/987654321', { body: { scope: 'x' } }, 404);
  });
});

describe('DELETE /token/{id}', () => {
  test('soft-deletes: 200 and 1, gone from reads, row kept with deleted_at, second delete 404', async () => {
    const created = await makeToken();
    const res = await call('DELETE', `/token/${created.id}`);
    expectOne(res);
    expect(res.body).toBe(1);
    const [row] = await svc.sql<{ deleted: boolean; access_token_hmac: Buffer }>(
      'select deleted_at is not null as deleted, access_token_hmac from tokens where id = ?',
      [created.id],
    );
    expect(row).toEqual({ deleted: true, access_token_hmac: svc.hmac(created.accessToken) });
    expect((await call('GET', `/token/${created.id}`)).status).toBe(404);
    await failsUnchanged('DELETE', `/token/${created.id}`, {}, 404);
    await failsUnchanged('PUT', `/token/${created.id}`, { body: { userID: created.userID, accessToken: newAccessToken() } }, 404);
    await failsUnchanged('PATCH', `/token/${created.id}`, { body: { scope: 'x' } }, 404);
    await failsUnchanged('DELETE', '/token/987654321', {}, 404);
  });

  test('Prefer: return=representation does not change what a delete answers', async () => {
    const created = await makeToken();
    expectOne(await call('DELETE', `/token/${created.id}`, { headers: { Prefer: 'return=representation' } }));
    expect((await call('GET', `/token/${created.id}`)).status).toBe(404);
  });

  test('a deleted token stops authenticating on the very next request', async () => {
    const caller = await callerWith('token:read');
    expect((await call('GET', `/token/${caller.id}`, { token: caller.token })).status).toBe(200);
    expectOne(await call('DELETE', `/token/${caller.id}`));
    const res = await call('GET', `/token/${caller.id}`, { token: caller.token });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: 401, error: 'UNAUTHORIZED' });
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  test('a token can delete itself, and is refused on the next request', async () => {
    const caller = await callerWith('token:write');
    expectOne(await call('DELETE', `/token/${caller.id}`, { token: caller.token }));
    expect((await call('POST', '/apply/token/id/', { token: caller.token })).status).toBe(401);
  });
});

describe('expiry', () => {
  test('a token whose expireAt is past is a 401 invalid_token', async () => {
    const expired = await svc.tokenWith('*', { expireAt: '2020-01-01T00:00:00Z' });
    secrets.push(expired);
    const res = await call('GET', '/token/', { token: expired });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(res.body).toMatchObject({ code: 401, error: 'UNAUTHORIZED', requestId: expect.any(String) });
    const valid = await svc.tokenWith('token:read', { expireAt: '2999-01-01T00:00:00+05:00' });
    secrets.push(valid);
    expect((await call('GET', '/token/', { token: valid })).status).toBe(200);
  });

  test('setting expireAt in the past takes effect on the next request', async () => {
    const caller = await callerWith('token:read');
    expect((await call('GET', '/token/', { token: caller.token })).status).toBe(200);
    expectOne(await call('PATCH', `/token/${caller.id}`, { body: { expireAt: '2000-01-01T00:00:00+00:00' } }));
    expect((await getToken(caller.id)).expireAt).toBe('2000-01-01T00:00:00.000Z');
    const res = await call('GET', '/token/', { token: caller.token });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });
});

describe('permissions', () => {
  test('reads need token:read, writes token:write (403 insufficient_scope, nothing changed)', async () => {
    const target = await makeToken();
    const userReader = await callerWith('user:read user:write');
    const reader = await callerWith('token:read');
    for (const path of ['/token/', `/token/${target.id}`]) {
      const res = await call('GET', path, { token: userReader.token });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 403, error: 'FORBIDDEN' });
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="token:read"');
    }
    const body = { userID: target.userID, accessToken: newAccessToken() };
    const writes: [string, string, RequestOptions][] = [
      ['POST', '/token/', { body }],
      ['PUT', `/token/${target.id}`, { body }],
      ['PATCH', `/token/${target.id}`, { body: { scope: 'x' } }],
      ['DELETE', `/token/${target.id}`, {}],
    ];
    for (const [method, path, options] of writes) {
      const res = await failsUnchanged(method, path, { ...options, token: reader.token }, 403);
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="token:write"');
    }
  });

  test('no token is a 401 with a plain Bearer challenge', async () => {
    const res = await failsUnchanged('POST', '/token/', { token: null, body: { userID: 1, accessToken: 'x' } }, 401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    const unknown = await failsUnchanged('GET', '/token/', { token: 'no-such-token' }, 401);
    expect(unknown.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  describe('a caller cannot grant scopes it does not hold', () => {
    test.each(['token:read', 'token:write', 'token:read token:write', 'openid profile', 'openid token:read email', ''])(
      '"token:write token:read" may create a token with scope %j',
      async (scope) => {
        const caller = await callerWith('token:write token:read');
        const res = await call('POST', '/token/', { token: caller.token, body: { userID: caller.userID, accessToken: newAccessToken(), scope } });
        expect((await getToken(expectCreated(res, '/token/'))).scope).toBe(scope);
      },
    );

    test.each(['*', 'user:write', 'user:read', 'token:*', 'openid user:read', 'token:read application:write', 'role:*'])(
      '"token:write token:read" may not create a token with scope %j (403, nothing stored)',
      async (scope) => {
        const caller = await callerWith('token:write token:read');
        const res = await failsUnchanged(
          'POST',
          '/token/',
          { token: caller.token, body: { userID: caller.userID, accessToken: newAccessToken(), scope } },
          403,
        );
        expect(res.body.error).toBe('FORBIDDEN');
      },
    );

    test('nor raise a scope with PUT or PATCH, nor create one on a reserved id', async () => {
      const caller = await callerWith('token:write token:read');
      const target = await makeToken({ userID: caller.userID, scope: 'token:read' });
      const path = `/token/${target.id}`;
      await failsUnchanged('PATCH', path, { token: caller.token, body: { scope: 'token:read user:read' } }, 403);
      await failsUnchanged('PATCH', path, { token: caller.token, body: { scope: '*' }, headers: { Attrs: 'scope' } }, 403);
      await failsUnchanged('PUT', path, { token: caller.token, body: { userID: caller.userID, accessToken: target.accessToken, scope: 'user:write' } }, 403);
      // Its own token, too: token:write is no way to raise one's own rights.
      await failsUnchanged('PATCH', `/token/${caller.id}`, { token: caller.token, body: { scope: '*' } }, 403);
      const id = await applyTokenId({ token: caller.token });
      await failsUnchanged('PUT', `/token/${id}`, { token: caller.token, body: { userID: caller.userID, accessToken: newAccessToken(), scope: '*' } }, 403);
      expect(await reservations()).toContainEqual({ id: String(id) });

      expectOne(await call('PATCH', path, { token: caller.token, body: { scope: 'openid token:read' } }));
      expect((await getToken(target.id)).scope).toBe('openid token:read');
    });

    test('wildcards: "token:*" may grant token:* and token:read but not user:read; "*" may grant anything', async () => {
      const wild = await callerWith('token:*');
      for (const scope of ['token:*', 'token:read token:write']) {
        const res = await call('POST', '/token/', { token: wild.token, body: { userID: wild.userID, accessToken: newAccessToken(), scope } });
        expect((await getToken(expectCreated(res, '/token/'))).scope).toBe(scope);
      }
      await failsUnchanged('POST', '/token/', { token: wild.token, body: { userID: wild.userID, accessToken: newAccessToken(), scope: 'user:read' } }, 403);
      await failsUnchanged('POST', '/token/', { token: wild.token, body: { userID: wild.userID, accessToken: newAccessToken(), scope: '*' } }, 403);
      const admin = await call('POST', '/token/', { body: { userID: wild.userID, accessToken: newAccessToken(), scope: '* user:write role:*' } });
      expect((await getToken(expectCreated(admin, '/token/'))).scope).toBe('* user:write role:*');
    });
  });
});

describe('secrets', () => {
  test('no access token sent in these tests appears in a log line', () => {
    expect(secrets.length).toBeGreaterThan(20);
    const logs = svc.logLines.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(logs.includes(secret)).toBe(false);
    expect(logs.includes(svc.adminToken)).toBe(false);
  });
});

describe('tokens stronger than the caller', () => {
  test('a token:write caller cannot change or revoke a token carrying scopes it does not hold', async () => {
    const manager = await callerWith('token:read token:write');
    const admin = await makeToken({ scope: '*' });
    const wide = await makeToken({ scope: 'user:write' });
    for (const target of [admin, wide]) {
      await failsUnchanged('PATCH', `/token/${target.id}`, { token: manager.token, body: { accessToken: newAccessToken() } }, 403);
      await failsUnchanged(
        'PUT',
        `/token/${target.id}`,
        { token: manager.token, body: { userID: target.userID, accessToken: newAccessToken(), scope: 'token:read' } },
        403,
      );
      await failsUnchanged('DELETE', `/token/${target.id}`, { token: manager.token }, 403);
    }
    // The stronger token still works as before.
    expect((await call('GET', '/user/', { token: admin.accessToken })).status).toBe(200);
  });

  test('a token:write caller can still manage tokens within its own rights', async () => {
    const manager = await callerWith('token:read token:write');
    const narrow = await makeToken({ scope: 'token:read openid' });
    expectOne(await call('PATCH', `/token/${narrow.id}`, { token: manager.token, body: { scope: 'token:write' } }));
    expect((await getToken(narrow.id)).scope).toBe('token:write');
    expectOne(await call('DELETE', `/token/${narrow.id}`, { token: manager.token }));
    expect((await call('GET', `/token/${narrow.id}`)).status).toBe(404);
  });
});
