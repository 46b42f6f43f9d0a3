import { CheckedSql, StaleTokenHint, TokenHints } from '../../src/auth/checked-sql.js';
import { updateStatement } from '../../src/resource/writes.js';
import { webhookService } from '../../src/webhooks/webhook.service.js';
import { users } from '../../src/users/user.resource.js';
import { startTestService, type TestService } from '../support/service.js';
import { uniq } from '../support/names.js';

/**
 * A REST read whose token this instance has seen checks it in the read's own statement
 * (src/auth/checked-sql.ts): one statement instead of two, and still nothing answered that the
 * token, as the database has it at that statement, does not allow (SPEC §2: a revoked token is
 * refused at the very next request, on every instance).
 */
let svc: TestService;
beforeAll(async () => {
  // The subgraph's fields too: `_entities` reads through the loaders.
  svc = await startTestService({ READ_CACHE_MB: '0', GRAPHQL_FEDERATION: 'true' });
});
afterAll(async () => {
  await svc?.stop();
});

/** A user to read, and a token of `scope` whose hint this instance holds (it has been used once). */
async function seen(scope: string): Promise<{ id: number; token: string }> {
  const id = (await svc.request('POST', '/user/', { body: { firstName: 'Checked', lastName: uniq('reads') } })).body as number;
  const token = await svc.tokenWith(scope);
  expect((await svc.request('GET', `/user/${id}`, { token })).status).toBe(scope.includes('user:read') ? 200 : 403);
  return { id, token };
}

const tokenRow = (token: string) => svc.sql<{ id: number }>('select id from tokens where access_token_hmac = ?', [svc.hmac(token)]);

/** The token changed in the database behind this instance, as another instance would change it. */
const REVOKE = 'update tokens set deleted_at = now() where access_token_hmac = ?';
const revoke = (token: string) => svc.sql(REVOKE, [svc.hmac(token)]);
const setScope = (token: string, scope: string) => svc.sql('update tokens set scope = ? where access_token_hmac = ?', [scope, svc.hmac(token)]);

/** Ways a token stops being live behind this instance (statements of the token's keyed hash). */
const ENDED = [
  ['revoked', REVOKE],
  ['expired', `update tokens set expire_at = now() - interval '1 second' where access_token_hmac = ?`],
] as const;

/** The token as the database has it now: what a hint holds. */
async function hintOf(token: string) {
  const [row] = await svc.sql<{ id: number; user_id: number; scope: string }>('select id, user_id, scope from tokens where access_token_hmac = ?', [
    svc.hmac(token),
  ]);
  return { tokenId: Number(row.id), userId: Number(row.user_id), scope: row.scope };
}

const checkedSql = (token: string, hint: { tokenId: number; userId: number; scope: string }) =>
  new CheckedSql(svc.running.db.sql, [svc.hmac(token)], hint, new TokenHints(svc.running.db));

const firstNameOf = async (id: number) => (await svc.sql<{ first_name: string }>('select first_name from users where id = ?', [id]))[0].first_name;

test('a read by id: one statement, the token checked in it, the same answer', async () => {
  const { id, token } = await seen('user:read');
  const before = await svc.request('GET', `/user/${id}`, { token: svc.adminToken });
  svc.queries.length = 0;
  const reply = await svc.request('GET', `/user/${id}`, { token });
  expect(reply.status).toBe(200);
  expect(reply.body).toEqual(before.body);
  expect(svc.queries).toEqual([expect.stringMatching(/access_token_hmac[\s\S]*from users/)]);
});

test('a record that is not there is still a 404, a list still has its rows and total', async () => {
  const { token } = await seen('user:read');
  svc.queries.length = 0;
  const missing = await svc.request('GET', '/user/999999999', { token });
  expect(missing.status).toBe(404);
  expect(missing.body.error).toBe('NOT_FOUND');
  expect(svc.queries).toHaveLength(1);
  const path = '/user/?pageSize=3';
  const byAdmin = await svc.request('GET', path, { token: svc.adminToken });
  await svc.request('GET', path, { token }); // now both tokens were seen
  const checked = await svc.request('GET', path, { token });
  expect(checked.status).toBe(200);
  expect(checked.body).toEqual(byAdmin.body);
  expect(checked.body.length).toBeGreaterThan(0);
  expect(checked.headers.get('x-total-count')).toBe(byAdmin.headers.get('x-total-count'));
});

