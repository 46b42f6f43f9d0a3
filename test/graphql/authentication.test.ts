import { svc, uniq, gql, tokenFor, snapshot, useService } from '../support/graphql-platform.js';

/** Authentication of POST and GET /graphql: bearer tokens, bad credentials, CSRF prevention. */
useService();

describe('authentication', () => {
  const INVALID_TOKEN = 'Bearer error="invalid_token"';
  let credentials: { label: string; header: string | null; wwwAuthenticate: string }[];

  beforeAll(async () => {
    const expired = await svc.tokenWith('*', { expireAt: new Date(Date.now() - 60_000).toISOString() });
    const ownerDeleted = await svc.tokenWith('*');
    expect((await svc.graphql('{ viewer { id } }', undefined, { token: ownerDeleted })).status).toBe(200);
    const [row] = await svc.sql<{ user_id: string }>('select user_id from tokens where access_token_hmac = ?', [svc.hmac(ownerDeleted)]);
    expect((await svc.graphql('mutation($id: ID!) { destroyUser(id: $id) }', { id: row.user_id })).body.data).toEqual({ destroyUser: true });
    const revoked = await svc.tokenWith('*');
    const [revokedRow] = await svc.sql<{ id: string }>('select id from tokens where access_token_hmac = ?', [svc.hmac(revoked)]);
    await gql('mutation($id: ID!) { destroyToken(id: $id) }', { id: revokedRow.id });
    credentials = [
      { label: 'no Authorization header', header: null, wwwAuthenticate: 'Bearer' },
      { label: 'Basic scheme', header: 'Basic abc', wwwAuthenticate: INVALID_TOKEN },
      { label: 'Bearer without a value', header: 'Bearer', wwwAuthenticate: INVALID_TOKEN },
      { label: 'Bearer with two values', header: `Bearer ${svc.adminToken} extra`, wwwAuthenticate: INVALID_TOKEN },
      { label: 'unknown token', header: `Bearer ${uniq('unknown')}`, wwwAuthenticate: INVALID_TOKEN },
      { label: 'expired token', header: `Bearer ${expired}`, wwwAuthenticate: INVALID_TOKEN },
      { label: 'token of a deleted user', header: `Bearer ${ownerDeleted}`, wwwAuthenticate: INVALID_TOKEN },
      { label: 'deleted token', header: `Bearer ${revoked}`, wwwAuthenticate: INVALID_TOKEN },
    ];
  });

  const send = (query: string, header: string | null, variables?: Record<string, unknown>) =>
    svc.graphql(query, variables, { token: null, headers: header === null ? {} : { Authorization: header } });

  test.each([
    ['a query', '{ users { total } }'],
    ['a query mixing __typename with a field', '{ __typename viewer { id } }'],
    ['a mutation', 'mutation { createApplication(input: { name: "never-written" }) { id } }'],
    ['a named query with an alias', 'query Q { me: viewer { id } }'],
  ])('%s with a bad credential: 401, UNAUTHENTICATED, WWW-Authenticate; nothing is written', async (_kind, query) => {
    const before = await snapshot();
    for (const credential of credentials) {
      const res = await send(query, credential.header);
      expect({
        label: credential.label,
        status: res.status,
        wwwAuthenticate: res.headers.get('www-authenticate'),
        code: res.body?.errors?.[0]?.extensions?.code,
        data: res.body?.data ?? null,
      }).toEqual({ label: credential.label, status: 401, wwwAuthenticate: credential.wwwAuthenticate, code: 'UNAUTHENTICATED', data: null });
      expect(res.text).not.toContain(svc.adminToken);
    }
    expect(await snapshot()).toEqual(before);
  });

  test('introspection needs no token outside production', async () => {
    const schema = await send('{ __schema { types { name } } }', null);
    expect(schema.status).toBe(200);
    expect(schema.body.errors).toBeUndefined();
    const names = schema.body.data.__schema.types.map((t: { name: string }) => t.name);
    expect(names).toEqual(expect.arrayContaining(['Query', 'Mutation', 'User', 'Token', 'Application', 'Role', 'ApplicationLink']));

    // A credential that is there but wrong is a 401 all the same (the README's table).
    for (const header of [`Bearer ${uniq('unknown')}`, 'Basic abc']) {
      const wrong = await send('{ __schema { types { name } } }', header);
      expect(wrong.status).toBe(401);
      expect(wrong.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }

    const typename = await send('{ __typename }', null);
    expect(typename.status).toBe(200);
    expect(typename.body).toEqual({ data: { __typename: 'Query' } });

    const type = await send('{ __type(name: "User") { fields { name } } }', null);
    expect(type.status).toBe(200);
    expect(type.body.data.__type.fields.map((f: { name: string }) => f.name)).toEqual(expect.arrayContaining(['id', 'tokens']));
  });

  test('a valid token works; the scheme name is case-insensitive', async () => {
    const token = await tokenFor('');
    for (const header of [`Bearer ${token}`, `bearer ${token}`]) {
      const res = await send('{ viewer { scope } }', header);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { viewer: { scope: '' } } });
    }
  });
});
