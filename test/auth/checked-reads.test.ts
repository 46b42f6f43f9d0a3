import { CheckedReads, TokenHints } from '../../src/auth/checked-reads.js';
import { startTestService, type TestService } from '../support/service.js';
import { uniq } from '../support/names.js';

/**
 * A REST read whose token this instance has seen checks it in the read's own statement
 * (src/auth/checked-reads.ts): one statement instead of two, and still nothing answered that the
 * token, as the database has it at that statement, does not allow (SPEC §2: a revoked token is
 * refused at the very next request, on every instance).
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ READ_CACHE_MB: '0' });
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
  test.each([
    ['revoked', 'update tokens set deleted_at = now() where access_token_hmac = ?'],
    ['expired', `update tokens set expire_at = now() - interval '1 second' where access_token_hmac = ?`],
    ['its user deleted', 'update users set deleted_at = now() where id = (select user_id from tokens where access_token_hmac = ?)'],
  ])('%s: the next read is a 401', async (_change, sql) => {
    const { id, token } = await seen('user:read');
    await svc.sql(sql, [svc.hmac(token)]);
    const reply = await svc.request('GET', `/user/${id}`, { token });
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(reply.body.firstName).toBeUndefined();
  });

  test('its scope narrowed: a 403, not the record', async () => {
    const { id, token } = await seen('user:read');
    await svc.sql(`update tokens set scope = 'token:read' where access_token_hmac = ?`, [svc.hmac(token)]);
    const reply = await svc.request('GET', `/user/${id}`, { token });
    expect(reply.status).toBe(403);
    expect(reply.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="user:read"');
    // And from then on as the database has it.
    expect((await svc.request('GET', `/user/${id}`, { token })).status).toBe(403);
  });

  test('its scope widened: the record, not a 403', async () => {
    const { id, token } = await seen('token:read');
    await svc.sql(`update tokens set scope = 'user:read token:read' where access_token_hmac = ?`, [svc.hmac(token)]);
    const reply = await svc.request('GET', `/user/${id}`, { token });
    expect(reply.status).toBe(200);
    expect(reply.body.id).toBe(id);
  });

  test('revoked while its 403 is being answered: a 401', async () => {
    const { id, token } = await seen('token:read');
    expect(await tokenRow(token)).toHaveLength(1);
    await svc.sql('update tokens set deleted_at = now() where access_token_hmac = ?', [svc.hmac(token)]);
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

  test('revoked: a 401, no data', async () => {
    const { id, token } = await seen('user:read');
    await svc.sql('update tokens set deleted_at = now() where access_token_hmac = ?', [svc.hmac(token)]);
    const reply = await svc.graphql(userQuery(id), undefined, { token });
    expect(reply.status).toBe(401);
    expect(reply.body.data).toBeUndefined();
    expect(reply.text).not.toContain('Checked');
  });

  test('its scope narrowed: FORBIDDEN, as the database has it, and no internal error logged', async () => {
    const { id, token } = await seen('user:read');
    await svc.sql(`update tokens set scope = 'token:read' where access_token_hmac = ?`, [svc.hmac(token)]);
    const lines = svc.logLines.length;
    const reply = await svc.graphql(userQuery(id), undefined, { token });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual({ user: null });
    expect(reply.body.errors.map((e: any) => e.extensions.code)).toEqual(['FORBIDDEN']);
    expect(svc.logLines.slice(lines).filter((line) => /"level":"error"|graphql operation failed/.test(line))).toEqual([]);
  });

  test('a mutation with a revoked token: a 401, and nothing written', async () => {
    const { id, token } = await seen('user:write user:read');
    await svc.sql('update tokens set deleted_at = now() where access_token_hmac = ?', [svc.hmac(token)]);
    const reply = await svc.graphql(`mutation { patchUser(id: ${id}, input: { firstName: "Written" }) { id } }`, undefined, { token });
    expect(reply.status).toBe(401);
    const [row] = await svc.sql<{ first_name: string }>('select first_name from users where id = ?', [id]);
    expect(row.first_name).toBe('Checked');
  });
});

test('on checked reads, a statement that is not a plain read waits for the check: with a revoked token it never runs', async () => {
  const { id, token } = await seen('user:read');
  const [row] = await svc.sql<{ id: number; user_id: number; scope: string }>('select id, user_id, scope from tokens where access_token_hmac = ?', [
    svc.hmac(token),
  ]);
  const hint = { tokenId: Number(row.id), userId: Number(row.user_id), scope: row.scope };
  await svc.sql('update tokens set deleted_at = now() where access_token_hmac = ?', [svc.hmac(token)]);
  const reads = new CheckedReads(svc.running.db.sql, [svc.hmac(token)], hint, new TokenHints(svc.running.db));
  const write = reads.rows(`with w as (update users set last_name = 'Written' where id = ?::bigint returning id) select id from w`, [id]);
  await expect(write).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  await expect(reads.verified()).resolves.toBeNull();
  const [user] = await svc.sql<{ last_name: string }>('select last_name from users where id = ?', [id]);
  expect(user.last_name).not.toBe('Written');
});