describe('a token seen before, changed in the database behind this instance (as another instance would)', () => {
  const userDeleted = ['its user deleted', 'update users set deleted_at = now() where id = (select user_id from tokens where access_token_hmac = ?)'] as const;
  test.each([...ENDED, userDeleted])('%s: the next read is a 401', async (_change, sql) => {
    const { id, token } = await seen('user:read');
    await svc.sql(sql, [svc.hmac(token)]);
    const reply = await svc.request('GET', `/user/${id}`, { token });
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(reply.body.firstName).toBeUndefined();
  });

  test('its scope narrowed: a 403, not the record', async () => {
    const { id, token } = await seen('user:read');
    await setScope(token, 'token:read');
    const reply = await svc.request('GET', `/user/${id}`, { token });
    expect(reply.status).toBe(403);
    expect(reply.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="user:read"');
    // And from then on as the database has it.
    expect((await svc.request('GET', `/user/${id}`, { token })).status).toBe(403);
  });

  test('its scope widened: the record, not a 403', async () => {
    const { id, token } = await seen('token:read');
    await setScope(token, 'user:read token:read');
    const reply = await svc.request('GET', `/user/${id}`, { token });
    expect(reply.status).toBe(200);
    expect(reply.body.id).toBe(id);
  });

  test('revoked while its 403 is being answered: a 401', async () => {
    const { id, token } = await seen('token:read');
    expect(await tokenRow(token)).toHaveLength(1);
    await revoke(token);
    expect((await svc.request('GET', `/user/${id}`, { token })).status).toBe(401);
  });
});

describe('GraphQL: a query checks its token in its first read, anything else before it runs', () => {
  const userQuery = (id: number) => `query ById { user(id: ${id}) { id firstName } }`;

  test('a query by id: one statement, the same answer', async () => {
    const { id, token } = await seen('user:read');
    await svc.graphql(userQuery(id), undefined, { token }); // seen over GraphQL too
    svc.queries.length = 0;
    const reply = await svc.graphql(userQuery(id), undefined, { token });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ data: { user: { id: String(id), firstName: 'Checked' } } });
    expect(svc.queries).toEqual([expect.stringMatching(/access_token_hmac[\s\S]*from users/)]);
  });

  test("a query whose first statement is a loader's (a router's references): one statement, the check in it", async () => {
    const { id, token } = await seen('user:read');
    const entities = `query($r: [_Any!]!) { _entities(representations: $r) { ... on User { id firstName } } }`;
    const variables = { r: [{ __typename: 'User', id: String(id) }] };
    await svc.graphql(entities, variables, { token }); // seen over GraphQL too
    svc.queries.length = 0;
    const reply = await svc.graphql(entities, variables, { token });
    expect(reply.body).toEqual({ data: { _entities: [{ id: String(id), firstName: 'Checked' }] } });
    expect(svc.queries).toEqual([expect.stringMatching(/access_token_hmac[\s\S]*from users t where t\.id = any/)]);
    await revoke(token);
    const revoked = await svc.graphql(entities, variables, { token });
    expect(revoked.status).toBe(401);
    expect(revoked.text).not.toContain('Checked');
  });

  test('revoked: a 401, no data', async () => {
    const { id, token } = await seen('user:read');
    await revoke(token);
    const reply = await svc.graphql(userQuery(id), undefined, { token });
    expect(reply.status).toBe(401);
    expect(reply.body.data).toBeUndefined();
    expect(reply.text).not.toContain('Checked');
  });

  test('its scope narrowed: FORBIDDEN, as the database has it, and no internal error logged', async () => {
    const { id, token } = await seen('user:read');
    await setScope(token, 'token:read');
    const lines = svc.logLines.length;
    const reply = await svc.graphql(userQuery(id), undefined, { token });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual({ user: null });
    expect(reply.body.errors.map((e: any) => e.extensions.code)).toEqual(['FORBIDDEN']);
    expect(svc.logLines.slice(lines).filter((line) => /"level":"error"|graphql operation failed/.test(line))).toEqual([]);
  });

  test('a mutation with a revoked token: a 401, and nothing written', async () => {
    const { id, token } = await seen('user:write user:read');
    await revoke(token);
    const reply = await svc.graphql(`mutation { patchUser(id: ${id}, input: { firstName: "Written" }) { id } }`, undefined, { token });
    expect(reply.status).toBe(401);
    expect(await firstNameOf(id)).toBe('Checked');
  });
});

