import { randomBytes } from 'node:crypto';
import { startTestService, type Reply, type RequestOptions, type TestService } from '../support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

const ISO_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Every access token a test sent, to check none of them ends up in a log line. */
const secrets: string[] = [];
const newAccessToken = (label = 'tok') => {
  const value = `${label}-${randomBytes(12).toString('hex')}`;
  secrets.push(value);
  return value;
};

/** Keys that must never appear anywhere in a response body (SPEC §2). */
function forbiddenKeys(value: unknown, path = '$'): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => forbiddenKeys(v, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [
      ...(k === 'password' || k === 'rememberToken' ? [`${path}.${k}`] : []),
      ...forbiddenKeys(v, `${path}.${k}`),
    ]);
  }
  return [];
}

/** svc.request, checking that no answer carries a `password` or `rememberToken` key. */
async function call(method: string, path: string, options?: RequestOptions): Promise<Reply> {
  const res = await svc.request(method, path, options);
  expect(forbiddenKeys(res.body)).toEqual([]);
  expect(res.text).not.toMatch(/"(password|rememberToken)"\s*:/);
  return res;
}

/** A create's default answer (SPEC §4): 201, Location, the new id as a bare JSON number. */
/** A PUT that created its record on a reserved id: 201, Location, and `1` as every update answers. */
function expectCreatedByPut(res: Reply, id: number): void {
  expect(res.status).toBe(201);
  expect(res.body).toBe(1);
  expect(res.headers.get('location')).toBe(`/token/${id}`);
}

function expectCreated(res: Reply, collection: string): number {
  expect(res.status).toBe(201);
  expect(typeof res.body).toBe('number');
  expect(Number.isSafeInteger(res.body) && res.body > 0).toBe(true);
  expect(res.text).toBe(String(res.body));
  expect(res.headers.get('location')).toBe(`${collection}${res.body}`);
  return res.body;
}

/** A write's default answer (SPEC §4): 200 and `1`, the number of records it matched. */
function expectOne(res: Reply): void {
  expect({ status: res.status, text: res.text }).toEqual({ status: 200, text: '1' });
}

async function makeUser(lastName = 'Holder'): Promise<number> {
  return expectCreated(await call('POST', '/user/', { body: { firstName: 'Token', lastName } }), '/user/');
}

