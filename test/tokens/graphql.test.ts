import {
  svc,
  ISO,
  ABSENT,
  USER,
  TOKEN,
  fresh,
  Json,
  run,
  fail,
  changesNothing,
  restToken,
  restPost,
  CREATE_TOKEN,
  GET_TOKEN,
  gqlUser,
  useService,
} from '../support/graphql-operations.js';

/** The token queries and mutations over GraphQL: results, errors, the database after failing mutations, parity with REST. */
useService();

describe('tokens', () => {
  let owner: Json;
  beforeAll(async () => {
    owner = await gqlUser({ firstName: 'Owner' });
  });

  test('createToken: every field, defaults, client from X-Client, version "1"; REST reads it identically', async () => {
    const accessToken = fresh('access');
    const { createToken } = await run(
      CREATE_TOKEN,
      {
        input: {
          userID: owner.id,
          accessToken,
          refreshToken: 'refresh',
          scope: 'user:read token:read',
          code: 'c0de',
          codeChallenge: 'challenge',
          tokenType: 'Bearer',
          expireAt: '2030-01-02T03:04:05+02:00',
        },
      },
      { headers: { 'X-Client': 'graphql-tests' } },
    );
    expect(createToken).toEqual({
      id: expect.stringMatching(/^[1-9]\d*$/),
      userID: owner.id,
      accessToken,
      refreshToken: 'refresh',
      scope: 'user:read token:read',
      code: 'c0de',
      codeChallenge: 'challenge',
      tokenType: 'Bearer',
      expireAt: '2030-01-02T01:04:05.000Z',
      client: 'graphql-tests',
      version: '1',
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const rest = await svc.request('GET', `/token/${createToken.id}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual(restToken(createToken));
    expect((await run(GET_TOKEN, { id: createToken.id })).token).toEqual(createToken);

    const { createToken: minimal } = await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: fresh('min') } });
    expect(minimal).toMatchObject({ refreshToken: '', scope: '', code: '', codeChallenge: null, tokenType: '', expireAt: null, version: '1' });
  });

  test('a token created over REST reads back identically through token(id), tokens and Token.user', async () => {
    const created = await restPost('/token/', { userID: Number(owner.id), accessToken: fresh('rest'), scope: 'x', expireAt: '2031-05-06T07:08:09.123Z' });
    const { token } = await run(`query($id: ID!) { token(id: $id) { ${TOKEN} user { ${USER} } } }`, { id: String(created.id) });
    const { user, ...fields } = token;
    expect(restToken(fields)).toEqual(created);
    expect(user).toEqual(owner);
    const { tokens } = await run(`query($id: ID!) { tokens(filter: {id: {eq: $id}}) { total data { ${TOKEN} } } }`, { id: String(created.id) });
    expect(tokens.data.map(restToken)).toEqual([created]);
  });

  test('createToken with a duplicate live accessToken: CONFLICT naming accessToken; nothing stored', async () => {
    const accessToken = fresh('dup');
    await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken } });
    await changesNothing(async () => {
      const error = await fail(CREATE_TOKEN, { input: { userID: owner.id, accessToken } }, 'CONFLICT');
      expect(error.extensions.field).toBe('input.accessToken');
      expect(error.message).not.toContain(accessToken);
    });
  });

  test.each([
    { what: 'an absent userID', input: { userID: ABSENT, accessToken: 'a' }, field: 'userID' },
    { what: 'a malformed userID', input: { userID: 'abc', accessToken: 'a' }, field: 'userID' },
    { what: 'userID 0', input: { userID: '0', accessToken: 'a' }, field: 'userID' },
    { what: 'a too long accessToken', input: { userID: 'OWNER', accessToken: 'x'.repeat(1025) }, field: 'accessToken' },
    { what: 'an empty accessToken', input: { userID: 'OWNER', accessToken: '' }, field: 'accessToken' },
    { what: 'a too long scope', input: { userID: 'OWNER', accessToken: 'a', scope: 's'.repeat(256) }, field: 'scope' },
  ])('createToken with $what: BAD_USER_INPUT naming $field; nothing stored', async ({ input, field }) => {
    const given = { ...input, userID: input.userID === 'OWNER' ? owner.id : input.userID };
    await changesNothing(() => fail(CREATE_TOKEN, { input: given }, 'BAD_USER_INPUT', `input.${field}`));
  });

  test('createToken for a deleted user is BAD_USER_INPUT naming userID', async () => {
    const gone = await gqlUser();
    await run(`mutation($id: ID!) { destroyUser(id: $id) }`, { id: gone.id });
    await changesNothing(() => fail(CREATE_TOKEN, { input: { userID: gone.id, accessToken: fresh('t') } }, 'BAD_USER_INPUT', 'input.userID'));
  });

  test('token(id): null for an absent or deleted token', async () => {
    expect((await svc.graphql(GET_TOKEN, { id: ABSENT })).body).toEqual({ data: { token: null } });
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: fresh('t') } });
    expect(await run(`mutation($id: ID!) { destroyToken(id: $id) }`, { id: createToken.id })).toEqual({ destroyToken: true });
    expect((await svc.graphql(GET_TOKEN, { id: createToken.id })).body).toEqual({ data: { token: null } });
  });

  test('updateToken replaces every writable field and bumps version; REST agrees', async () => {
    const other = await gqlUser();
    const { createToken } = await run(CREATE_TOKEN, {
      input: {
        userID: owner.id,
        accessToken: fresh('u'),
        refreshToken: 'r',
        scope: 's',
        code: 'c',
        codeChallenge: 'cc',
        tokenType: 't',
        expireAt: '2030-01-01T00:00:00Z',
      },
    });
    const accessToken = fresh('u2');
    const { updateToken } = await run(`mutation($id: ID!, $input: TokenInput!) { updateToken(id: $id, input: $input) { ${TOKEN} } }`, {
      id: createToken.id,
      input: { userID: other.id, accessToken, scope: 'new' },
    });
    expect(updateToken).toEqual({
      ...createToken,
      userID: other.id,
      accessToken,
      refreshToken: '',
      scope: 'new',
      code: '',
      codeChallenge: null,
      tokenType: '',
      expireAt: null,
      version: '2',
      updatedAt: expect.stringMatching(ISO),
    });
    expect((await svc.request('GET', `/token/${createToken.id}`)).body).toEqual(restToken(updateToken));
  });

  test('updateToken on an absent id: NOT_FOUND; applyTokenID then updateToken creates, a repeat updates', async () => {
    const UPDATE = `mutation($id: ID!, $input: TokenInput!) { updateToken(id: $id, input: $input) { ${TOKEN} } }`;
    await changesNothing(() => fail(UPDATE, { id: ABSENT, input: { userID: owner.id, accessToken: fresh('n') } }, 'NOT_FOUND'));

    const { applyTokenID } = await run('mutation { applyTokenID }');
    expect(applyTokenID).toMatch(/^[1-9]\d*$/);
    expect((await run(GET_TOKEN, { id: applyTokenID })).token).toBeNull();
    const accessToken = fresh('applied');
    const { updateToken: created } = await run(UPDATE, { id: applyTokenID, input: { userID: owner.id, accessToken } });
    expect(created).toMatchObject({ id: applyTokenID, accessToken, version: '1' });
    expect((await svc.request('GET', `/token/${applyTokenID}`)).body).toEqual(restToken(created));
    const { updateToken: again } = await run(UPDATE, { id: applyTokenID, input: { userID: owner.id, accessToken, scope: 'more' } });
    expect(again).toMatchObject({ id: applyTokenID, scope: 'more', version: '2' });

    // applyTokenID over REST, then updateToken over GraphQL.
    const applied = await svc.request('POST', '/apply/token/id/', { body: { anything: true } });
    expect(applied.status).toBe(201);
    expect(applied.body).toEqual(expect.any(Number));
    const { updateToken: viaRest } = await run(UPDATE, { id: String(applied.body), input: { userID: owner.id, accessToken: fresh('r') } });
    expect(viaRest.id).toBe(String(applied.body));
  });

  test('patchToken changes only the fields given; explicit nulls clear nullable fields; version bumps', async () => {
    const { createToken } = await run(CREATE_TOKEN, {
      input: { userID: owner.id, accessToken: fresh('p'), refreshToken: 'r', scope: 's', codeChallenge: 'cc', expireAt: '2030-01-01T00:00:00Z' },
    });
    const PATCH = `mutation($id: ID!, $input: TokenPatch!) { patchToken(id: $id, input: $input) { ${TOKEN} } }`;
    const { patchToken } = await run(PATCH, { id: createToken.id, input: { scope: 'patched', codeChallenge: null, expireAt: null } });
    expect(patchToken).toEqual({
      ...createToken,
      scope: 'patched',
      codeChallenge: null,
      expireAt: null,
      version: '2',
      updatedAt: expect.stringMatching(ISO),
    });
    const [row] = await svc.sql('select refresh_token_hmac, code_challenge, expire_at, version from tokens where id = ?', [createToken.id]);
    expect(row).toEqual({ refresh_token_hmac: svc.hmac('r', 'refreshToken'), code_challenge: null, expire_at: null, version: 2 });
    expect((await svc.request('GET', `/token/${createToken.id}`)).body).toEqual(restToken(patchToken));
  });

  test('patchToken failures: null accessToken, duplicate accessToken, absent id; nothing changes', async () => {
    const taken = fresh('taken');
    await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: taken } });
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: fresh('mine') } });
    const PATCH = `mutation($id: ID!, $input: TokenPatch!) { patchToken(id: $id, input: $input) { id } }`;
    await changesNothing(() => fail(PATCH, { id: createToken.id, input: { accessToken: null } }, 'BAD_USER_INPUT', 'input.accessToken'));
    await changesNothing(() => fail(PATCH, { id: createToken.id, input: { accessToken: taken, scope: 'x' } }, 'CONFLICT', 'input.accessToken'));
    await changesNothing(() => fail(PATCH, { id: createToken.id, input: { userID: ABSENT } }, 'BAD_USER_INPUT', 'input.userID'));
    await changesNothing(() => fail(PATCH, { id: ABSENT, input: { scope: 'x' } }, 'NOT_FOUND'));
    expect((await run(GET_TOKEN, { id: createToken.id })).token).toEqual(createToken);
  });

  test('destroyToken: true; soft delete; the token stops authenticating at once; twice is NOT_FOUND', async () => {
    const secret = fresh('live');
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: owner.id, accessToken: secret, scope: 'token:read' } });
    expect((await run('{ viewer { id } }', undefined, { token: secret })).viewer.id).toBe(createToken.id);
    expect(await run(`mutation($id: ID!) { destroyToken(id: $id) }`, { id: createToken.id })).toEqual({ destroyToken: true });
    const [row] = await svc.sql<Json>('select deleted_at from tokens where id = ?', [createToken.id]);
    expect(row.deleted_at).not.toBeNull();
    expect((await svc.graphql('{ viewer { id } }', undefined, { token: secret })).status).toBe(401);
    expect((await svc.request('GET', `/token/${createToken.id}`)).status).toBe(404);
    await changesNothing(() => fail(`mutation($id: ID!) { destroyToken(id: $id) }`, { id: createToken.id }, 'NOT_FOUND'));
    await changesNothing(() => fail(`mutation { destroyToken(id: "${ABSENT}") }`, undefined, 'NOT_FOUND'));
  });

  test('viewer is the calling token, with its user', async () => {
    const secret = await svc.tokenWith('user:read');
    const { viewer } = await run(`{ viewer { ${TOKEN} user { id firstName lastName } } }`, undefined, { token: secret });
    expect(viewer).toMatchObject({ accessToken: secret, scope: 'user:read', version: '1' });
    const rest = await svc.request('GET', `/token/${viewer.id}`);
    const { user, ...fields } = viewer;
    expect(rest.body).toEqual(restToken(fields));
    expect(user.id).toBe(fields.userID);
    // Its user as REST shows it (the holder svc.tokenWith made).
    const holder = (await svc.request('GET', `/user/${user.id}`)).body as Json;
    expect(user).toEqual({ id: user.id, firstName: holder.firstName, lastName: holder.lastName });
    const admin = (await run('{ viewer { accessToken scope } }')).viewer;
    expect(admin).toEqual({ accessToken: svc.adminToken, scope: '*' });
  });

  test('tokens: typed filters (IDFilter, StringFilter, DateTimeFilter, version), orderBy and pages', async () => {
    const holder = await gqlUser();
    const tag = fresh('tk');
    const made: Json[] = [];
    const specs = [
      { accessToken: `${tag}-c`, scope: 'read', codeChallenge: null, expireAt: '2030-01-01T00:00:00Z' },
      { accessToken: `${tag}-a`, scope: 'write', codeChallenge: 'x', expireAt: null },
      { accessToken: `${tag}-b`, scope: 'read write', codeChallenge: null, expireAt: '2040-01-01T00:00:00Z' },
    ];
    for (const spec of specs) made.push((await run(CREATE_TOKEN, { input: { userID: holder.id, ...spec } })).createToken);
    await run(`mutation($id: ID!) { patchToken(id: $id, input: {code: "v2"}) { version } }`, { id: made[2].id });

    const LIST = `query($f: TokenFilter, $o: [TokenOrderBy!], $p: Int, $s: Int) {
      tokens(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { id accessToken } }
    }`;
    const list = async (v: Json) => (await run(LIST, v)).tokens;
    const ids = (page: Json) => page.data.map((t: Json) => t.id);
    const idsOf = (...i: number[]) => i.map((n) => made[n].id);
    const mine = { userID: { eq: holder.id } };

    expect((await list({ f: mine })).total).toBe(3);
    expect(ids(await list({ f: mine, o: [{ scope: 'DESC' }] }))).toEqual(idsOf(1, 2, 0));
    expect(ids(await list({ f: mine, o: [{ scope: 'ASC' }] }))).toEqual(idsOf(0, 2, 1));
    expect(ids(await list({ f: { ...mine, scope: { like: 'read%' } } }))).toEqual(idsOf(0, 2));
    expect(ids(await list({ f: { ...mine, codeChallenge: { isNull: true } } }))).toEqual(idsOf(0, 2));
    expect(ids(await list({ f: { ...mine, expireAt: { isNull: true } } }))).toEqual(idsOf(1));
    expect(ids(await list({ f: { ...mine, expireAt: { gt: '2035-01-01T00:00:00Z' } } }))).toEqual(idsOf(2));
    expect(ids(await list({ f: { ...mine, version: { eq: '2' } } }))).toEqual(idsOf(2));
    expect(ids(await list({ f: { ...mine, or: [{ scope: { eq: 'write' } }, { accessToken: { eq: `${tag}-c` } }] } }))).toEqual(idsOf(0, 1));
    expect(ids(await list({ f: { ...mine, not: { scope: { ilike: '%WRITE%' } } } }))).toEqual(idsOf(0));
    expect(await list({ f: mine, o: [{ scope: 'DESC' }], p: 2, s: 2 })).toEqual({
      total: 3,
      page: 2,
      pageSize: 2,
      data: [{ id: made[0].id, accessToken: `${tag}-c` }],
    });
    // pageSize above 1000 is read as 1000 (SPEC §5).
    expect(await list({ f: mine, o: [{ scope: 'DESC' }], s: 1001 })).toEqual({
      total: 3,
      page: 1,
      pageSize: 1000,
      data: [1, 2, 0].map((n) => ({ id: made[n].id, accessToken: made[n].accessToken })),
    });
    await fail(LIST, { f: mine, o: [{ scope: 'ASC', id: 'ASC' }] }, 'BAD_USER_INPUT');
    // accessToken is stored encrypted (SPEC §9): matched by equality, never sorted.
    const unsortable = await svc.graphql(LIST, { f: mine, o: [{ accessToken: 'ASC' }] });
    expect(unsortable.body.errors[0].message).toMatch(/"accessToken" is not defined by type "TokenOrderBy"/);
  });
});

// ---------------------------------------------------------------------------------------------
