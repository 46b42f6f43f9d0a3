import { uniq } from '../support/names.js';
import { startTestService, type TestService } from '../support/service.js';
import { createToken, createUser } from '../support/users.js';

/**
 * Deleting a user ends its tokens (docs/rest.md#users): the grant rule that guards every change of
 * a token guards that too. A user delete that would end a token the caller could not have granted
 * is a 403 naming the token (by id, never by value) and the scope needed, and changes nothing, on
 * REST and GraphQL. A restore brings back only the user (SPEC §9), so it ends or revives no token.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** Whether a bearer value still authenticates (any valid token may read itself: GraphQL viewer). */
async function authenticates(value: string): Promise<boolean> {
  const res = await svc.graphql('{ viewer { id } }', {}, { token: value });
  return Boolean(res.body.data?.viewer);
}

const liveTokens = async (userID: number) =>
  (await svc.sql<{ id: string }>('select id from tokens where user_id = ? and deleted_at is null order by id', [userID])).map((r) => Number(r.id));

describe('the grant rule on a user delete', () => {
  test('a user:write token cannot delete the owner of a "*" token: 403 naming the token and "*", nothing changed, the token still works', async () => {
    const user = await createUser(svc, { firstName: 'Doomed', lastName: uniq('star') });
    const star = await createToken(svc, user, { scope: '*' });
    const mine = await createToken(svc, user, { scope: 'openid' }); // a scope word the service does not own: anyone may end it
    const caller = await svc.tokenWith('user:write');
    const before = await svc.snapshot();

    const res = await svc.request('DELETE', `/user/${user}`, { token: caller });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 403, error: 'FORBIDDEN', details: [{ field: 'id', message: expect.stringContaining(`user ${user}`) }] });
    expect(res.body.message).toMatch(new RegExp(`user ${user} would revoke token ${star.id} \\("\\*"\\)`));
    expect(res.body.message).not.toMatch(new RegExp(`\\b${mine.id}\\b`));
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="*"');
    expect(res.text).not.toContain(star.accessToken);

    expect(await svc.snapshot()).toEqual(before);
    expect((await svc.request('GET', `/user/${user}`)).status).toBe(200);
    expect(await liveTokens(user)).toEqual([star.id, mine.id]);
    expect(await authenticates(star.accessToken)).toBe(true);

    // The `*` token's holder may: the user and both tokens go.
    expect(await svc.request('DELETE', `/user/${user}`)).toMatchObject({ status: 200, body: 1 });
    expect(await liveTokens(user)).toEqual([]);
    expect(await authenticates(star.accessToken)).toBe(false);
  });

  test('the 403 names every token the caller could not have granted and the scope words it lacks; once they are revoked, the delete goes through', async () => {
    const user = await createUser(svc, { firstName: 'Doomed', lastName: uniq('mixed') });
    const audit = await createToken(svc, user, { scope: 'audit:read openid' });
    const reader = await createToken(svc, user, { scope: 'token:read' });
    const users = await createToken(svc, user, { scope: 'user:*' });
    const caller = await svc.tokenWith('user:write token:*');

    const res = await svc.request('DELETE', `/user/${user}`, { token: caller });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain(`would revoke tokens ${audit.id} ("audit:read"), ${users.id} ("user:*")`);
    expect(res.body.message).not.toMatch(new RegExp(`\\b${reader.id}\\b`));
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="audit:read user:*"');
    expect(await liveTokens(user)).toEqual([audit.id, reader.id, users.id]);

    // The caller cannot revoke them either (the same rule); the `*` token can, and then the caller may delete the user.
    expect((await svc.request('DELETE', `/token/${audit.id}`, { token: caller })).status).toBe(403);
    for (const token of [audit, users]) expect((await svc.request('DELETE', `/token/${token.id}`)).status).toBe(200);
    expect(await svc.request('DELETE', `/user/${user}`, { token: caller })).toMatchObject({ status: 200, body: 1 });
    expect(await liveTokens(user)).toEqual([]);
  });

  test('a caller deletes a user whose tokens it could all have granted, its own among them', async () => {
    const caller = await svc.tokenWith('user:write token:read');
    const [{ user_id: own }] = await svc.sql<{ user_id: string }>('select user_id from tokens where access_token_hmac = ?', [svc.hmac(caller)]);
    const user = Number(own);
    await createToken(svc, user, { scope: 'token:read openid profile' });
    expect(await svc.request('DELETE', `/user/${user}`, { token: caller })).toMatchObject({ status: 200, body: 1 });
    expect(await liveTokens(user)).toEqual([]);
    expect(await authenticates(caller)).toBe(false);
  });

  test('GraphQL destroyUser gives the same FORBIDDEN, and the mutation as a whole changes nothing', async () => {
    const user = await createUser(svc, { firstName: 'Doomed', lastName: uniq('gql') });
    const star = await createToken(svc, user, { scope: '*' });
    const caller = await svc.tokenWith('user:write');
    const other = await createUser(svc, { firstName: 'Doomed', lastName: uniq('gql-other') });
    const before = await svc.snapshot();
    const res = await svc.graphql(
      'mutation($other: ID!, $id: ID!) { a: patchUser(id: $other, input: { status: 5 }) { id } b: destroyUser(id: $id) }',
      { other: String(other), id: String(user) },
      { token: caller },
    );
    expect(res.body.data).toBeNull();
    expect(res.body.errors).toHaveLength(1);
    const [error] = res.body.errors;
    expect(error.path).toEqual(['b']);
    expect(error.extensions).toMatchObject({ code: 'FORBIDDEN', field: 'id' });
    expect(error.message).toContain(`would revoke token ${star.id} ("*")`);
    expect(error.message).toContain('a token holding "*" may delete the user');
    expect(res.text).not.toContain(star.accessToken);
    expect(await svc.snapshot()).toEqual(before);
    expect(await authenticates(star.accessToken)).toBe(true);
  });

  test('the statements of a delete do not grow with the tokens and links it takes', async () => {
    const statementsOfDelete = async (tokens: number, links: number, caller: string) => {
      const user = await createUser(svc, { firstName: 'Doomed', lastName: uniq('count') });
      await svc.insertTokens(
        user,
        Array.from({ length: tokens }, () => uniq('bulk')),
      );
      const apps: number[] = [];
      for (let i = 0; i < links; i++) apps.push((await svc.request('POST', '/application/', { body: { name: uniq('count') } })).body);
      if (apps.length) expect((await svc.request('POST', `/user/${user}/application/`, { body: apps })).body).toBe(links);
      svc.queries.length = 0;
      expect(await svc.request('DELETE', `/user/${user}`, { token: caller })).toMatchObject({ status: 200, body: 1 });
      const [{ events }] = await svc.sql<{ events: string }>(
        `select count(*) as events from audit_events a join tokens t on t.id = a.record_id where a.resource = 'token' and a.action = 'delete' and t.user_id = ?`,
        [user],
      );
      expect(Number(events)).toBe(tokens);
      return svc.queries.length;
    };
    const narrow = await svc.tokenWith('user:write');
    // A `*` caller pays nothing for the rule; a narrower one one statement, both whatever the count.
    expect(await statementsOfDelete(60, 5, svc.adminToken)).toBe(await statementsOfDelete(1, 1, svc.adminToken));
    expect(await statementsOfDelete(60, 5, narrow)).toBe(await statementsOfDelete(1, 1, narrow));
  });
});