/** The stored token as GET /token/{id} answers it. */
async function getToken(id: number): Promise<any> {
  const res = await call('GET', `/token/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** Creates a token (default answer: its id) and reads it back. */
async function makeToken(body: Record<string, unknown> = {}, options: RequestOptions = {}): Promise<any> {
  const userID = body.userID ?? (await makeUser());
  const res = await call('POST', '/token/', { ...options, body: { userID, accessToken: newAccessToken(), ...body } });
  return getToken(expectCreated(res, '/token/'));
}

/** Reserves a token id (POST /apply/token/id/ answers it as a bare number). */
async function applyTokenId(options: RequestOptions = {}): Promise<number> {
  const res = await call('POST', '/apply/token/id/', options);
  expect(res.status).toBe(201);
  expect(typeof res.body).toBe('number');
  return res.body;
}

/** A token with the given scope, and its owner. */
async function callerWith(scope: string): Promise<{ token: string; userID: number; id: number }> {
  const created = await makeToken({ scope });
  return { token: created.accessToken, userID: created.userID, id: created.id };
}

/** The whole tokens table, to show that a failing request changed nothing. */
const tokensTable = () => svc.sql('select * from tokens order by id');
const reservations = () => svc.sql("select id from id_reservations where resource = 'token' order by id");

/** Runs a request that must fail and checks the tokens table is the same afterwards. */
async function failsUnchanged(method: string, path: string, options: RequestOptions, status: number): Promise<Reply> {
  const before = await tokensTable();
  const res = await call(method, path, options);
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ code: status, requestId: expect.any(String), message: expect.any(String) });
  expect(await tokensTable()).toEqual(before);
  return res;
}

const q = (value: unknown) => encodeURIComponent(JSON.stringify(value));

describe('POST /token/', () => {
  test('creates a token: 201, Location, the new id; the record has defaults, client from X-Client, version "1"', async () => {
    const userID = await makeUser();
    const accessToken = newAccessToken();
    const res = await call('POST', '/token/', { body: { userID, accessToken }, headers: { 'X-Client': 'my-cli/2.1' } });
    const id = expectCreated(res, '/token/');
    expect(res.headers.get('vary')).toMatch(/\bPrefer\b/);
    expect(res.headers.get('preference-applied')).toBeNull();
    const record = (await call('GET', res.headers.get('location')!)).body;
    expect(record).toEqual({
      id,
      userID,
      accessToken,
      refreshToken: '',
      scope: '',
      code: '',
      codeChallenge: null,
      tokenType: '',
      expireAt: null,
      client: 'my-cli/2.1',
      version: '1',
      createdAt: expect.stringMatching(ISO_UTC_MS),
      updatedAt: expect.stringMatching(ISO_UTC_MS),
    });
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
    expect(res.body).toEqual({
      id: expect.any(Number),
      userID,
      accessToken,
      refreshToken: '',
      scope: 'openid',
      code: '',
      codeChallenge: null,
      tokenType: '',
      expireAt: null,
      client: 'prefers',
      version: '1',
      createdAt: expect.stringMatching(ISO_UTC_MS),
      updatedAt: expect.stringMatching(ISO_UTC_MS),
    });
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

describe('GET /token/{id}', () => {
  test('returns the record; unknown id 404; malformed id 400', async () => {
    // The record as the create answered it (Prefer), to compare the read with.
    const created = (
      await call('POST', '/token/', {
        body: { userID: await makeUser(), accessToken: newAccessToken(), scope: 'openid' },
        headers: { Prefer: 'return=representation' },
      })
    ).body;
    expect(created).toMatchObject({ id: expect.any(Number), scope: 'openid', version: '1' });
    const res = await call('GET', `/token/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created);
    const missing = await call('GET', '/token/987654321');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 404, error: 'NOT_FOUND' });
    for (const bad of ['abc', '0', '-1', '1.5']) {
      const res = await call('GET', `/token/${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual([{ field: 'id', message: 'must be a positive integer' }]);
    }
  });
});

/** A list answer (SPEC §4): 200, a bare array, `X-Total-Count`, and the `Link` header. */
function listOf(res: Reply): { status: number; total: string | null; link: string | null; data: unknown } {
  return { status: res.status, total: res.headers.get('x-total-count'), link: res.headers.get('link'), data: res.body };
}

/** The `Link` header of a list at `path` whose query is `query` with `page` set to each page. */
function links(path: string, query: (page: number) => string, rels: [string, number][]): string {
  return rels.map(([rel, page]) => `<${path}?${query(page)}>; rel="${rel}"`).join(', ');
}

describe('GET /token/', () => {
  test('answers a bare array with X-Total-Count and Link, with filter, orderBy, page and pageSize', async () => {
    const userID = await makeUser('Lister');
    const tokens = [];
    for (const scope of ['a', 'b', 'c']) tokens.push(await makeToken({ userID, scope }));
    const filter = q({ userID });

    const all = await call('GET', `/token/?filter=${filter}`);
    expect(listOf(all)).toEqual({
      status: 200,
      total: '3',
      link: links('/token/', (n) => `filter=${filter}&page=${n}`, [
        ['first', 1],
        ['last', 1],
      ]),
      data: tokens,
    });

    const first = await call('GET', `/token/?filter=${filter}&orderBy=-id&page=1&pageSize=2`);
    expect(listOf(first)).toEqual({
      status: 200,
      total: '3',
      link: links('/token/', (n) => `filter=${filter}&orderBy=-id&page=${n}&pageSize=2`, [
        ['first', 1],
        ['next', 2],
        ['last', 2],
      ]),
      data: [tokens[2], tokens[1]],
    });

    const page = await call('GET', `/token/?filter=${filter}&orderBy=-id&page=2&pageSize=2`);
    expect(listOf(page)).toEqual({
      status: 200,
      total: '3',
      link: links('/token/', (n) => `filter=${filter}&orderBy=-id&page=${n}&pageSize=2`, [
        ['first', 1],
        ['prev', 1],
        ['last', 2],
      ]),
      data: [tokens[0]],
    });

    // A page past the end: [] with the true total; prev points at the last page there is.
    const none = await call('GET', `/token/?filter=${filter}&page=5&pageSize=2`);
    expect(listOf(none)).toEqual({
      status: 200,
      total: '3',
      link: links('/token/', (n) => `filter=${filter}&page=${n}&pageSize=2`, [
        ['first', 1],
        ['prev', 2],
        ['last', 2],
      ]),
      data: [],
    });

    const bFilter = q({ userID, scope: 'b' });
    const noSlash = await call('GET', `/token?filter=${bFilter}`);
    expect(listOf(noSlash)).toEqual({
      status: 200,
      total: '1',
      link: links('/token', (n) => `filter=${bFilter}&page=${n}`, [
        ['first', 1],
        ['last', 1],
      ]),
      data: [tokens[1]],
    });

    // Empty parameters are the defaults: page 1 of 20, ordered by id.
    const empty = await call('GET', `/token/?filter=&orderBy=&page=&pageSize=`);
    expect(empty.status).toBe(200);
    const total = Number(empty.headers.get('x-total-count'));
    expect(total).toBeGreaterThanOrEqual(4);
    expect(empty.body).toHaveLength(Math.min(total, 20));
    const ids = (empty.body as { id: number }[]).map((t) => t.id);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(empty.headers.get('link')).toMatch(/^<\/token\/\?filter=&orderBy=&page=1&pageSize=>; rel="first"/);
    expect(await call('GET', '/token/')).toMatchObject({ status: 200, body: empty.body });
  });

  test('the expression form of filter, and field names in any case', async () => {
    const userID = await makeUser('Expressions');
    const a = await makeToken({ userID, scope: 'openid', tokenType: 'Bearer' });
    const b = await makeToken({ userID, scope: 'profile', tokenType: 'Bearer' });
    const c = await makeToken({ userID, scope: "it's", tokenType: 'MAC' });
    const ids = (res: Reply) => {
      expect(res.status).toBe(200);
      return (res.body as { id: number }[]).map((t) => t.id);
    };
    const expr = (text: string) => `/token/?filter=${encodeURIComponent(text)}`;
    expect(ids(await call('GET', expr(`userID eq ${userID} and tokenType eq 'Bearer'`)))).toEqual([a.id, b.id]);
    expect(ids(await call('GET', expr(`USERID EQ ${userID} AND NOT (scope eq openid or Scope eq "profile")`)))).toEqual([c.id]);
    expect(ids(await call('GET', expr(`userid eq ${userID} and scope eq 'it''s'`)))).toEqual([c.id]);
    expect(ids(await call('GET', expr(`userID eq ${userID} and codeChallenge eq null`)))).toEqual([a.id, b.id, c.id]);
    expect(ids(await call('GET', `/token/?filter=${q({ UserID: userID, TOKENTYPE: 'MAC' })}`))).toEqual([c.id]);
    expect(ids(await call('GET', `${expr(`userID eq ${userID}`)}&orderBy=${encodeURIComponent('TokenType DESC, Scope')}`))).toEqual([c.id, a.id, b.id]);
    expect(ids(await call('GET', `${expr(`userID eq ${userID}`)}&orderBy=-SCOPE`))).toEqual([b.id, a.id, c.id]);
    const total = await call('GET', expr(`userID eq ${userID} and tokenType ne 'MAC'`));
    expect(total.headers.get('x-total-count')).toBe('2');
    // An expression that does not parse, or names an unknown field, is a 400 naming filter.
    for (const bad of [`userID eq`, `userID eq ${userID} and`, `(userID eq ${userID}`, `userID like 'x'`, `password eq 'x'`]) {
      const res = await call('GET', expr(bad));
      expect({ bad, status: res.status, field: res.body?.details?.[0]?.field }).toEqual({ bad, status: 400, field: expect.stringMatching(/^filter\b/) });
    }
  });

  test('filters on version (a string on the wire) and client', async () => {
    const userID = await makeUser('Versions');
    const a = await makeToken({ userID }, { headers: { 'X-Client': 'versions-client' } });
    const b = await makeToken({ userID }, { headers: { 'X-Client': 'versions-client' } });
    expectOne(await call('PATCH', `/token/${b.id}`, { body: { scope: 'x' } }));
    expect((await getToken(b.id)).version).toBe('2');
    const idsOf = (res: Reply) => (res.body as { id: number }[]).map((t) => t.id);
    const v2 = await call('GET', `/token/?filter=${q({ userID, version: '2' })}`);
    expect(idsOf(v2)).toEqual([b.id]);
    const leadingZero = await call('GET', `/token/?filter=${q({ userID, version: '02' })}`);
    expect(idsOf(leadingZero)).toEqual([b.id]);
    const byClient = await call('GET', `/token/?filter=${q({ client: 'versions-client' })}`);
    expect(idsOf(byClient)).toEqual([a.id, b.id]);
    expect(byClient.headers.get('x-total-count')).toBe('2');
  });

  test('leaves deleted tokens out', async () => {
    const userID = await makeUser('Lister2');
    const keep = await makeToken({ userID });
    const gone = await makeToken({ userID });
    expectOne(await call('DELETE', `/token/${gone.id}`));
    const filter = q({ userID });
    const list = await call('GET', `/token/?filter=${filter}`);
    expect(listOf(list)).toEqual({
      status: 200,
      total: '1',
      link: links('/token/', (n) => `filter=${filter}&page=${n}`, [
        ['first', 1],
        ['last', 1],
      ]),
      data: [keep],
    });
  });

  test('bad list parameters are a 400; page and pageSize out of range are clamped (SPEC §5)', async () => {
    expect((await call('GET', `/token/?filter=${q({ password: 'x' })}`)).status).toBe(400);
    expect((await call('GET', '/token/?orderBy=rememberToken')).status).toBe(400);
    for (const bad of ['pageSize=1.5', 'pageSize=ten', 'page=abc', 'page=2.5', 'page=1&page=2']) {
      const res = await call('GET', `/token/?${bad}`);
      expect({ bad, status: res.status, field: res.body?.details?.[0]?.field }).toEqual({ bad, status: 400, field: bad.split('=')[0] });
    }

    // 1001 tokens of one user (written directly: 1001 creates through the API would only be slower).
    const userID = await makeUser('Many');
    await svc.insertTokens(
      userID,
      Array.from({ length: 1001 }, (_, g) => `bulk-${userID}-${g + 1}`),
    );
    const filter = q({ userID });
    const list = async (params: string) => {
      const res = await call('GET', `/token/?filter=${filter}${params}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-total-count')).toBe('1001');
      return (res.body as { id: number }[]).map((t) => t.id);
    };
    const firstTwenty = await list('');
    expect(firstTwenty).toHaveLength(20);
    // Below 1: the defaults (page 1, pageSize 20).
    expect(await list('&page=0')).toEqual(firstTwenty);
    expect(await list('&page=-3')).toEqual(firstTwenty);
    expect(await list('&pageSize=0')).toEqual(firstTwenty);
    expect(await list('&pageSize=-5&page=2')).toEqual(await list('&page=2&pageSize=20'));
    const page0 = await call('GET', `/token/?filter=${filter}&page=0`);
    expect(page0.headers.get('link')).toBe(
      links('/token/', (n) => `filter=${filter}&page=${n}`, [
        ['first', 1],
        ['next', 2],
        ['last', 51],
      ]),
    );
    // Above 1000: 1000.
    const thousand = await list('&pageSize=1000');
    expect(thousand).toHaveLength(1000);
    expect(await list('&pageSize=1001')).toEqual(thousand);
    expect(await list('&pageSize=999999')).toEqual(thousand);
    expect(await list('&pageSize=1001&page=2')).toHaveLength(1);
  });
});