test('on checked reads, a statement that is not a plain read waits for the check: with a revoked token it never runs', async () => {
  const { id, token } = await seen('user:read');
  const hint = await hintOf(token);
  await revoke(token);
  const reads = checkedSql(token, hint);
  const write = reads.rows(`with w as (update users set last_name = 'Written' where id = ?::bigint returning id) select id from w`, [id]);
  await expect(write).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  await expect(reads.verified()).resolves.toBeNull();
  const [user] = await svc.sql<{ last_name: string }>('select last_name from users where id = ?', [id]);
  expect(user.last_name).not.toBe('Written');
});

describe('a write checks its token in its own statement: it commits only if the token is live and as it was seen', () => {
  const patch = (id: number, token: string, firstName: string) => svc.request('PATCH', `/user/${id}`, { token, body: { firstName } });
  const events = (id: number) =>
    svc.sql<{ actor_token_id: string; changes: any }>(
      `select actor_token_id, changes from audit_events where resource = 'user' and record_id = ? order by id`,
      [id],
    );

  test('a PATCH: one statement, the record changed, its audit event by that token', async () => {
    const { id, token } = await seen('user:write user:read');
    const [tokenId] = await tokenRow(token);
    svc.queries.length = 0;
    const reply = await patch(id, token, 'Patched');
    expect(reply.status).toBe(200);
    expect(reply.body).toBe(1); // the original service's "rows matched"
    expect(svc.queries).toEqual([expect.stringMatching(/access_token_hmac[\s\S]*update users/)]);
    expect(await firstNameOf(id)).toBe('Patched');
    const audit = await events(id);
    expect(audit.at(-1)).toEqual({ actor_token_id: String(tokenId.id), changes: { firstName: { before: 'Checked', after: 'Patched' } } });
  });

  test('a create and an id applied for: one statement each; a delete (its cascade locked first) after the check', async () => {
    const { token } = await seen('user:write user:read');
    svc.queries.length = 0;
    const created = await svc.request('POST', '/user/', { token, body: { firstName: 'Made', lastName: uniq('checked') } });
    expect(created.status).toBe(201);
    const applied = await svc.request('POST', '/apply/user/id/', { token });
    expect(applied.status).toBe(201);
    expect(svc.queries).toEqual([
      expect.stringMatching(/access_token_hmac[\s\S]*insert into users/),
      expect.stringMatching(/access_token_hmac[\s\S]*insert into id_reservations/),
    ]);
    expect(await firstNameOf(created.body)).toBe('Made');
    svc.queries.length = 0;
    const gone = await svc.request('DELETE', `/user/${created.body}`, { token });
    expect(gone.status).toBe(200);
    expect(svc.queries[0]).toMatch(/^select t\.id, t\.user_id, t\.scope\s+from tokens/);
    expect(svc.queries[1]).toBe('begin');
    const [row] = await svc.sql<{ deleted: boolean }>('select deleted_at is not null as deleted from users where id = ?', [created.body]);
    expect(row.deleted).toBe(true);
  });

  test('a PATCH of a record that is not there is still a 404', async () => {
    const { token } = await seen('user:write user:read');
    const reply = await patch(999999999, token, 'Nobody');
    expect(reply.status).toBe(404);
    expect(reply.body.error).toBe('NOT_FOUND');
  });

  test.each(ENDED)('%s: a 401, nothing written, no audit event', async (_change, sql) => {
    const { id, token } = await seen('user:write user:read');
    const before = await events(id);
    await svc.sql(sql, [svc.hmac(token)]);
    const reply = await patch(id, token, 'Written');
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(await firstNameOf(id)).toBe('Checked');
    expect(await events(id)).toEqual(before);
  });

  test('its scope narrowed: a 403, nothing written', async () => {
    const { id, token } = await seen('user:write user:read');
    await setScope(token, 'user:read');
    const reply = await patch(id, token, 'Written');
    expect(reply.status).toBe(403);
    expect(await firstNameOf(id)).toBe('Checked');
  });

  test('its scope changed but still allowing the write: written once, by the token as it is now', async () => {
    const { id, token } = await seen('user:write user:read');
    const before = (await events(id)).length;
    await setScope(token, 'user:write user:read token:read');
    const reply = await patch(id, token, 'Again');
    expect(reply.status).toBe(200);
    expect(reply.body).toBe(1);
    const audit = await events(id);
    expect(audit).toHaveLength(before + 1);
    expect(audit.at(-1)!.changes).toEqual({ firstName: { before: 'Checked', after: 'Again' } });
  });

  test('GraphQL patchUser: one statement; revoked: a 401, nothing written', async () => {
    const { id, token } = await seen('user:write user:read');
    const mutation = (name: string) => `mutation { patchUser(id: ${id}, input: { firstName: "${name}" }) { id firstName } }`;
    svc.queries.length = 0;
    const reply = await svc.graphql(mutation('ByGraphQL'), undefined, { token });
    expect(reply.body).toEqual({ data: { patchUser: { id: String(id), firstName: 'ByGraphQL' } } });
    expect(svc.queries).toEqual([expect.stringMatching(/access_token_hmac[\s\S]*update users/)]);
    await revoke(token);
    const refused = await svc.graphql(mutation('Refused'), undefined, { token });
    expect(refused.status).toBe(401);
    expect(refused.body.data).toBeUndefined();
    expect(await firstNameOf(id)).toBe('ByGraphQL');
  });
});

