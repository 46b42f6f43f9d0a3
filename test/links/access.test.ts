import { svc, UNKNOWN_ID, newUser, newApp, newRole, deleted, appRows, roleRows, live, gone, link, setRight, useService } from '../support/links.js';

/** Links of an unknown or deleted user, the permissions of the link routes, concurrent writes and row locks. */
useService();

describe('unknown or deleted user in the path', () => {
  let app: number;
  let role: number;
  let deletedUser: number;

  beforeAll(async () => {
    app = await newApp();
    role = await newRole();
    deletedUser = await newUser();
    await link(deletedUser, [app]);
    await link(deletedUser, [role], 'role');
    await deleted('/user', deletedUser);
  });

  const routes: Array<[string, string, (user: number) => string, () => unknown]> = [
    ['GET', 'application list', (u) => `/user/${u}/application/`, () => undefined],
    ['POST', 'application link', (u) => `/user/${u}/application/`, () => [app]],
    ['DELETE', 'application unlink', (u) => `/user/${u}/application/`, () => [app]],
    ['GET', 'application link', (u) => `/user/${u}/application/${app}`, () => undefined],
    ['PUT', 'application link', (u) => `/user/${u}/application/${app}`, () => ({ right: 1 })],
    ['GET', 'role list', (u) => `/user/${u}/role/`, () => undefined],
    ['POST', 'role link', (u) => `/user/${u}/role/`, () => [role]],
    ['DELETE', 'role unlink', (u) => `/user/${u}/role/`, () => [role]],
  ];

  test.each(routes)('%s %s answers 404 and changes nothing', async (method, _label, path, body) => {
    for (const user of [UNKNOWN_ID, deletedUser]) {
      const res = await svc.request(method, path(user), { body: body() });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 404, error: 'NOT_FOUND', requestId: expect.any(String) });
    }
    expect(await svc.sql('select 1 from user_applications where user_id = ?', [UNKNOWN_ID])).toEqual([]);
    expect(await svc.sql('select 1 from user_roles where user_id = ?', [UNKNOWN_ID])).toEqual([]);
    // The deleted user's links were soft-deleted with it and stay so.
    expect(await appRows(deletedUser)).toEqual([gone(app)]);
    expect(await roleRows(deletedUser)).toEqual([{ role, deleted: true }]);
  });
});

describe('permissions', () => {
  test('reads need user:read, writes need user:write', async () => {
    const user = await newUser();
    const a = await newApp();
    await link(user, [a]);
    const reader = await svc.tokenWith('user:read');
    expect((await svc.request('GET', `/user/${user}/application/`, { token: reader })).status).toBe(200);
    expect((await svc.request('GET', `/user/${user}/application/${a}`, { token: reader })).status).toBe(200);
    expect((await svc.request('GET', `/user/${user}/role/`, { token: reader })).status).toBe(200);

    const b = await newApp();
    const denied = await svc.request('POST', `/user/${user}/application/`, { token: reader, body: [b] });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('www-authenticate')).toContain('scope="user:write"');
    expect((await svc.request('PUT', `/user/${user}/application/${a}`, { token: reader, body: { right: 2 } })).status).toBe(403);
    expect((await svc.request('DELETE', `/user/${user}/application/`, { token: reader, body: [a] })).status).toBe(403);
    expect(await appRows(user)).toEqual([live(a)]);

    const appsOnly = await svc.tokenWith('application:*');
    expect((await svc.request('GET', `/user/${user}/application/`, { token: appsOnly })).status).toBe(403);

    const writer = await svc.tokenWith('user:write');
    const linked = await svc.request('POST', `/user/${user}/application/`, { token: writer, body: [b] });
    expect(linked.status).toBe(201);
    expect(linked.body).toBe(1);
    expect(await appRows(user)).toEqual([live(a), live(b)]);
  });
});

