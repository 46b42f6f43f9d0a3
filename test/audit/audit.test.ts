import { uniq } from '../support/names.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * SPEC §9 audit log: one event per record a successful write changed, in the write's own
 * transaction (none for a refused write), with actor, request id, action, record and the changed
 * fields (secrets redacted); read through GET /audit/ and GraphQL auditEvents with audit:read;
 * append-only.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

interface Event {
  id: number;
  action: string;
  resource: string;
  recordID: number;
  actorTokenID: number | null;
  actorUserID: number | null;
  requestId: string | null;
  changes: Record<string, { before: unknown; after: unknown }>;
}

/** The events appended since `after` (an event id), oldest first. */
async function eventsSince(after: number): Promise<Event[]> {
  const res = await svc.request('GET', `/audit/?filter=${encodeURIComponent(`id gt ${after}`)}&orderBy=id&pageSize=1000`);
  expect(res.status).toBe(200);
  return res.body;
}
async function lastEventId(): Promise<number> {
  const res = await svc.request('GET', '/audit/?orderBy=-id&pageSize=1');
  return res.body[0]?.id ?? 0;
}

test('an event for each kind of write, with the actor, the request id and the changed fields', async () => {
  const start = await lastEventId();
  const rid = (n: number) => ({ 'X-Request-Id': `audit-${n}` });
  const user = (await svc.request('POST', '/user/', { body: { firstName: 'Au', lastName: 'Dit' }, headers: rid(1) })).body;
  await svc.request('PUT', `/user/${user}`, { body: { firstName: 'Au', lastName: 'Dited' }, headers: rid(2) });
  await svc.request('PATCH', `/user/${user}`, { body: { status: 3 }, headers: rid(3) });
  await svc.request('PATCH', `/user/${user}/status`, { body: { status: 4 }, headers: rid(4) });
  const app = (await svc.request('POST', '/application/', { body: { name: uniq('audit') }, headers: rid(5) })).body;
  await svc.request('POST', `/user/${user}/application/`, { body: [app], headers: rid(6) });
  await svc.request('PUT', `/user/${user}/application/${app}`, { body: { right: 5 }, headers: rid(7) });
  await svc.request('DELETE', `/user/${user}/application/`, { body: [app], headers: rid(8) });
  const reserved = (await svc.request('POST', '/apply/token/id/', { headers: rid(9) })).body;
  const secret = uniq('audit-secret');
  await svc.request('POST', '/token/', { body: { id: reserved, userID: user, accessToken: secret }, headers: rid(10) });
  await svc.request('POST', '/oauth/revoke', { body: { token: secret }, headers: rid(11) });
  await svc.request('DELETE', `/user/${user}`, { headers: rid(12) });
  await svc.request('POST', `/user/${user}/restore`, { headers: rid(13) });

  const events = await eventsSince(start);
  const [admin] = await svc.sql<{ id: string; user_id: string }>('select id, user_id from tokens where scope = ? order by id limit 1', ['*']);
  expect(events.map((e) => [e.requestId, e.action, e.resource, e.recordID])).toEqual([
    ['audit-1', 'create', 'user', user],
    ['audit-2', 'update', 'user', user],
    ['audit-3', 'patch', 'user', user],
    ['audit-4', 'status', 'user', user],
    ['audit-5', 'create', 'application', app],
    ['audit-6', 'link', 'application_link', user],
    ['audit-7', 'right', 'application_link', user],
    ['audit-8', 'unlink', 'application_link', user],
    ['audit-9', 'apply', 'token', reserved],
    ['audit-10', 'create', 'token', reserved],
    ['audit-11', 'revoke', 'token', reserved],
    ['audit-12', 'delete', 'user', user],
    ['audit-13', 'restore', 'user', user],
  ]);
  for (const e of events) expect({ token: e.actorTokenID, user: e.actorUserID }).toEqual({ token: Number(admin.id), user: Number(admin.user_id) });
  expect(events[1].changes).toEqual({ lastName: { before: 'Dit', after: 'Dited' } });
  expect(events[2].changes).toEqual({ status: { before: 0, after: 3 } });
  expect(events[3].changes).toEqual({ status: { before: 3, after: 4 } });
  expect(events[5].changes).toEqual({ applicationID: { before: null, after: app } });
  expect(events[6].changes).toMatchObject({ right: { before: 0, after: 5 } });
  expect(events[9].changes.accessToken).toEqual({ before: null, after: '[redacted]' });
  expect(events[11].changes.deletedAt).toEqual({ before: null, after: expect.stringMatching(/^\d{4}-/) });
  expect(events[12].changes.deletedAt).toEqual({ before: events[11].changes.deletedAt.after, after: null });
  // The secret never reaches the log, in any form.
  const dump = JSON.stringify(await svc.sql('select * from audit_events'));
  expect(dump).not.toContain(secret);
});

