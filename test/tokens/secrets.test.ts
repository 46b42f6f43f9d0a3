import { randomBytes } from 'node:crypto';
import { newTestDatabase, startTestService, type TestService } from '../support/service.js';
import { newKey, ADMIN, start, call, dumpOf, expectAbsent, makeUser, makeToken } from '../support/secrets.js';

/**
 * Secrets at rest (SPEC §9): accessToken and refreshToken are stored as keyed hashes and
 * ciphertexts, never as they are; reads still answer them; the key comes from TOKEN_KEY or the
 * embedded database's key file; TOKEN_KEY_PREVIOUS and `npm run rotate-key` rotate it; plain rows
 * of an older database are converted at start.
 */
describe('stored form', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc.stop();
  });

  test('the table has no plain column; a token is a keyed hash and a ciphertext; reads answer the values', async () => {
    const columns = await svc.sql<{ column_name: string }>(
      "select column_name from information_schema.columns where table_name = 'tokens' order by column_name",
    );
    const names = columns.map((c) => c.column_name);
    expect(names).toEqual(expect.arrayContaining(['access_token_hmac', 'access_token_cipher', 'refresh_token_hmac', 'refresh_token_cipher']));
    expect(names).not.toContain('access_token');
    expect(names).not.toContain('refresh_token');
    expect(names).not.toContain('access_token_hash');

    const user = (await svc.request('POST', '/user/', { body: { firstName: 'A', lastName: 'B' } })).body;
    const accessToken = `known-${randomBytes(8).toString('hex')}`;
    const created = await svc.request('POST', '/token/', { body: { userID: user, accessToken, refreshToken: 'refresh-me', scope: 'token:read' } });
    expect(created.status).toBe(201);
    const [row] = await svc.sql<any>('select access_token_hmac, access_token_cipher, refresh_token_cipher from tokens where id = ?', [created.body]);
    expect(row.access_token_hmac).toEqual(svc.hmac(accessToken));
    expect(row.access_token_hmac.length).toBe(32);
    // format byte, key id, nonce, ciphertext, tag
    expect(row.access_token_cipher.length).toBe(1 + 8 + 12 + Buffer.byteLength(accessToken) + 16);
    expect(row.access_token_cipher[0]).toBe(1);
    expect(row.access_token_cipher.includes(Buffer.from(accessToken))).toBe(false);

    // The same value twice gives two ciphertexts (a random nonce each time).
    const again = await svc.request('PATCH', `/token/${created.body}`, { body: { refreshToken: 'refresh-me-2' } });
    expect(again.status).toBe(200);
    const [after] = await svc.sql<any>('select access_token_hmac, access_token_cipher from tokens where id = ?', [created.body]);
    expect(after.access_token_hmac).toEqual(row.access_token_hmac);
    expect(after.access_token_cipher.equals(row.access_token_cipher)).toBe(false);

    // Reads (REST, GraphQL, the bearer's own record) answer the plain values.
    const read = await svc.request('GET', `/token/${created.body}`);
    expect(read.body).toMatchObject({ accessToken, refreshToken: 'refresh-me-2' });
    expect((await svc.request('GET', `/token/${created.body}`, { token: accessToken })).status).toBe(200);
    const viewer = await svc.graphql('{ viewer { accessToken refreshToken } }', {}, { token: accessToken });
    expect(viewer.body.data.viewer).toEqual({ accessToken, refreshToken: 'refresh-me-2' });
  });

  test('accessToken and refreshToken filter with eq, ne, in, nin through the keyed hash; like, ranges and sorting are a 400 naming the field', async () => {
    const user = (await svc.request('POST', '/user/', { body: { firstName: 'F', lastName: 'Filter' } })).body;
    const values = ['flt-a', 'flt-b', 'flt-c'];
    const ids: number[] = [];
    for (const value of values) {
      const res = await svc.request('POST', '/token/', { body: { userID: user, accessToken: value, refreshToken: `r-${value}` } });
      ids.push(res.body);
    }
    const q = (filter: unknown) => encodeURIComponent(typeof filter === 'string' ? filter : JSON.stringify(filter));
    const list = async (filter: unknown) => {
      const res = await svc.request('GET', `/token/?filter=${q(filter)}`);
      expect(res.status).toBe(200);
      return (res.body as { id: number }[]).map((t) => t.id);
    };
    const mine = (found: number[]) => found.filter((id) => ids.includes(id));
    expect(await list({ accessToken: 'flt-b' })).toEqual([ids[1]]);
    expect(await list({ accessToken: { eq: 'flt-a' } })).toEqual([ids[0]]);
    expect(await list({ accessToken: { in: ['flt-a', 'flt-c', 'nope'] } })).toEqual([ids[0], ids[2]]);
    expect(mine(await list({ accessToken: { ne: 'flt-a' }, userID: user }))).toEqual([ids[1], ids[2]]);
    expect(mine(await list({ accessToken: { nin: ['flt-a', 'flt-b'] }, userID: user }))).toEqual([ids[2]]);
    expect(await list({ refreshToken: 'r-flt-c' })).toEqual([ids[2]]);
    expect(await list({ accessToken: 'FLT-A' })).toEqual([]);
    expect(await list("accessToken eq 'flt-b' or refreshToken eq r-flt-c")).toEqual([ids[1], ids[2]]);

    for (const [filter, field] of [
      [{ accessToken: { like: 'flt-%' } }, 'filter.accessToken.like'],
      [{ accessToken: { ilike: 'FLT-%' } }, 'filter.accessToken.ilike'],
      [{ accessToken: { gt: 'flt-a' } }, 'filter.accessToken.gt'],
      [{ refreshToken: { lte: 'z' } }, 'filter.refreshToken.lte'],
      [{ accessToken: { isNull: false } }, 'filter.accessToken.isNull'],
      ['accessToken ge a', 'filter.accessToken.ge'],
    ] as const) {
      const res = await svc.request('GET', `/token/?filter=${q(filter)}`);
      expect({ filter, status: res.status, details: res.body.details }).toEqual({
        filter,
        status: 400,
        details: [{ field, message: expect.stringMatching(/stored encrypted.*eq, ne, in, nin/) }],
      });
    }
    for (const orderBy of ['accessToken', '-refreshToken', 'scope, accessToken desc']) {
      const res = await svc.request('GET', `/token/?orderBy=${encodeURIComponent(orderBy)}`);
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual([{ field: 'orderBy', message: expect.stringMatching(/^(accessToken|refreshToken) cannot be sorted on/) }]);
    }
    const unknown = await svc.request('GET', '/token/?orderBy=nope');
    expect(unknown.body.details[0].message).not.toMatch(/accessToken/);

    // GraphQL: the same matching; the schema offers no pattern, range or sort on them.
    const gql = await svc.graphql('query($v: [String!]) { tokens(filter: { accessToken: { in: $v } }) { total data { id accessToken } } }', {
      v: ['flt-a', 'flt-b'],
    });
    expect(gql.body.data.tokens).toEqual({
      total: 2,
      data: [
        { id: String(ids[0]), accessToken: 'flt-a' },
        { id: String(ids[1]), accessToken: 'flt-b' },
      ],
    });
    const like = await svc.graphql('{ tokens(filter: { accessToken: { like: "flt%" } }) { total } }');
    expect(like.body.errors[0].message).toMatch(/"like" is not defined by type "SecretFilter"/);
    const sort = await svc.graphql('{ tokens(orderBy: [{ accessToken: ASC }]) { total } }');
    expect(sort.body.errors[0].message).toMatch(/"accessToken" is not defined by type "TokenOrderBy"/);
  });

  test('uniqueness of live accessTokens holds through the keyed-hash index (409)', async () => {
    const user = (await svc.request('POST', '/user/', { body: { firstName: 'U', lastName: 'Unique' } })).body;
    expect((await svc.request('POST', '/token/', { body: { userID: user, accessToken: 'uniq-1' } })).status).toBe(201);
    const dup = await svc.request('POST', '/token/', { body: { userID: user, accessToken: 'uniq-1' } });
    expect(dup.status).toBe(409);
    expect(dup.text).not.toContain('uniq-1');
    const indexes = await svc.sql<{ indexdef: string }>("select indexdef from pg_indexes where tablename = 'tokens'");
    expect(indexes.map((i) => i.indexdef)).toContainEqual(
      expect.stringMatching(/UNIQUE INDEX tokens_access_token_hmac_live_uq .*\(access_token_hmac\) WHERE \(deleted_at IS NULL\)/),
    );
  });
});

