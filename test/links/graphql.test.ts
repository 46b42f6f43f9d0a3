import {
  svc,
  ISO,
  ABSENT,
  NAMED,
  LINK,
  fresh,
  Json,
  run,
  fail,
  changesNothing,
  restNamed,
  CREATE_TOKEN,
  gqlUser,
  gqlApp,
  gqlRole,
  useService,
} from '../support/graphql-operations.js';

/** The links over GraphQL: link, unlink and rights of a user's applications and roles, and the nested lists. */
useService();

describe('links', () => {
  const LINK_APPS = `mutation($id: ID!, $ids: [ID!]!) { linkUserApplications(id: $id, applicationIDs: $ids) }`;
  const UNLINK_APPS = `mutation($id: ID!, $ids: [ID!]!) { unlinkUserApplications(id: $id, applicationIDs: $ids) }`;
  const LINK_ROLES = `mutation($id: ID!, $ids: [ID!]!) { linkUserRoles(id: $id, roleIDs: $ids) }`;
  const UNLINK_ROLES = `mutation($id: ID!, $ids: [ID!]!) { unlinkUserRoles(id: $id, roleIDs: $ids) }`;
  const UPDATE_LINK = `mutation($id: ID!, $app: ID!, $right: SafeInt!) { updateUserApplication(id: $id, applicationID: $app, right: $right) { ${LINK} application { ${NAMED} } } }`;
  const GET_LINK = `query($user: ID!, $app: ID!) { userApplication(userID: $user, applicationID: $app) { ${LINK} application { ${NAMED} } } }`;
  const USER_APPS = `query($id: ID!, $f: ApplicationLinkFilter, $o: [ApplicationLinkOrderBy!], $p: Int, $s: Int) {
    user(id: $id) { applications(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { ${LINK} application { ${NAMED} } } } }
  }`;
  const USER_ROLES = `query($id: ID!, $f: RoleFilter, $o: [RoleOrderBy!], $p: Int, $s: Int) {
    user(id: $id) { roles(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { ${NAMED} } } }
  }`;

  test('linkUserApplications counts links created (duplicates once, existing links left alone); User.applications and REST show them', async () => {
    const user = await gqlUser();
    const [a, b, c] = [await gqlApp(), await gqlApp(), await gqlApp()];
    expect((await run(LINK_APPS, { id: user.id, ids: [a.id, b.id, a.id] })).linkUserApplications).toBe(2);
    expect((await run(LINK_APPS, { id: user.id, ids: [a.id, b.id, c.id] })).linkUserApplications).toBe(1);
    expect((await run(LINK_APPS, { id: user.id, ids: [] })).linkUserApplications).toBe(0);

    const { user: withApps } = await run(USER_APPS, { id: user.id });
    expect(withApps.applications).toEqual({
      total: 3,
      page: 1,
      pageSize: 20,
      data: [a, b, c].map((app) => ({
        applicationID: app.id,
        userID: user.id,
        right: 0,
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
        application: app,
      })),
    });

    const rest = await svc.request('GET', `/user/${user.id}/application/`);
    expect(rest.status).toBe(200);
    expect(rest.headers.get('x-total-count')).toBe('3');
    expect(rest.body).toEqual([a, b, c].map((app) => ({ ...restNamed(app), right: 0 })));
    // right is a bigint column (SPEC §4), read here as text.
    const rows = await svc.sql('select application_id::text as app, "right"::text as right, deleted_at from user_applications where user_id = ? order by 1', [
      user.id,
    ]);
    expect(rows).toEqual([a, b, c].map((app) => ({ app: app.id, right: '0', deleted_at: null })));
  });

  test('a link made over REST shows in User.applications and userApplication, identically', async () => {
    const user = await gqlUser();
    const app = await gqlApp();
    const linked = await svc.request('POST', `/user/${user.id}/application/`, { body: [Number(app.id)] });
    expect({ status: linked.status, body: linked.body }).toEqual({ status: 201, body: 1 });
    const put = await svc.request('PUT', `/user/${user.id}/application/${app.id}`, { body: { right: 6 } });
    expect({ status: put.status, body: put.body }).toEqual({ status: 200, body: 1 });
    const restLink = await svc.request('GET', `/user/${user.id}/application/${app.id}`);
    expect(restLink.body).toMatchObject({ userID: Number(user.id), applicationID: Number(app.id), right: 6 });

    const { user: withApps } = await run(USER_APPS, { id: user.id });
    expect(withApps.applications.data).toHaveLength(1);
    const { application, ...link } = withApps.applications.data[0];
    expect(application).toEqual(app);
    expect({ ...link, userID: Number(link.userID), applicationID: Number(link.applicationID) }).toEqual(restLink.body);

    const { userApplication } = await run(GET_LINK, { user: user.id, app: app.id });
    expect(userApplication).toEqual(withApps.applications.data[0]);
  });

  test('linkUserApplications with an unknown, deleted or malformed id: BAD_USER_INPUT, nothing linked; absent user NOT_FOUND', async () => {
    const user = await gqlUser();
    const live = await gqlApp();
    const dead = await gqlApp();
    await run(`mutation($id: ID!) { destroyApplication(id: $id) }`, { id: dead.id });
    await changesNothing(async () => {
      const error = await fail(LINK_APPS, { id: user.id, ids: [live.id, ABSENT] }, 'BAD_USER_INPUT', 'applicationIDs');
      expect(error.message).toContain(ABSENT);
    });
    await changesNothing(() => fail(LINK_APPS, { id: user.id, ids: [live.id, dead.id] }, 'BAD_USER_INPUT', 'applicationIDs'));
    await changesNothing(async () => {
      const error = await fail(LINK_APPS, { id: user.id, ids: [live.id, 'abc'] }, 'BAD_USER_INPUT');
      expect(error.extensions.field).toMatch(/^applicationIDs/);
    });
    await changesNothing(() => fail(LINK_APPS, { id: ABSENT, ids: [live.id] }, 'NOT_FOUND'));
    await changesNothing(() => fail(UNLINK_APPS, { id: ABSENT, ids: [live.id] }, 'NOT_FOUND'));
    expect((await run(USER_APPS, { id: user.id })).user.applications.total).toBe(0);
  });

  test('updateUserApplication sets the right; REST reads it; never creates a link (NOT_FOUND)', async () => {
    const user = await gqlUser();
    const [linkedApp, loneApp] = [await gqlApp(), await gqlApp()];
    await run(LINK_APPS, { id: user.id, ids: [linkedApp.id] });
    const { updateUserApplication } = await run(UPDATE_LINK, { id: user.id, app: linkedApp.id, right: 42 });
    expect(updateUserApplication).toEqual({
      applicationID: linkedApp.id,
      userID: user.id,
      right: 42,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
      application: linkedApp,
    });
    const rest = await svc.request('GET', `/user/${user.id}/application/${linkedApp.id}`);
    expect(rest.body).toEqual({
      userID: Number(user.id),
      applicationID: Number(linkedApp.id),
      right: 42,
      createdAt: updateUserApplication.createdAt,
      updatedAt: updateUserApplication.updatedAt,
    });

    // right is any safe integer, stored as a bigint (SPEC §4): both ends of the range round-trip.
    for (const right of [Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 40]) {
      expect((await run(UPDATE_LINK, { id: user.id, app: linkedApp.id, right })).updateUserApplication.right).toBe(right);
      expect((await svc.request('GET', `/user/${user.id}/application/${linkedApp.id}`)).body.right).toBe(right);
      expect(await svc.sql('select "right"::text as r from user_applications where user_id = ?', [user.id])).toEqual([{ r: String(right) }]);
    }
    // 2^53 is out of range: refused while the variables are read, nothing changes.
    await changesNothing(async () => {
      const res = await svc.graphql(UPDATE_LINK, { id: user.id, app: linkedApp.id, right: 2 ** 53 });
      expect({ status: res.status, code: res.body.errors?.[0]?.extensions?.code }).toEqual({ status: 400, code: 'BAD_USER_INPUT' });
    });

    await changesNothing(() => fail(UPDATE_LINK, { id: user.id, app: loneApp.id, right: 1 }, 'NOT_FOUND'));
    await changesNothing(() => fail(UPDATE_LINK, { id: ABSENT, app: linkedApp.id, right: 1 }, 'NOT_FOUND'));
    await changesNothing(() => fail(UPDATE_LINK, { id: user.id, app: 'nope', right: 1 }, 'BAD_USER_INPUT', 'applicationID'));
    expect(await svc.sql('select count(*)::int as n from user_applications where user_id = ?', [user.id])).toEqual([{ n: 1 }]);
  });

  test('userApplication: the link; null when not linked, after unlinking, or for an absent user', async () => {
    const user = await gqlUser();
    const [app, other] = [await gqlApp(), await gqlApp()];
    await run(LINK_APPS, { id: user.id, ids: [app.id] });
    const { userApplication } = await run(GET_LINK, { user: user.id, app: app.id });
    expect(userApplication).toMatchObject({ applicationID: app.id, userID: user.id, right: 0, application: app });

    expect((await svc.graphql(GET_LINK, { user: user.id, app: other.id })).body).toEqual({ data: { userApplication: null } });
    expect((await svc.graphql(GET_LINK, { user: ABSENT, app: app.id })).body).toEqual({ data: { userApplication: null } });
    expect((await svc.graphql(GET_LINK, { user: user.id, app: ABSENT })).body).toEqual({ data: { userApplication: null } });
    expect((await run(UNLINK_APPS, { id: user.id, ids: [app.id] })).unlinkUserApplications).toBe(1);
    expect((await svc.graphql(GET_LINK, { user: user.id, app: app.id })).body).toEqual({ data: { userApplication: null } });
    await fail(GET_LINK, { user: user.id, app: 'x' }, 'BAD_USER_INPUT', 'applicationID');
    await fail(GET_LINK, { user: 'x', app: app.id }, 'BAD_USER_INPUT', 'userID');
  });

  test('unlinkUserApplications counts links removed; absent links are a no-op; REST no longer lists them', async () => {
    const user = await gqlUser();
    const [a, b, c] = [await gqlApp(), await gqlApp(), await gqlApp()];
    await run(LINK_APPS, { id: user.id, ids: [a.id, b.id] });
    expect((await run(UNLINK_APPS, { id: user.id, ids: [a.id, c.id, a.id] })).unlinkUserApplications).toBe(1);
    expect((await run(UNLINK_APPS, { id: user.id, ids: [a.id] })).unlinkUserApplications).toBe(0);
    const rest = await svc.request('GET', `/user/${user.id}/application/`);
    expect(rest.headers.get('x-total-count')).toBe('1');
    expect(rest.body.map((x: Json) => x.id)).toEqual([Number(b.id)]);
    expect((await run(USER_APPS, { id: user.id })).user.applications.data.map((l: Json) => l.applicationID)).toEqual([b.id]);
    // Relinking revives the link with right 0.
    expect((await run(LINK_APPS, { id: user.id, ids: [a.id] })).linkUserApplications).toBe(1);
    // A REST unlink shows in GraphQL too.
    const unlinked = await svc.request('DELETE', `/user/${user.id}/application/`, { body: [Number(b.id)] });
    expect({ status: unlinked.status, body: unlinked.body }).toEqual({ status: 200, body: 1 });
    expect((await run(USER_APPS, { id: user.id })).user.applications.data.map((l: Json) => l.applicationID)).toEqual([a.id]);
  });

  test('User.applications: filter (applicationID, name, right; and/or/not), orderBy, page, pageSize', async () => {
    const user = await gqlUser();
    const tag = fresh('la');
    const apps = [await gqlApp(`${tag}-b`), await gqlApp(`${tag}-a`), await gqlApp(`${tag}-c`)];
    await run(LINK_APPS, { id: user.id, ids: apps.map((a) => a.id) });
    await run(UPDATE_LINK, { id: user.id, app: apps[0].id, right: 3 });
    await run(UPDATE_LINK, { id: user.id, app: apps[2].id, right: 7 });
    const page = async (v: Json) => (await run(USER_APPS, { id: user.id, ...v })).user.applications as Json;
    const ids = (p: Json) => p.data.map((l: Json) => l.applicationID);
    const idsOf = (...i: number[]) => i.map((n) => apps[n].id);

    expect(ids(await page({}))).toEqual(idsOf(0, 1, 2));
    expect(ids(await page({ o: [{ name: 'ASC' }] }))).toEqual(idsOf(1, 0, 2));
    expect(ids(await page({ o: [{ right: 'DESC' }] }))).toEqual(idsOf(2, 0, 1));
    expect(ids(await page({ o: [{ applicationID: 'DESC' }] }))).toEqual(idsOf(2, 1, 0));
    expect(ids(await page({ f: { right: { gt: 0 } } }))).toEqual(idsOf(0, 2));
    expect(ids(await page({ f: { right: { in: [0, 7] } } }))).toEqual(idsOf(1, 2));
    expect(ids(await page({ f: { name: { like: `${tag}-_` }, not: { right: { eq: 3 } } } }))).toEqual(idsOf(1, 2));
    expect(ids(await page({ f: { applicationID: { eq: apps[1].id } } }))).toEqual(idsOf(1));
    expect(ids(await page({ f: { or: [{ name: { eq: `${tag}-c` } }, { right: { lte: 0 } }] } }))).toEqual(idsOf(1, 2));
    expect(await page({ o: [{ name: 'DESC' }], p: 2, s: 2 })).toMatchObject({ total: 3, page: 2, pageSize: 2, data: [{ applicationID: apps[1].id }] });
    expect(await page({ p: 5, s: 2 })).toEqual({ total: 3, page: 5, pageSize: 2, data: [] });

    // REST gives the same order for the same request.
    const rest = await svc.request('GET', `/user/${user.id}/application/?orderBy=-right`);
    expect(rest.body.map((a: Json) => [String(a.id), a.right])).toEqual([
      [apps[2].id, 7],
      [apps[0].id, 3],
      [apps[1].id, 0],
    ]);

    // pageSize above 1000 is read as 1000, page below 1 as 1 (SPEC §5).
    expect(await page({ p: 0, s: 1001 })).toMatchObject({
      total: 3,
      page: 1,
      pageSize: 1000,
      data: idsOf(0, 1, 2).map((applicationID) => ({ applicationID })),
    });
    await fail(USER_APPS, { id: user.id, o: [{ name: 'ASC', right: 'ASC' }] }, 'BAD_USER_INPUT');
  });

  test('a deleted application drops out of User.applications', async () => {
    const user = await gqlUser();
    const [keep, drop] = [await gqlApp(), await gqlApp()];
    await run(LINK_APPS, { id: user.id, ids: [keep.id, drop.id] });
    await run(`mutation($id: ID!) { destroyApplication(id: $id) }`, { id: drop.id });
    const { user: u } = await run(USER_APPS, { id: user.id });
    expect(u.applications.total).toBe(1);
    expect(u.applications.data.map((l: Json) => l.applicationID)).toEqual([keep.id]);
  });

  test('linkUserRoles / unlinkUserRoles; User.roles with filter, orderBy and pages; REST parity both ways', async () => {
    const user = await gqlUser();
    const tag = fresh('lr');
    const roles = [await gqlRole(`${tag}-y`), await gqlRole(`${tag}-x`), await gqlRole(`${tag}-z`)];
    expect((await run(LINK_ROLES, { id: user.id, ids: [roles[0].id, roles[1].id, roles[0].id] })).linkUserRoles).toBe(2);
    expect((await run(LINK_ROLES, { id: user.id, ids: [roles[0].id] })).linkUserRoles).toBe(0);
    // One more over REST.
    const linked = await svc.request('POST', `/user/${user.id}/role/`, { body: [Number(roles[2].id)] });
    expect({ status: linked.status, body: linked.body }).toEqual({ status: 201, body: 1 });

    const page = async (v: Json) => (await run(USER_ROLES, { id: user.id, ...v })).user.roles as Json;
    expect(await page({})).toEqual({ total: 3, page: 1, pageSize: 20, data: roles });
    expect((await page({ o: [{ name: 'DESC' }] })).data).toEqual([roles[2], roles[0], roles[1]]);
    expect((await page({ f: { name: { in: [`${tag}-x`, `${tag}-z`] } } })).data).toEqual([roles[1], roles[2]]);
    expect((await page({ f: { not: { id: { eq: roles[0].id } } } })).data).toEqual([roles[1], roles[2]]);
    expect(await page({ o: [{ name: 'ASC' }], p: 2, s: 2 })).toEqual({ total: 3, page: 2, pageSize: 2, data: [roles[2]] });

    const rest = await svc.request('GET', `/user/${user.id}/role/`);
    expect(rest.headers.get('x-total-count')).toBe('3');
    expect(rest.body).toEqual(roles.map(restNamed));

    expect((await run(UNLINK_ROLES, { id: user.id, ids: [roles[0].id, roles[2].id, ABSENT] })).unlinkUserRoles).toBe(2);
    expect((await run(UNLINK_ROLES, { id: user.id, ids: [roles[0].id] })).unlinkUserRoles).toBe(0);
    expect((await page({})).data).toEqual([roles[1]]);
    const after = await svc.request('GET', `/user/${user.id}/role/`);
    expect(after.headers.get('x-total-count')).toBe('1');
    expect(after.body).toEqual([restNamed(roles[1])]);

    await changesNothing(() => fail(LINK_ROLES, { id: user.id, ids: [roles[0].id, ABSENT] }, 'BAD_USER_INPUT', 'roleIDs'));
    await changesNothing(() => fail(LINK_ROLES, { id: ABSENT, ids: [roles[0].id] }, 'NOT_FOUND'));
    await changesNothing(() => fail(UNLINK_ROLES, { id: ABSENT, ids: [roles[0].id] }, 'NOT_FOUND'));
    // pageSize above 1000 is read as 1000 (SPEC §5).
    expect(await page({ s: 1001 })).toEqual({ total: 1, page: 1, pageSize: 1000, data: [roles[1]] });
  });

  test('User.tokens with filter, orderBy and pages; Token.user; over a page of users', async () => {
    const [u1, u2] = [await gqlUser({ lastName: fresh('tu') }), await gqlUser({ lastName: fresh('tu') })];
    const tag = fresh('ut');
    const t = async (userID: string, suffix: string, scope: string) =>
      (await run(CREATE_TOKEN, { input: { userID, accessToken: `${tag}-${suffix}`, scope } })).createToken as Json;
    const t1 = [await t(u1.id, 'b', 'read'), await t(u1.id, 'a', 'write'), await t(u1.id, 'c', 'read')];
    const t2 = [await t(u2.id, 'd', 'read')];

    const Q = `query($ids: [ID!], $f: TokenFilter, $o: [TokenOrderBy!], $p: Int, $s: Int) {
      users(filter: {id: {in: $ids}}) { data { id tokens(filter: $f, orderBy: $o, page: $p, pageSize: $s) {
        total page pageSize data { id accessToken user { id lastName } } } } }
    }`;
    const fetch = async (v: Json) => (await run(Q, { ids: [u1.id, u2.id], ...v })).users.data as Json[];

    const all = await fetch({});
    expect(all.map((u) => u.tokens.total)).toEqual([3, 1]);
    expect(all[0].tokens.data.map((x: Json) => x.id)).toEqual(t1.map((x) => x.id));
    expect(all[0].tokens.data[0].user).toEqual({ id: u1.id, lastName: u1.lastName });
    expect(all[1].tokens.data).toEqual([{ id: t2[0].id, accessToken: `${tag}-d`, user: { id: u2.id, lastName: u2.lastName } }]);

    const ordered = await fetch({ o: [{ id: 'DESC' }] });
    expect(ordered[0].tokens.data.map((x: Json) => x.accessToken)).toEqual([`${tag}-c`, `${tag}-a`, `${tag}-b`]);
    const filtered = await fetch({ f: { scope: { eq: 'read' } }, o: [{ id: 'ASC' }], p: 2, s: 1 });
    expect(filtered.map((u) => [u.tokens.total, u.tokens.page, u.tokens.pageSize, u.tokens.data.map((x: Json) => x.accessToken)])).toEqual([
      [2, 2, 1, [`${tag}-c`]],
      [1, 2, 1, []],
    ]);
    const byNot = await fetch({ f: { not: { accessToken: { in: [`${tag}-b`, 'other'] } } } });
    expect(byNot[0].tokens.data.map((x: Json) => x.accessToken)).toEqual([`${tag}-a`, `${tag}-c`]);

    const SMALL = `query($id: ID!, $o: [TokenOrderBy!], $s: Int) { user(id: $id) { tokens(orderBy: $o, pageSize: $s) { total pageSize } } }`;
    // pageSize above 1000 is read as 1000, below 1 as 20 (SPEC §5).
    expect((await run(SMALL, { id: u1.id, s: 1001 })).user.tokens).toEqual({ total: 3, pageSize: 1000 });
    expect((await run(SMALL, { id: u1.id, s: 0 })).user.tokens).toEqual({ total: 3, pageSize: 20 });
    await fail(SMALL, { id: u1.id, o: [{ scope: 'ASC', id: 'DESC' }] }, 'BAD_USER_INPUT');
  });

  test('Token.user is null-safe and ApplicationLink.application carries the application record', async () => {
    const user = await gqlUser();
    const app = await gqlApp();
    await run(LINK_APPS, { id: user.id, ids: [app.id] });
    const { createToken } = await run(CREATE_TOKEN, { input: { userID: user.id, accessToken: fresh('tu') } });
    const { token } = await run(`query($id: ID!) { token(id: $id) { id user { id applications { data { application { ${NAMED} } } } } } }`, {
      id: createToken.id,
    });
    expect(token).toEqual({ id: createToken.id, user: { id: user.id, applications: { data: [{ application: app }] } } });
  });
});

// ---------------------------------------------------------------------------------------------