test('a refused or rolled-back write leaves no event; a link call creating two links appends two', async () => {
  const user = (await svc.request('POST', '/user/', { body: { firstName: 'Ro', lastName: 'Lled' } })).body;
  const apps = [];
  for (let i = 0; i < 2; i++) apps.push((await svc.request('POST', '/application/', { body: { name: uniq('audit') } })).body);
  const start = await lastEventId();
  expect((await svc.request('PATCH', `/user/${user}`, { body: { status: 'x' } })).status).toBe(400);
  expect((await svc.request('POST', `/user/${user}/application/`, { body: [apps[0], 987654321] })).status).toBe(400); // unknown id: nothing linked
  expect((await svc.request('POST', '/application/', { body: { name: (await svc.request('GET', `/application/${apps[0]}`)).body.name } })).status).toBe(409);
  // A GraphQL mutation whose second field fails rolls back the first, and its event.
  const gql = await svc.graphql(
    `mutation($id: ID!) { a: patchUser(id: $id, input: { status: 9 }) { id } b: patchUser(id: "987654321", input: { status: 1 }) { id } }`,
    { id: String(user) },
  );
  expect(gql.body.data).toBeNull();
  expect(await eventsSince(start)).toEqual([]);
  expect((await svc.request('POST', `/user/${user}/application/`, { body: apps })).body).toBe(2);
  expect((await eventsSince(start)).map((e) => e.changes.applicationID.after)).toEqual(apps);
});

