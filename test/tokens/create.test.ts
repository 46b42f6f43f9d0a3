import { randomBytes } from 'node:crypto';
import {
  svc,
  secrets,
  newAccessToken,
  call,
  expectCreated,
  expectOne,
  makeUser,
  getToken,
  makeToken,
  applyTokenId,
  reservations,
  failsUnchanged,
  useService,
} from '../support/tokens.js';
import { recordOf } from '../support/contracts.js';

/** POST /token/: what a token is created with, what is refused, and the answers. */
useService();

describe('POST /token/', () => {
  test('creates a token: 201, Location, the new id; the record has defaults, client from X-Client, version "1"', async () => {
    const userID = await makeUser();
    const accessToken = newAccessToken();
    const res = await call('POST', '/token/', { body: { userID, accessToken }, headers: { 'X-Client': 'my-cli/2.1' } });
    const id = expectCreated(res, '/token/');
    expect(res.headers.get('vary')).toMatch(/\bPrefer\b/);
    expect(res.headers.get('preference-applied')).toBeNull();
    const record = (await call('GET', res.headers.get('location')!)).body;
    expect(record).toEqual(recordOf('token', { id, userID, accessToken, client: 'my-cli/2.1' }));
    expect(record.updatedAt).toBe(record.createdAt);
    const [row] = await svc.sql<any>('select user_id, access_token_hmac, access_token_cipher, client, version, deleted_at from tokens where id = ?', [id]);
    // Stored as a keyed hash and a ciphertext (SPEC §9), never as it is.
    expect({ ...row, access_token_cipher: svc.open(row.access_token_cipher) }).toEqual({
      user_id: String(userID),
      access_token_hmac: svc.hmac(accessToken),
      access_token_cipher: accessToken,
      client: 'my-cli/2.1',
      version: 1,
      deleted_at: null,
    });
    expect(row.access_token_cipher.includes(Buffer.from(accessToken))).toBe(false);
  });

  test('Prefer: return=representation answers the created record; return=minimal the id', async () => {
    const userID = await makeUser();
    const accessToken = newAccessToken();
    const res = await call('POST', '/token/', {
      body: { userID, accessToken, scope: 'openid' },
      headers: { Prefer: 'return=representation', 'X-Client': 'prefers' },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.headers.get('vary')).toMatch(/\bPrefer\b/);
    expect(res.body).toEqual(recordOf('token', { userID, accessToken, scope: 'openid', client: 'prefers' }));
    expect(res.headers.get('location')).toBe(`/token/${res.body.id}`);
    expect(await getToken(res.body.id)).toEqual(res.body);

    const minimal = await call('POST', '/token/', { body: { userID, accessToken: newAccessToken() }, headers: { Prefer: 'return=minimal' } });
    const id = expectCreated(minimal, '/token/');
    expect(minimal.headers.get('preference-applied')).toBe('return=minimal');
    expect(id).toBeGreaterThan(res.body.id);
  });

  test('stores every writable field as given', async () => {
    const userID = await makeUser();
    const body = {
      userID,
      accessToken: newAccessToken(),
      refreshToken: 'refresh-1',
      scope: 'openid profile token:read',
      code: 'code-1',
      codeChallenge: 'challenge-1',
      tokenType: 'Bearer',
      expireAt: '2031-05-06T07:08:09.123Z',
    };
    const id = expectCreated(await call('POST', '/token/', { body }), '/token/');
    expect(await getToken(id)).toMatchObject({ ...body, version: '1' });
  });

  test('client: X-Client, else the product token of User-Agent, else ""', async () => {
    const fromUa = await makeToken({}, { headers: { 'User-Agent': 'curl/8.5.0 (x86_64-pc-linux-gnu) libcurl/8.5.0' } });
    expect(fromUa.client).toBe('curl/8.5.0');
    const both = await makeToken({}, { headers: { 'User-Agent': 'curl/8.5.0', 'X-Client': 'explicit' } });
    expect(both.client).toBe('explicit');
    const none = await makeToken({}, { headers: { 'User-Agent': '' } });
    expect(none.client).toBe('');
    const [row] = await svc.sql('select client from tokens where id = ?', [fromUa.id]);
    expect(row).toEqual({ client: 'curl/8.5.0' });
    // An X-Client that is there but empty says "": the User-Agent does not stand in for it.
    const empty = await makeToken({}, { headers: { 'User-Agent': 'curl/8.5.0', 'X-Client': '' } });
    expect(empty.client).toBe('');
  });

  test('client: UTF-8 in X-Client is read as UTF-8, and cut at 255 characters without splitting one', async () => {
    const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1'); // what goes on the wire
    const accented = await makeToken({}, { headers: { 'X-Client': utf8('Café-app/2 📱') } });
    expect(accented.client).toBe('Café-app/2 📱');
    const [row] = await svc.sql('select client from tokens where id = ?', [accented.id]);
    expect(row).toEqual({ client: 'Café-app/2 📱' });
    // Bytes that are not UTF-8 are taken as latin1.
    const latin1 = await makeToken({}, { headers: { 'X-Client': 'caf\u00e9' } });
    expect(latin1.client).toBe('café');
    const long = await makeToken({}, { headers: { 'X-Client': utf8(`${'a'.repeat(254)}📱📱`) } });
    expect(long.client).toBe(`${'a'.repeat(254)}📱`);
    expect(Array.from(long.client as string)).toHaveLength(255);
  });

  test('ignores fields outside the writable set (client, version, createdAt, …)', async () => {
    const userID = await makeUser();
    const res = await call('POST', '/token/', {
      body: {
        userID,
        accessToken: newAccessToken(),
        client: 'forged',
        version: '99',
        createdAt: '2000-01-01T00:00:00Z',
        updatedAt: '2000-01-01T00:00:00Z',
        password: 'secret',
        deletedAt: '2000-01-01T00:00:00Z',
      },
      headers: { 'X-Client': 'real' },
    });
    const id = expectCreated(res, '/token/');
    const record = await getToken(id);
    expect(record).toMatchObject({ client: 'real', version: '1' });
    expect(record.createdAt).not.toBe('2000-01-01T00:00:00.000Z');
    expect(record.updatedAt).not.toBe('2000-01-01T00:00:00.000Z');
    const [row] = await svc.sql<{ deleted: boolean; version: number }>('select deleted_at is not null as deleted, version from tokens where id = ?', [id]);
    expect(row).toEqual({ deleted: false, version: 1 });
  });

  describe('an id in the body (apply, then POST; SPEC §4)', () => {
    test('an id reserved by apply and not used yet: the token is created with it and the reservation is spent', async () => {
      const id = await applyTokenId();
      expect(await reservations()).toContainEqual({ id: String(id) });
      const userID = await makeUser();
      const accessToken = newAccessToken();
      const res = await call('POST', '/token/', { body: { id, userID, accessToken, scope: 'openid' }, headers: { 'X-Client': 'reserver' } });
      expect(expectCreated(res, '/token/')).toBe(id);
      expect(await getToken(id)).toMatchObject({ id, userID, accessToken, scope: 'openid', client: 'reserver', version: '1' });
      expect(await reservations()).not.toContainEqual({ id: String(id) });
      // Spent: the same POST again names an existing token now.
      const again = await failsUnchanged('POST', '/token/', { body: { id, userID, accessToken: newAccessToken() } }, 409);
      expect(again.body.error).toBe('CONFLICT');
    });

    test('the id of an existing or a deleted token is a 409 and changes nothing', async () => {
      const live = await makeToken();
      const gone = await makeToken();
      expectOne(await call('DELETE', `/token/${gone.id}`));
      for (const id of [live.id, gone.id]) {
        const reserved = await reservations();
        const res = await failsUnchanged('POST', '/token/', { body: { id, userID: live.userID, accessToken: newAccessToken() } }, 409);
        expect(res.body.error).toBe('CONFLICT');
        expect(await reservations()).toEqual(reserved);
      }
      expect(await getToken(live.id)).toEqual(live);
    });

    test('any other id is a 400 naming id and changes nothing', async () => {
      const userID = await makeUser();
      for (const id of [987654321, -1, 1.5, 'abc', true]) {
        const reserved = await reservations();
        const res = await failsUnchanged('POST', '/token/', { body: { id, userID, accessToken: newAccessToken() } }, 400);
        expect(res.body.error).toBe('BAD_REQUEST');
        expect(res.body.details).toEqual([{ field: 'id', message: expect.any(String) }]);
        expect(await reservations()).toEqual(reserved);
      }
    });

    test('id 0 or null means no id: the next one is used', async () => {
      const userID = await makeUser();
      for (const id of [0, null]) {
        const created = expectCreated(await call('POST', '/token/', { body: { id, userID, accessToken: newAccessToken() } }), '/token/');
        expect((await getToken(created)).userID).toBe(userID);
      }
    });
  });

  test('accepts an offset in expireAt and answers it in UTC with milliseconds', async () => {
    const created = await makeToken({ expireAt: '2030-01-01T10:00:00+01:00' });
    expect(created.expireAt).toBe('2030-01-01T09:00:00.000Z');
    const other = await makeToken({ expireAt: '2030-06-15T23:30:00.5-02:30' });
    expect(other.expireAt).toBe('2030-06-16T02:00:00.500Z');
    const [row] = await svc.sql<{ ok: boolean }>("select expire_at = timestamptz '2030-01-01T09:00:00Z' as ok from tokens where id = ?", [created.id]);
    expect(row.ok).toBe(true);
  });

  test('reads expireAt in every ISO 8601 form and stores the instant it names', async () => {
    const forms: [string, string][] = [
      ['20300101T100000+0100', '2030-01-01T09:00:00.000Z'], // basic format
      ['2030-001T09:00:00,25Z', '2030-01-01T09:00:00.250Z'], // ordinal date, comma fraction
      ['2030-W01-2T09Z', '2030-01-01T09:00:00.000Z'], // week date (2030-W01-1 is 31 Dec 2029), hours only
      ['2030-01-01T09:30.5Z', '2030-01-01T09:30:30.000Z'], // fraction of a minute
      ['2029-12-31T24:00:00Z', '2030-01-01T00:00:00.000Z'], // the end of a day
      ['2030-01-01T09:00:00.123456789123Z', '2030-01-01T09:00:00.123Z'], // digits past milliseconds are cut
      ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'], // the first instant there is
      ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'], // and the last
    ];
    for (const [given, stored] of forms) {
      const created = await makeToken({ expireAt: given });
      expect({ given, expireAt: created.expireAt }).toEqual({ given, expireAt: stored });
      expect((await call('GET', `/token/${created.id}`)).body.expireAt).toBe(stored);
    }
  });

  /** [field, value (undefined: left out), what the 400 says, label for long values]. */
  const invalid: [string, unknown, string, string?][] = [
    ['userID', undefined, 'is required'],
    ['accessToken', undefined, 'is required'],
    ['userID', '1', 'must be a positive integer'],
    ['userID', 1.5, 'must be a positive integer'],
    ['userID', 0, 'must be a positive integer'],
    ['userID', null, 'must not be null'],
    ['accessToken', 5, 'must be a string'],
    ['accessToken', null, 'must not be null'],
    ['accessToken', 'x\u0000y', 'NUL'],
    ['accessToken', '', 'must not be empty'],
    ['accessToken', 'has space inside', 'visible ASCII'],
    ['accessToken', ' padded ', 'visible ASCII'],
    ['accessToken', 'ünïcode-tok', 'visible ASCII'],
    ['accessToken', ' \t ', 'must not be empty'],
    ['accessToken', 'x'.repeat(1025), 'at most 1024', '1025 characters'],
    ['refreshToken', 'x'.repeat(1025), 'at most 1024', '1025 characters'],
    ['refreshToken', {}, 'must be a string'],
    ['code', 'x'.repeat(1025), 'at most 1024', '1025 characters'],
    ['codeChallenge', 'x'.repeat(1025), 'at most 1024', '1025 characters'],
    ['codeChallenge', false, 'must be a string'],
    ['scope', 's'.repeat(256), 'at most 255', '256 characters'],
    ['scope', null, 'must not be null'],
    ['scope', ['token:read'], 'must be a string'],
    ['tokenType', 't'.repeat(256), 'at most 255', '256 characters'],
    ['tokenType', 1, 'must be a string'],
    ['expireAt', 1893456000000, 'ISO 8601'],
    ['expireAt', '2026-11-21', 'ISO 8601'],
    ['expireAt', 'yesterday', 'ISO 8601'],
    ['expireAt', '2026-11-21T09:30:00', 'ISO 8601'],
    ['expireAt', '2026-02-30T00:00:00Z', 'valid date-time'],
    ['expireAt', '2026-11-21T24:00:01Z', 'valid date-time'],
    ['expireAt', '2026-11-21T25:00:00Z', 'valid date-time'],
    ['expireAt', '2026-11-21 09:30:00Z', 'ISO 8601'],
    ['expireAt', '0000-01-01T00:00:00Z', 'between 0001-01-01'],
    ['expireAt', '0001-01-01T00:00:00+01:00', 'between 0001-01-01'],
    ['expireAt', '9999-12-31T23:59:59.999-01:00', 'between 0001-01-01'],
  ];
  test.each(invalid.map(([field, value, message, label]) => [field, label ?? JSON.stringify(value) ?? '(absent)', value, message]))(
    'rejects %s = %s with 400 naming the field, and stores nothing',
    async (field, _label, value, message) => {
      const body: Record<string, unknown> = { userID: 1, accessToken: 'x', [field as string]: value };
      if (value === undefined) delete body[field as string];
      const res = await failsUnchanged('POST', '/token/', { body }, 400);
      expect(res.body.error).toBe('BAD_REQUEST');
      expect(res.body.details).toEqual([{ field, message: expect.stringContaining(message as string) }]);
      expect(res.body.message).toContain(field);
    },
  );

  test('accepts the longest allowed values (accessToken/refreshToken/code 1024, scope/tokenType 255)', async () => {
    const accessToken = `L${randomBytes(600).toString('hex')}`.slice(0, 1024);
    secrets.push(accessToken);
    const created = await makeToken({
      accessToken,
      refreshToken: 'r'.repeat(1024),
      code: 'c'.repeat(1024),
      codeChallenge: 'h'.repeat(1024),
      scope: `user:read ${'s'.repeat(245)}`,
      tokenType: 't'.repeat(255),
    });
    expect(created.accessToken).toHaveLength(1024);
    expect(created.scope).toHaveLength(255);
    // A 1024-character token authenticates like any other.
    expect((await call('GET', '/user/', { token: accessToken })).status).toBe(200);
  });

  test('a body that is not a JSON object is a 400 and stores nothing', async () => {
    await failsUnchanged('POST', '/token/', { body: [1, 2] }, 400);
    await failsUnchanged('POST', '/token/', { body: 'token' }, 400);
    await failsUnchanged('POST', '/token/', { rawBody: '{"userID": 1,', headers: { 'Content-Type': 'application/json' } }, 400);
  });

  test('userID must name a live user: unknown and deleted users are a 400 naming userID', async () => {
    const unknown = await failsUnchanged('POST', '/token/', { body: { userID: 876543210, accessToken: newAccessToken() } }, 400);
    expect(unknown.body.details).toEqual([{ field: 'userID', message: expect.any(String) }]);

    const userID = await makeUser('Departed');
    expectOne(await call('DELETE', `/user/${userID}`));
    const deleted = await failsUnchanged('POST', '/token/', { body: { userID, accessToken: newAccessToken() } }, 400);
    expect(deleted.body.error).toBe('BAD_REQUEST');
    expect(deleted.body.details).toEqual([{ field: 'userID', message: expect.any(String) }]);
  });

  test('a token created while its user is being deleted never outlives the user', async () => {
    // Each round races POST /token/ against DELETE /user/; whichever wins, no live token may be left
    // owned by a deleted user (the create either commits first and is cascaded, or sees the delete).
    for (let round = 0; round < 15; round++) {
      const userID = await makeUser(`Racing ${round}`);
      const [created, deleted] = await Promise.all([
        svc.request('POST', '/token/', { body: { userID, accessToken: newAccessToken('race'), scope: 'user:read' } }),
        svc.request('DELETE', `/user/${userID}`),
      ]);
      expect([201, 400]).toContain(created.status);
      if (created.status === 201) expect(created.headers.get('location')).toBe(`/token/${created.body}`);
      expect({ status: deleted.status, body: deleted.body }).toEqual({ status: 200, body: 1 });
    }
    const orphans = await svc.sql('select t.id from tokens t join users u on u.id = t.user_id where t.deleted_at is null and u.deleted_at is not null');
    expect(orphans).toEqual([]);
  });

  test('changing a token while its owner is deleted: never a 500, and never a live token of a deleted user', async () => {
    // The update locks the token, then its owner; the delete locks the owner, then its tokens.
    for (let round = 0; round < 10; round++) {
      const userID = await makeUser(`Owner ${round}`);
      const token = await makeToken({ userID });
      const [put, patch, del] = await Promise.all([
        svc.request('PUT', `/token/${token.id}`, { body: { userID, accessToken: token.accessToken, code: 'x' } }),
        svc.request('PATCH', `/token/${token.id}`, { body: { userID, scope: 'user:read' } }),
        svc.request('DELETE', `/user/${userID}`),
      ]);
      expect([200, 400, 404]).toContain(put.status);
      expect([200, 400, 404]).toContain(patch.status);
      if (put.status === 200) expect(put.body).toBe(1);
      if (patch.status === 200) expect(patch.body).toBe(1);
      expect({ status: del.status, body: del.body }).toEqual({ status: 200, body: 1 });
    }
    const orphans = await svc.sql('select t.id from tokens t join users u on u.id = t.user_id where t.deleted_at is null and u.deleted_at is not null');
    expect(orphans).toEqual([]);
  });

  test("a duplicate live accessToken is a 409 CONFLICT; a deleted token's accessToken can be reused", async () => {
    const first = await makeToken();
    const other = await makeUser();
    const dup = await failsUnchanged('POST', '/token/', { body: { userID: other, accessToken: first.accessToken } }, 409);
    expect(dup.body.error).toBe('CONFLICT');
    expect(dup.body.details).toEqual([{ field: 'accessToken', message: expect.any(String) }]);
    expect(dup.text).not.toContain(first.accessToken);

    expectOne(await call('DELETE', `/token/${first.id}`));
    const reusedId = expectCreated(await call('POST', '/token/', { body: { userID: other, accessToken: first.accessToken } }), '/token/');
    expect(reusedId).not.toBe(first.id);
    const rows = await svc.sql<{ id: string; deleted: boolean }>(
      'select id, deleted_at is not null as deleted from tokens where access_token_hmac = ? order by id',
      [svc.hmac(first.accessToken)],
    );
    expect(rows).toEqual([
      { id: String(first.id), deleted: true },
      { id: String(reusedId), deleted: false },
    ]);
    // The reused value now authenticates as the new token: its empty scope gives a 403, not a 401.
    const viewer = await call('GET', `/token/${reusedId}`, { token: first.accessToken });
    expect(viewer.status).toBe(403);
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