describe('concurrent writes (on PostgreSQL they race for row locks)', () => {
  test('links and unlinks naming the same ids in opposite orders all succeed; the counts add up', async () => {
    const apps: number[] = [];
    for (let i = 0; i < 8; i++) apps.push(await newApp());
    const roles: number[] = [];
    for (let i = 0; i < 8; i++) roles.push(await newRole());
    for (let round = 0; round < 5; round++) {
      const userId = await newUser();
      const order = (ids: number[], i: number) => (i % 2 ? [...ids].reverse() : ids);
      // 20 application calls (every fourth an unlink) and 10 role links, all at once.
      const [appReplies, roleReplies] = await Promise.all([
        Promise.all(
          Array.from({ length: 20 }, (_, i) => svc.request(i % 4 === 3 ? 'DELETE' : 'POST', `/user/${userId}/application/`, { body: order(apps, i) })),
        ),
        Promise.all(Array.from({ length: 10 }, (_, i) => svc.request('POST', `/user/${userId}/role/`, { body: order(roles, i) }))),
      ]);
      // Links answer 201, unlinks 200, each with a bare count.
      expect(appReplies.map((r) => r.status)).toEqual(Array.from({ length: 20 }, (_, i) => (i % 4 === 3 ? 200 : 201)));
      expect(roleReplies.map((r) => r.status)).toEqual(Array(10).fill(201));
      for (const reply of [...appReplies, ...roleReplies]) expect(typeof reply.body).toBe('number');
      // Every role link was made exactly once, whatever the interleaving.
      expect(roleReplies.reduce((sum, r) => sum + r.body, 0)).toBe(roles.length);
      expect(await roleRows(userId)).toHaveLength(roles.length);
      // Links made minus links removed is what is linked now.
      const made = appReplies.filter((_, i) => i % 4 !== 3).reduce((sum, r) => sum + r.body, 0);
      const removed = appReplies.filter((_, i) => i % 4 === 3).reduce((sum, r) => sum + r.body, 0);
      const listed = await svc.request('GET', `/user/${userId}/application/`);
      expect(listed.headers.get('x-total-count')).toBe(String(made - removed));
      expect(listed.body).toHaveLength(made - removed);
    }
  });

  test("setting a link's right while its application is deleted: 200 or 404, never a 500; the link ends unlinked", async () => {
    for (let round = 0; round < 5; round++) {
      const [userId, appId] = [await newUser(), await newApp()];
      expect((await svc.request('POST', `/user/${userId}/application/`, { body: [appId] })).status).toBe(201);
      const [put, del] = await Promise.all([
        svc.request('PUT', `/user/${userId}/application/${appId}`, { body: { right: 5 } }),
        svc.request('DELETE', `/application/${appId}`),
      ]);
      expect([200, 404]).toContain(put.status);
      if (put.status === 200) expect(put.body).toBe(1);
      expect(del.status).toBe(200);
      expect(del.body).toBe(1);
      expect((await svc.request('GET', `/user/${userId}/application/${appId}`)).status).toBe(404);
    }
  });
});

describe('row locks', () => {
  // The embedded database runs one session: a transaction held open here would block every other.
  const onPostgreSQL = process.env.DATABASE_URL ? test : test.skip;
  onPostgreSQL(
    "setting a link's right locks the link row only: it does not wait for a transaction holding the application FOR SHARE (as a link request does)",
    async () => {
      const [userId, appId] = [await newUser(), await newApp()];
      expect((await link(userId, [appId])).status).toBe(201);
      const holder = svc.running.db.orm.em.fork();
      await holder.begin();
      try {
        await holder.execute('select id from applications where id = ? for share', [appId]);
        svc.queries.length = 0;
        let answered = false;
        const answer = setRight(userId, appId, { right: 7 }).finally(() => (answered = true));
        // Until it is answered, PostgreSQL never shows a session of this database waiting for a lock.
        let waited = false;
        while (!answered && !waited) {
          const [{ n }] = await holder.execute<{ n: number }[]>(
            // A row lock is waited for on its holder's transaction id (no database of its own): the waiting sessions' database tells.
            `select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid where not l.granted and a.datname = current_database()`,
          );
          waited = Number(n) > 0;
        }
        expect(waited).toBe(false);
        const put = await answer;
        expect(put.status).toBe(200);
        expect(put.body).toBe(1);
        expect(svc.queries.find((q) => /for update/i.test(q))).toMatch(/for update of l$/i);
      } finally {
        await holder.rollback();
      }
      expect(await appRows(userId)).toEqual([live(appId, 7)]);
    },
  );
});