describe('CheckedSql on its own: a hint the database no longer holds', () => {
  async function hinted(scope: string) {
    const { id, token } = await seen(scope);
    const asSeen = await hintOf(token);
    const checked = (hint = asSeen) => checkedSql(token, hint);
    return { id, token, asSeen, checked };
  }
  const patchOf = (id: number, name: string) =>
    updateStatement(users, id, { firstName: name }, 'patch', {
      caller: { tokenId: 0, userId: 0, scopes: new Set(), client: '', requestId: 'test' },
      optimistic: true,
    });

  test('a write under a stale scope changes nothing and says the hint is stale', async () => {
    const { id, asSeen, checked } = await hinted('user:write user:read');
    const sql = checked({ ...asSeen, scope: 'user:write' });
    await expect(sql.write(patchOf(id, 'Stale'))).rejects.toBeInstanceOf(StaleTokenHint);
    expect(await firstNameOf(id)).toBe('Checked');
  });

  test('a write with a revoked token changes nothing: a 401', async () => {
    const { id, token, checked } = await hinted('user:write user:read');
    await revoke(token);
    const sql = checked();
    await expect(sql.write(patchOf(id, 'Revoked'))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    await expect(sql.verified()).resolves.toBeNull();
    expect(await firstNameOf(id)).toBe('Checked');
  });

  test('nothing leaves the database before the check: a webhook url goes to DNS only once the token is confirmed', async () => {
    const webhooks = webhookService(svc.running.db.keyring, { allowPrivate: false, auditResources: ['user'] }, { cascadeOf: () => [] });
    const caller = { tokenId: 0, userId: 0, scopes: new Set(['*']), client: '', requestId: 'test' };
    const { token, checked } = await hinted('webhook:write');
    svc.queries.length = 0;
    // Confirmed (the token looked up by itself, first), then the host's check refuses it, nothing written.
    await expect(webhooks.create(caller, checked().mayWrite(), { url: 'http://localhost/hook' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      details: [{ field: 'url', message: expect.stringMatching(/loopback/) }],
    });
    expect(svc.queries).toEqual([expect.stringMatching(/^select t\.id, t\.user_id, t\.scope\s+from tokens/)]);
    await revoke(token);
    // Revoked: the 401, before the name was looked up.
    await expect(webhooks.create(caller, checked().mayWrite(), { url: 'http://localhost/hook' })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  test('a request that may write: a read after the first waits for the check; a read-only request reads beside it', async () => {
    const { token, checked } = await hinted('user:read');
    await revoke(token);
    const reading = checked();
    const firstRead = reading.rows('select 1 as one');
    await expect(reading.rows('select 2 as two')).resolves.toEqual([{ two: 2 }]);
    await expect(firstRead).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    const writing = checked().mayWrite();
    const first = writing.rows('select 1 as one');
    await expect(writing.rows('select 2 as two')).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    await expect(first).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });
});