test('concurrent writes each get their own event', async () => {
  const start = await lastEventId();
  const ids = await Promise.all(
    Array.from({ length: 8 }, (_, i) => svc.request('POST', '/user/', { body: { firstName: 'Con', lastName: `Current ${i}` } }).then((r) => r.body)),
  );
  const events = await eventsSince(start);
  expect(events.map((e) => e.recordID).sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
  expect(new Set(events.map((e) => e.requestId)).size).toBe(8);
});

test('concurrent changes of one record: each event’s before is what the one before it left (no change lost or misread)', async () => {
  const user = (await svc.request('POST', '/user/', { body: { firstName: 'Race', lastName: 'Start' } })).body;
  const start = await lastEventId();
  // More writes of the same row at once than the pool has connections: updates that read the row
  // while another changed it run again (src/resource/service.ts updateRows).
  const names = Array.from({ length: 24 }, (_, i) => `Race ${i}`);
  const answers = await Promise.all(
    names.map((lastName, i) =>
      i % 2
        ? svc.request('PATCH', `/user/${user}`, { body: { lastName } }).then((r) => r.status)
        : svc
            .graphql('mutation($id: ID!, $lastName: String!) { patchUser(id: $id, input: { lastName: $lastName }) { id } }', { id: String(user), lastName })
            .then((r) => (r.body.errors ? r.body.errors : 200)),
    ),
  );
  expect(answers).toEqual(names.map(() => 200));
  const events = await eventsSince(start);
  expect(events).toHaveLength(24);
  const chain = events.map((e) => e.changes.lastName as { before: string; after: string });
  expect(chain[0].before).toBe('Start');
  for (let i = 1; i < chain.length; i++) expect(chain[i].before).toBe(chain[i - 1].after);
  expect(chain.map((c) => c.after).sort()).toEqual([...names].sort());
  const [row] = await svc.sql<{ last_name: string }>('select last_name from users where id = ?', [user]);
  expect(row.last_name).toBe(chain.at(-1)!.after);
});

test('bulk revoke appends one event per token revoked', async () => {
  const user = (await svc.request('POST', '/user/', { body: { firstName: 'Bulk', lastName: 'Revoke' } })).body;
  for (let i = 0; i < 3; i++) await svc.request('POST', '/token/', { body: { userID: user, accessToken: uniq('bulk') } });
  const start = await lastEventId();
  expect((await svc.request('DELETE', `/token/?filter=${encodeURIComponent(`userID eq ${user}`)}`)).body).toEqual({ revoked: 3, skipped: 0 });
  const events = await eventsSince(start);
  expect(events.map((e) => e.action)).toEqual(['revoke', 'revoke', 'revoke']);
});

test('reading needs audit:read; GraphQL auditEvents answers the same events; the table refuses changes', async () => {
  const reader = await svc.tokenWith('user:read token:read');
  expect((await svc.request('GET', '/audit/', { token: reader })).status).toBe(403);
  const auditor = await svc.tokenWith('audit:read');
  const rest = await svc.request('GET', '/audit/?orderBy=-id&pageSize=3', { token: auditor });
  expect(rest.status).toBe(200);
  expect(Number(rest.headers.get('x-total-count'))).toBeGreaterThan(10);
  const gql = await svc.graphql(
    '{ auditEvents(orderBy: [{ id: DESC }], pageSize: 3) { total data { id action resource recordID changes } } }',
    {},
    { token: auditor },
  );
  expect(gql.body.data.auditEvents.data.map((e: { id: string }) => Number(e.id))).toEqual(rest.body.map((e: Event) => e.id));
  expect(gql.body.data.auditEvents.data[0].changes).toEqual(rest.body[0].changes);
  expect((await svc.graphql('{ auditEvents { total } }', {}, { token: reader })).body.errors[0].extensions.code).toBe('FORBIDDEN');
  // No route changes or deletes an event, and the database refuses it too.
  expect((await svc.request('DELETE', `/audit/${rest.body[0].id}`)).status).toBe(404);
  expect((await svc.request('DELETE', '/audit/')).status).toBe(405);
  await expect(svc.sql('update audit_events set action = ? where id = ?', ['x', rest.body[0].id])).rejects.toThrow(/append-only/);
  await expect(svc.sql('delete from audit_events where id = ?', [rest.body[0].id])).rejects.toThrow(/append-only/);
});

describe('what a delete takes with it has events of its own (SPEC §9: one per record changed)', () => {
  test('a user delete appends its own event, then a token delete per live token and an unlink per live link, secrets redacted', async () => {
    const user = (await svc.request('POST', '/user/', { body: { firstName: 'Cas', lastName: 'Cade' } })).body;
    const secrets = [uniq('cascade-a'), uniq('cascade-b'), uniq('cascade-gone')];
    const tokens: number[] = [];
    for (const accessToken of secrets) {
      tokens.push((await svc.request('POST', '/token/', { body: { userID: user, accessToken, refreshToken: `r-${accessToken}`, scope: '*' } })).body);
    }
    expect((await svc.request('DELETE', `/token/${tokens[2]}`)).status).toBe(200); // already gone: no second event
    const apps = [];
    for (let i = 0; i < 3; i++) apps.push((await svc.request('POST', '/application/', { body: { name: uniq('cascade') } })).body);
    const role = (await svc.request('POST', '/role/', { body: { name: uniq('cascade') } })).body;
    expect((await svc.request('POST', `/user/${user}/application/`, { body: apps })).body).toBe(3);
    expect((await svc.request('DELETE', `/user/${user}/application/`, { body: [apps[2]] })).body).toBe(1);
    expect((await svc.request('POST', `/user/${user}/role/`, { body: [role] })).body).toBe(1);
    const start = await lastEventId();

    expect((await svc.request('DELETE', `/user/${user}`, { headers: { 'X-Request-Id': 'cascade-1' } })).status).toBe(200);
    const events = await eventsSince(start);
    const deletedAt = events[0].changes.deletedAt.after;
    expect(deletedAt).toEqual(expect.stringMatching(/^\d{4}-/));
    expect(events.map((e) => [e.action, e.resource, e.recordID, e.changes])).toEqual([
      ['delete', 'user', user, { deletedAt: { before: null, after: deletedAt } }],
      ['delete', 'token', tokens[0], { deletedAt: { before: null, after: deletedAt } }],
      ['delete', 'token', tokens[1], { deletedAt: { before: null, after: deletedAt } }],
      ['unlink', 'application_link', user, { applicationID: { before: apps[0], after: null } }],
      ['unlink', 'application_link', user, { applicationID: { before: apps[1], after: null } }],
      ['unlink', 'role_link', user, { roleID: { before: role, after: null } }],
    ]);
    // The same actor and request for each; the same shape as a token's own delete and an unlink call write.
    expect(new Set(events.map((e) => JSON.stringify([e.actorTokenID, e.actorUserID, e.requestId])))).toEqual(
      new Set([JSON.stringify([events[0].actorTokenID, events[0].actorUserID, 'cascade-1'])]),
    );
    const ownDelete = (await eventsSince(0)).find((e) => e.resource === 'token' && e.recordID === tokens[2] && e.action === 'delete');
    expect(Object.keys(ownDelete!.changes)).toEqual(['deletedAt']);
    const dump = JSON.stringify(await svc.sql('select * from audit_events'));
    for (const secret of secrets) expect(dump).not.toContain(secret);

    // GraphQL audit readers see the same events.
    const gql = await svc.graphql(
      'query($after: ID!) { auditEvents(filter: { id: { gt: $after } }, orderBy: [{ id: ASC }]) { data { id action resource recordID changes } } }',
      { after: String(start) },
    );
    expect(gql.body.data.auditEvents.data.map((e: any) => [Number(e.id), e.action, e.resource, Number(e.recordID), e.changes])).toEqual(
      events.map((e) => [e.id, e.action, e.resource, e.recordID, e.changes]),
    );
  });

  test('an application or role delete appends an unlink for each user it was linked to', async () => {
    const users = [];
    for (let i = 0; i < 3; i++) users.push((await svc.request('POST', '/user/', { body: { firstName: 'Linked', lastName: `User ${i}` } })).body);
    const app = (await svc.request('POST', '/application/', { body: { name: uniq('cascade-app') } })).body;
    const role = (await svc.request('POST', '/role/', { body: { name: uniq('cascade-role') } })).body;
    for (const user of users) {
      expect((await svc.request('POST', `/user/${user}/application/`, { body: [app] })).body).toBe(1);
      expect((await svc.request('POST', `/user/${user}/role/`, { body: [role] })).body).toBe(1);
    }
    expect((await svc.request('DELETE', `/user/${users[2]}/application/`, { body: [app] })).body).toBe(1); // unlinked before: no event
    const start = await lastEventId();

    expect((await svc.request('DELETE', `/application/${app}`)).status).toBe(200);
    const destroyed = await svc.graphql('mutation($id: ID!) { destroyRole(id: $id) }', { id: String(role) });
    expect(destroyed.body).toEqual({ data: { destroyRole: true } });
    const events = await eventsSince(start);
    expect(events.map((e) => [e.action, e.resource, e.recordID, e.changes])).toEqual([
      ['delete', 'application', app, { deletedAt: { before: null, after: expect.stringMatching(/^\d{4}-/) } }],
      ['unlink', 'application_link', users[0], { applicationID: { before: app, after: null } }],
      ['unlink', 'application_link', users[1], { applicationID: { before: app, after: null } }],
      ['delete', 'role', role, { deletedAt: { before: null, after: expect.stringMatching(/^\d{4}-/) } }],
      ['unlink', 'role_link', users[0], { roleID: { before: role, after: null } }],
      ['unlink', 'role_link', users[1], { roleID: { before: role, after: null } }],
      ['unlink', 'role_link', users[2], { roleID: { before: role, after: null } }],
    ]);
  });

  test('a user delete refused by the grant rule appends nothing', async () => {
    const user = (await svc.request('POST', '/user/', { body: { firstName: 'Kept', lastName: 'User' } })).body;
    expect((await svc.request('POST', '/token/', { body: { userID: user, accessToken: uniq('kept'), scope: '*' } })).status).toBe(201);
    const caller = await svc.tokenWith('user:write');
    const start = await lastEventId();
    expect((await svc.request('DELETE', `/user/${user}`, { token: caller })).status).toBe(403);
    expect(await eventsSince(start)).toEqual([]);
  });
});
