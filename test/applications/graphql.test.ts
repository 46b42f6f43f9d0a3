import { svc, ISO, ABSENT, NAMED, fresh, Json, run, fail, changesNothing, restNamed, restPost, useService } from '../support/graphql-operations.js';

/** The application and role queries and mutations over GraphQL (one definition for both: src/resource/named.ts). */
useService();

describe.each([
  { type: 'Application', one: 'application', many: 'applications', path: '/application/' },
  { type: 'Role', one: 'role', many: 'roles', path: '/role/' },
])('$many', ({ type, one, many, path }) => {
  const CREATE = `mutation($input: ${type}Input!) { create${type}(input: $input) { ${NAMED} } }`;
  const GET = `query($id: ID!) { ${one}(id: $id) { ${NAMED} } }`;
  const UPDATE = `mutation($id: ID!, $input: ${type}Input!) { update${type}(id: $id, input: $input) { ${NAMED} } }`;
  const PATCH = `mutation($id: ID!, $input: ${type}Patch!) { patch${type}(id: $id, input: $input) { ${NAMED} } }`;
  const DESTROY = `mutation($id: ID!) { destroy${type}(id: $id) }`;
  const LIST = `query($f: ${type}Filter, $o: [${type}OrderBy!], $p: Int, $s: Int) {
    ${many}(filter: $f, orderBy: $o, page: $p, pageSize: $s) { total page pageSize data { ${NAMED} } }
  }`;
  const create = async (name: string) => (await run(CREATE, { input: { name } }))[`create${type}`] as Json;

  test(`create${type}; ${one}(id) and REST GET read it identically; REST-made reads back too`, async () => {
    const name = fresh(one);
    const created = await create(name);
    expect(created).toEqual({ id: expect.stringMatching(/^[1-9]\d*$/), name, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO) });
    expect((await run(GET, { id: created.id }))[one]).toEqual(created);
    const rest = await svc.request('GET', `${path}${created.id}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual(restNamed(created));

    const viaRest = await restPost(path, { name: fresh(one) });
    expect(restNamed((await run(GET, { id: String(viaRest.id) }))[one])).toEqual(viaRest);
  });

  test(`create${type} with a duplicate name: CONFLICT naming name; a bad name: BAD_USER_INPUT; nothing stored`, async () => {
    const name = fresh(one);
    await create(name);
    await changesNothing(() => fail(CREATE, { input: { name } }, 'CONFLICT', 'input.name'));
    await changesNothing(() => fail(CREATE, { input: { name: 'n'.repeat(256) } }, 'BAD_USER_INPUT', 'input.name'));
    await changesNothing(() => fail(CREATE, { input: { name: '' } }, 'BAD_USER_INPUT', 'input.name'));
  });

  test(`${many}: filter (StringFilter, IDFilter, DateTimeFilter, and/or/not), orderBy, page, pageSize`, async () => {
    const tag = fresh(`${one}s`);
    const made: Json[] = [];
    for (const suffix of ['beta', 'Alpha', 'gamma']) made.push(await create(`${tag}-${suffix}`));
    const list = async (v: Json) => (await run(LIST, v))[many] as Json;
    const ids = (page: Json) => page.data.map((r: Json) => r.id);
    const idsOf = (...i: number[]) => i.map((n) => made[n].id);
    const mine = { name: { like: `${tag}-%` } };

    expect(await list({ f: mine })).toEqual({ total: 3, page: 1, pageSize: 20, data: made });
    expect(ids(await list({ f: mine, o: [{ name: 'DESC' }] }))).toEqual(idsOf(2, 0, 1));
    expect(ids(await list({ f: { name: { ilike: `${tag}-a%` } } }))).toEqual(idsOf(1));
    expect(ids(await list({ f: { name: { like: `${tag}-a%` } } }))).toEqual([]);
    expect(ids(await list({ f: { ...mine, id: { in: idsOf(0, 2) } } }))).toEqual(idsOf(0, 2));
    expect(ids(await list({ f: { ...mine, createdAt: { lte: '2999-12-31T23:59:59Z' } } }))).toEqual(idsOf(0, 1, 2));
    expect(ids(await list({ f: { ...mine, or: [{ name: { eq: `${tag}-beta` } }, { not: { name: { ne: `${tag}-gamma` } } }] } }))).toEqual(idsOf(0, 2));
    expect(await list({ f: mine, o: [{ id: 'DESC' }], p: 2, s: 2 })).toEqual({ total: 3, page: 2, pageSize: 2, data: [made[0]] });

    const filter = encodeURIComponent(JSON.stringify(mine));
    const rest = await svc.request('GET', `${path}?filter=${filter}&orderBy=-name`);
    expect(rest.headers.get('x-total-count')).toBe('3');
    expect(rest.body).toEqual((await list({ f: mine, o: [{ name: 'DESC' }] })).data.map(restNamed));

    // pageSize above 1000 is read as 1000 (SPEC §5).
    expect(await list({ f: mine, s: 1001 })).toEqual({ total: 3, page: 1, pageSize: 1000, data: made });
    await fail(LIST, { o: [{ name: 'ASC', id: 'DESC' }] }, 'BAD_USER_INPUT');
  });

  test(`update${type} and patch${type}; REST reads the result`, async () => {
    const created = await create(fresh(one));
    const replaced = (await run(UPDATE, { id: created.id, input: { name: fresh('replaced') } }))[`update${type}`];
    expect(replaced).toEqual({ ...created, name: replaced.name, updatedAt: expect.stringMatching(ISO) });
    const patched = (await run(PATCH, { id: created.id, input: { name: fresh('patched') } }))[`patch${type}`];
    expect(patched).toEqual({ ...replaced, name: patched.name, updatedAt: expect.stringMatching(ISO) });
    expect((await svc.request('GET', `${path}${created.id}`)).body).toEqual(restNamed(patched));
    const [row] = await svc.sql(`select name from ${many} where id = ?`, [created.id]);
    expect(row).toEqual({ name: patched.name });
    await changesNothing(async () => {
      expect((await run(PATCH, { id: created.id, input: {} }))[`patch${type}`]).toEqual(patched);
    });
  });

  test(`update${type}/patch${type}: NOT_FOUND on absent ids, CONFLICT on a taken name, BAD_USER_INPUT on null name`, async () => {
    const taken = await create(fresh(one));
    const mine = await create(fresh(one));
    await changesNothing(() => fail(UPDATE, { id: ABSENT, input: { name: fresh('x') } }, 'NOT_FOUND'));
    await changesNothing(() => fail(PATCH, { id: ABSENT, input: { name: fresh('x') } }, 'NOT_FOUND'));
    await changesNothing(() => fail(UPDATE, { id: mine.id, input: { name: taken.name } }, 'CONFLICT', 'input.name'));
    await changesNothing(() => fail(PATCH, { id: mine.id, input: { name: taken.name } }, 'CONFLICT', 'input.name'));
    await changesNothing(() => fail(PATCH, { id: mine.id, input: { name: null } }, 'BAD_USER_INPUT', 'input.name'));
    await changesNothing(() => fail(UPDATE, { id: 'x1', input: { name: 'x' } }, 'BAD_USER_INPUT', 'id'));
  });

  test(`destroy${type}: true; ${one}(id) null afterwards; the name is free again; twice is NOT_FOUND`, async () => {
    const created = await create(fresh(one));
    expect(await run(DESTROY, { id: created.id })).toEqual({ [`destroy${type}`]: true });
    expect((await svc.graphql(GET, { id: created.id })).body).toEqual({ data: { [one]: null } });
    expect((await svc.graphql(GET, { id: ABSENT })).body).toEqual({ data: { [one]: null } });
    expect((await svc.request('GET', `${path}${created.id}`)).status).toBe(404);
    const [row] = await svc.sql<Json>(`select deleted_at from ${many} where id = ?`, [created.id]);
    expect(row.deleted_at).not.toBeNull();
    await changesNothing(() => fail(DESTROY, { id: created.id }, 'NOT_FOUND'));
    const again = await create(created.name);
    expect(again.id).not.toBe(created.id);
  });
});

// ---------------------------------------------------------------------------------------------