describe('restoring a user brings back the user alone', () => {
  test('its tokens and links stay deleted, one restore event is appended, and user:write suffices (no token comes back)', async () => {
    const user = await createUser(svc, { firstName: 'Doomed', lastName: uniq('restore') });
    const star = await createToken(svc, user, { scope: '*' });
    const app = (await svc.request('POST', '/application/', { body: { name: uniq('restore') } })).body;
    const role = (await svc.request('POST', '/role/', { body: { name: uniq('restore') } })).body;
    expect((await svc.request('POST', `/user/${user}/application/`, { body: [app] })).body).toBe(1);
    expect((await svc.request('POST', `/user/${user}/role/`, { body: [role] })).body).toBe(1);
    expect((await svc.request('DELETE', `/user/${user}`)).status).toBe(200);
    const deleted = await svc.request('GET', `/audit/?filter=${encodeURIComponent(`resource eq user and action eq delete and recordID eq ${user}`)}`);
    const deletedAt = deleted.body[0].changes.deletedAt.after;
    expect(deletedAt).toEqual(expect.stringMatching(/^\d{4}-/));

    const caller = await svc.tokenWith('user:write');
    const [{ last: afterCaller }] = await svc.sql<{ last: string }>('select max(id)::text as last from audit_events');
    const res = await svc.request('POST', `/user/${user}/restore`, { token: caller });
    expect(res).toMatchObject({ status: 200, body: 1 });

    expect((await svc.request('GET', `/user/${user}`)).status).toBe(200);
    expect(await liveTokens(user)).toEqual([]);
    expect(await authenticates(star.accessToken)).toBe(false);
    expect((await svc.request('GET', `/user/${user}/application/`)).body).toEqual([]);
    expect((await svc.request('GET', `/user/${user}/role/`)).body).toEqual([]);
    const links = await svc.sql(
      'select deleted_at is not null as deleted from user_applications where user_id = ? union all select deleted_at is not null from user_roles where user_id = ?',
      [user, user],
    );
    expect(links).toEqual([{ deleted: true }, { deleted: true }]);

    const events = await svc.request('GET', `/audit/?filter=${encodeURIComponent(`id gt ${afterCaller}`)}&orderBy=id`);
    expect(events.body).toEqual([
      expect.objectContaining({
        action: 'restore',
        resource: 'user',
        recordID: user,
        changes: { deletedAt: { before: deletedAt, after: null } },
      }),
    ]);
  });
});