describe('a dump reveals no token', () => {
  test('no token value, nor its sha256 (hex, base64), appears in a dump (pg_dump; the embedded database files)', async () => {
    const place = await newTestDatabase();
    try {
      const env = { TOKEN_KEY: newKey() };
      const service = await start(place, env);
      const known = `known-${randomBytes(12).toString('hex')}`;
      const refresh = `refresh-${randomBytes(12).toString('hex')}`;
      let id: number;
      try {
        id = (await makeToken(service, await makeUser(service), { accessToken: known, refreshToken: refresh })).id;
        expect((await call(service, 'GET', `/token/${id}`, known)).status).toBe(200);
      } finally {
        await service.stop();
      }
      const dump = await dumpOf(place);
      expect(dump.some((b) => b.length > 0)).toBe(true);
      if (place.name) expect(dump[0].toString()).toContain('access_token_cipher');
      expectAbsent(dump, [known, refresh, ADMIN]);

      // The token still works and still reads back.
      const again = await start(place, env);
      try {
        const read = await call(again, 'GET', `/token/${id}`, known);
        expect(read.status).toBe(200);
        expect(read.body).toMatchObject({ accessToken: known, refreshToken: refresh });
      } finally {
        await again.stop();
      }
    } finally {
      await place.drop();
    }
  });
});