describe('apply token id, then PUT', () => {
  test('reserves an id; PUT creates it (201 + Location), a repeated PUT updates it (200)', async () => {
    const applied = await call('POST', '/apply/token/id/');
    expect(applied.status).toBe(201);
    expect(typeof applied.body).toBe('number');
    expect(Number.isSafeInteger(applied.body) && applied.body > 0).toBe(true);
    expect(applied.text).toBe(String(applied.body));
    const id: number = applied.body;
    expect((await call('GET', `/token/${id}`)).status).toBe(404);
    expect(await reservations()).toContainEqual({ id: String(id) });

    const userID = await makeUser();
    const body = { userID, accessToken: newAccessToken(), scope: 'openid' };
    const first = await call('PUT', `/token/${id}`, { body, headers: { 'X-Client': 'retrying-client' } });
    expectCreatedByPut(first, id);
    const created = await getToken(id);
    expect(created).toMatchObject({ id, ...body, client: 'retrying-client', version: '1', refreshToken: '', expireAt: null });
    expect(await reservations()).not.toContainEqual({ id: String(id) });

    // The same PUT again (a client retrying): an ordinary update that changes nothing.
    const again = await call('PUT', `/token/${id}`, { body, headers: { 'X-Client': 'retrying-client' } });
    expectOne(again);
    expect(again.headers.get('location')).toBeNull();
    expect(await getToken(id)).toEqual(created);

    const changed = await call('PUT', `/token/${id}`, { body: { ...body, scope: 'openid profile' } });
    expectOne(changed);
    expect(await getToken(id)).toMatchObject({ id, scope: 'openid profile', version: '2', client: 'retrying-client' });
    expect(await svc.sql('select count(*)::int as n from tokens where id = ?', [id])).toEqual([{ n: 1 }]);
  });

  test('the body of apply is optional and ignored; ids are never handed out twice', async () => {
    const a = await applyTokenId({ body: { anything: [1, 2] } });
    const created = await makeToken();
    const b = await call('POST', '/apply/token/id', { body: [1] });
    expect(b.status).toBe(201);
    expect(created.id).toBeGreaterThan(a);
    expect(b.body).toBeGreaterThan(created.id);
  });

  test('a PUT that fails on a reserved id keeps the reservation; a later PUT still creates', async () => {
    const id = await applyTokenId();
    await failsUnchanged('PUT', `/token/${id}`, { body: { accessToken: newAccessToken() } }, 400);
    await failsUnchanged('PUT', `/token/${id}`, { body: { userID: 876543210, accessToken: newAccessToken() } }, 400);
    expect(await reservations()).toContainEqual({ id: String(id) });
    const userID = await makeUser();
    const res = await call('PUT', `/token/${id}`, { body: { userID, accessToken: newAccessToken() } });
    expectCreatedByPut(res, id);
    expect((await getToken(id)).userID).toBe(userID);
  });

  test('with Prefer: return=representation the creating PUT answers the record', async () => {
    const id = await applyTokenId();
    const userID = await makeUser();
    const res = await call('PUT', `/token/${id}`, {
      body: { userID, accessToken: newAccessToken(), tokenType: 'Bearer' },
      headers: { Prefer: 'return=representation' },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/token/${id}`);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    expect(res.body).toMatchObject({ id, userID, tokenType: 'Bearer', version: '1' });
    expect(await getToken(id)).toEqual(res.body);
  });

  test('PUT on an id that was never handed out is a 404 and creates nothing', async () => {
    const userID = await makeUser();
    const res = await failsUnchanged('PUT', '/token/900000000', { body: { userID, accessToken: newAccessToken() } }, 404);
    expect(res.body.error).toBe('NOT_FOUND');
    expect(await svc.sql('select id from tokens where id = 900000000')).toEqual([]);
  });

  test('apply needs token:write', async () => {
    const reader = await callerWith('token:read');
    const before = await reservations();
    const res = await call('POST', '/apply/token/id/', { token: reader.token });
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="token:write"');
    expect(await reservations()).toEqual(before);
  });
});

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
