import {
  svc,
  UNKNOWN_ID,
  fresh,
  createRecord,
  newUser,
  newRole,
  deleted,
  roleRows,
  link,
  unlink,
  linksOf,
  expectedLinks,
  idsIn,
  BAD_BODIES,
  useService,
} from '../support/links.js';

/** /user/{id}/role/: link, unlink and list (REST). */
useService();

describe('/user/{id}/role/', () => {
  test('link: creates, duplicates count once, already linked ones left alone', async () => {
    const user = await newUser();
    const [r1, r2] = [await newRole(), await newRole()];
    const res = await link(user, [r1, r2, r2], 'role');
    expect(res.status).toBe(201);
    expect(res.body).toBe(2);
    const again = await link(user, [r2, r1], 'role');
    expect(again.status).toBe(201);
    expect(again.body).toBe(0);
    expect(await roleRows(user)).toEqual([
      { role: r1, deleted: false },
      { role: r2, deleted: false },
    ]);
    const bare = await svc.request('POST', `/user/${user}/role`, { body: [await newRole()] });
    expect(bare.status).toBe(201);
    expect(bare.body).toBe(1);
  });

  test('unknown or deleted role ids: 400 listing them, nothing linked', async () => {
    const user = await newUser();
    const good = await newRole();
    const removed = await deleted('/role', await newRole());
    const res = await link(user, [good, removed, UNKNOWN_ID], 'role');
    expect(res.status).toBe(400);
    expect(res.body.details).toHaveLength(1);
    expect(res.body.details[0].field).toBe('roleIDs');
    expect(idsIn(res.body.details[0].message)).toEqual([removed, UNKNOWN_ID].sort((x, y) => x - y));
    expect(await roleRows(user)).toEqual([]);
  });

  test.each(BAD_BODIES)('a link body with %s is a 400 and links nothing', async (_label, body) => {
    const user = await newUser();
    const res = await link(user, body, 'role');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('BAD_REQUEST');
    expect(await roleRows(user)).toEqual([]);
  });

  test('unlink: soft, counted, absent ones a no-op; re-link creates again', async () => {
    const user = await newUser();
    const [r1, r2, r3] = [await newRole(), await newRole(), await newRole()];
    await link(user, [r1, r2], 'role');

    const res = await unlink(user, [r1, r1, r3], 'role');
    expect(res.status).toBe(200);
    expect(res.body).toBe(1);
    expect(await roleRows(user)).toEqual([
      { role: r1, deleted: true },
      { role: r2, deleted: false },
    ]);
    expect((await unlink(user, [r1], 'role')).body).toBe(0);
    const bare = await svc.request('DELETE', `/user/${user}/role`, { body: [r2] });
    expect(bare.status).toBe(200);
    expect(bare.body).toBe(1);

    expect((await unlink(user, [0], 'role')).status).toBe(400);
    expect((await link(user, [r1], 'role')).body).toBe(1);
    expect(await roleRows(user)).toEqual([
      { role: r1, deleted: false },
      { role: r2, deleted: true },
    ]);
  });

  test('list: a bare array of roles (no right), filter/orderBy/page on role fields', async () => {
    const user = await newUser();
    const prefix = fresh('roles');
    const made: Record<string, { id: number; name: string; createdAt: string; updatedAt: string }> = {};
    for (const key of ['b', 'c', 'a']) {
      made[key] = await createRecord('/role', { name: `${prefix}-${key}` });
      expect((await link(user, [made[key].id], 'role')).body).toBe(1);
    }
    const dropped = await newRole();
    await link(user, [dropped], 'role');
    await unlink(user, [dropped], 'role');

    for (const path of [`/user/${user}/role/`, `/user/${user}/role`]) {
      const res = await svc.request('GET', path);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([made.b, made.c, made.a]);
      expect(res.headers.get('x-total-count')).toBe('3');
      expect(linksOf(res)).toEqual(expectedLinks(path, '', { first: 1, last: 1 }));
    }
    const desc = await svc.request('GET', `/user/${user}/role/?orderBy=-name`);
    expect(desc.body).toEqual([made.c, made.b, made.a]);
    const filtered = await svc.request(
      'GET',
      `/user/${user}/role/?filter=${encodeURIComponent(JSON.stringify({ name: { in: [`${prefix}-a`, `${prefix}-c`] } }))}&orderBy=name`,
    );
    expect(filtered.body).toEqual([made.a, made.c]);
    expect(filtered.headers.get('x-total-count')).toBe('2');
    const expression = await svc.request(
      'GET',
      `/user/${user}/role/?filter=${encodeURIComponent(`Name eq '${prefix}-a' or name eq "${prefix}-c"`)}&orderBy=NAME%20desc`,
    );
    expect(expression.body).toEqual([made.c, made.a]);
    const paged = await svc.request('GET', `/user/${user}/role/?orderBy=name&page=2&pageSize=1`);
    expect(paged.body).toEqual([made.b]);
    expect(paged.headers.get('x-total-count')).toBe('3');
    const path = `/user/${user}/role/`;
    expect(linksOf(paged)).toEqual(expectedLinks(path, 'orderBy=name&pageSize=1', { first: 1, prev: 1, next: 3, last: 3 }));

    // A role link has no right.
    const byRight = await svc.request('GET', `/user/${user}/role/?filter=${encodeURIComponent('{"right":1}')}`);
    expect(byRight.status).toBe(400);
    expect((await svc.request('GET', `/user/${user}/role/?filter=${encodeURIComponent('right eq 1')}`)).status).toBe(400);
    expect((await svc.request('GET', `/user/${user}/role/?orderBy=right`)).status).toBe(400);
  });

  test('deleting a role removes it from the list', async () => {
    const user = await newUser();
    const [r1, r2] = [await newRole(), await newRole()];
    await link(user, [r1, r2], 'role');
    await deleted('/role', r1);
    const res = await svc.request('GET', `/user/${user}/role/`);
    expect(res.headers.get('x-total-count')).toBe('1');
    expect(res.body.map((r: { id: number }) => r.id)).toEqual([r2]);
  });
});
