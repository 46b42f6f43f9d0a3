import { parse, type FieldNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';
import type { Caller } from '../../src/auth/caller.js';
import type { Sql } from '../../src/db/sql.js';
import { Loaders } from '../../src/graphql/context.js';
import { plainFieldsAt } from '../../src/graphql/selection.js';
import { svc, uniq, gql, tokenFor, useService } from '../support/graphql-platform.js';

/**
 * Nested lists read ahead by the list of their parents (src/graphql/prefetch.ts): the answers are
 * the ones each record's own resolver gives, whatever the document's shape, and whatever the read
 * ahead leaves to the resolvers (aliases, directives, fragments, errors) is answered as before.
 */
useService();

/** The nodes read ahead below the document's first root field, at `path`, as `alias:name` (or `name`). */
function readAhead(document: string, path: string[], typeName = 'User'): string[] {
  const doc = parse(document);
  const operation = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
  const fragments = Object.fromEntries(
    doc.definitions.filter((d): d is FragmentDefinitionNode => d.kind === 'FragmentDefinition').map((d) => [d.name.value, d]),
  );
  const root = operation.selectionSet.selections[0] as FieldNode;
  return plainFieldsAt({ fieldNodes: [root], fragments }, path, typeName).map((n) => (n.alias ? `${n.alias.value}:${n.name.value}` : n.name.value));
}

describe('which nested fields are read ahead', () => {
  test('every field of the records, through fragments on the record type', () => {
    expect(readAhead('{ users { total data { id applications { data { right } } ...R } } } fragment R on User { roles { data { id } } }', ['data'])).toEqual([
      'id',
      'applications',
      'roles',
    ]);
    expect(readAhead('{ usersConnection { edges { node { id ... on User { tokens { total } } } } } }', ['edges', 'node'])).toEqual(['id', 'tokens']);
  });

  test('a response key asked twice, or under a directive, is left to its resolver', () => {
    const twice = '{ users { data { id roles { data { id } } ...R } } } fragment R on User { roles { data { name } } }';
    expect(readAhead(twice, ['data'])).toEqual(['id']);
    expect(readAhead('query($x: Boolean!) { users { data { id roles @include(if: $x) { total } } } }', ['data'])).toEqual(['id']);
    expect(readAhead('query($x: Boolean!) { users { data { id ... @skip(if: $x) { roles { total } } } } }', ['data'])).toEqual(['id']);
    expect(readAhead('query($x: Boolean!) { users { data { id ...R @include(if: $x) } } } fragment R on User { roles { total } }', ['data'])).toEqual(['id']);
  });

  test('two aliases of the records, or a directive on the way to them: nothing is read ahead', () => {
    expect(readAhead('{ users { a: data { id roles { total } } b: data { roles { total } } } }', ['data'])).toEqual([]);
    expect(readAhead('query($x: Boolean!) { users { data @include(if: $x) { roles { total } } } }', ['data'])).toEqual([]);
    expect(readAhead('{ users { data { r1: roles(pageSize: 1) { total } r2: roles { total } } } }', ['data'])).toEqual(['r1:roles', 'r2:roles']);
  });
});

describe('what a nested field answers from a read ahead', () => {
  const caller: Caller = { tokenId: 1, userId: 1, scopes: new Set(['*']), client: '' };
  const sql = {} as Sql; // never reached: the batches below are the tests' own
  const [a, b] = ((parse('{ x { a b } }').definitions[0] as OperationDefinitionNode).selectionSet.selections[0] as FieldNode).selectionSet!
    .selections as FieldNode[];
  const info = (...fieldNodes: FieldNode[]) => ({ fieldNodes }) as never;

  test("each parent's value, for that node alone; nothing for a node asked twice or not read", async () => {
    const loaders = new Loaders({}, caller, sql);
    await loaders.readAhead(a, async (_caller, _sql, ids) => new Map(ids.map((id) => [id, { parent: id }])), [1, 2]);
    // The same node under another list adds its parents.
    await loaders.readAhead(a, async (_caller, _sql, ids) => new Map(ids.map((id) => [id, { parent: id }])), [3]);
    expect([1, 2, 3, 4].map((id) => loaders.readyFor(info(a), id))).toEqual([{ parent: 1 }, { parent: 2 }, { parent: 3 }, undefined]);
    expect(loaders.readyFor(info(a, b), 1)).toBeUndefined();
    expect(loaders.readyFor(info(b), 1)).toBeUndefined();
  });

  test('a failed read: its error at every parent it was read for, as a failed batch of the loader', async () => {
    const loaders = new Loaders({}, caller, sql);
    const failure = new Error('connection lost');
    await loaders.readAhead(a, () => Promise.reject(failure), [1, 2]);
    for (const id of [1, 2]) expect(() => loaders.readyFor(info(a), id)).toThrow(failure);
    expect(loaders.readyFor(info(a), 3)).toBeUndefined();
  });
});

describe('answers with nested lists read ahead', () => {
  const USERS = 4;
  let users: string[];
  let apps: string[];
  let roles: string[];

  beforeAll(async () => {
    const made = await gql(
      `mutation { a: createApplication(input: { name: "${uniq('ra-a')}" }) { id } b: createApplication(input: { name: "${uniq('ra-b')}" }) { id }
                  r: createRole(input: { name: "${uniq('ra-r')}" }) { id } s: createRole(input: { name: "${uniq('ra-s')}" }) { id }
                  ${Array.from({ length: USERS }, (_, i) => `u${i}: createUser(input: { firstName: "Ahead", lastName: "${uniq(`ra-${i}`)}" }) { id }`).join(' ')} }`,
    );
    apps = [made.a.id, made.b.id];
    roles = [made.r.id, made.s.id];
    users = Array.from({ length: USERS }, (_, i) => made[`u${i}`].id);
    // User i has its first min(i, 2) applications (right i) and i % 3 roles.
    for (const [i, id] of users.entries()) {
      if (i > 0) await gql(`mutation($id: ID!, $apps: [ID!]!) { linkUserApplications(id: $id, applicationIDs: $apps) }`, { id, apps: apps.slice(0, i) });
      for (const app of apps.slice(0, i)) await gql(`mutation { updateUserApplication(id: ${id}, applicationID: ${app}, right: ${i}) { right } }`);
      if (i % 3) await gql(`mutation($id: ID!, $roles: [ID!]!) { linkUserRoles(id: $id, roleIDs: $roles) }`, { id, roles: roles.slice(0, i % 3) });
    }
  });

  // The seeded users, newest first (other tests' users are filtered out).
  const only = () => `filter: { id: { in: [${users.join(', ')}] } }`;
  const list = (page = 1, pageSize = 4) => `users(page: ${page}, pageSize: ${pageSize}, orderBy: [{ id: DESC }], ${only()})`;
  const expected = () =>
    [...users].reverse().map((id) => {
      const i = users.indexOf(id);
      return {
        id,
        applications: { total: apps.slice(0, i).length, data: apps.slice(0, i).map((app) => ({ right: i, application: { id: app } })) },
        roles: { data: roles.slice(0, i % 3).map((role) => ({ id: role })) },
      };
    });

  /** The same request three times: its third run is compiled by graphql-jit (src/graphql/executor.ts); every run answers alike. */
  async function thrice(query: string, variables?: Record<string, unknown>, options?: { token: string }) {
    const replies = [];
    for (let run = 0; run < 3; run++) replies.push(await svc.graphql(query, variables, options));
    // Each request's own id aside.
    const answer = (r: { status: number; text: string }) => [r.status, JSON.parse(r.text.replace(/"requestId":"[^"]*"/g, '"requestId":""'))];
    expect(replies.map(answer)).toEqual(Array(3).fill(answer(replies[0])));
    return replies[2];
  }

  test('a page of users with their applications and roles: each its own, with the same statements as before', async () => {
    svc.queries.length = 0;
    const res = await svc.graphql(`{ ${list()} { data { id applications { total data { right application { id } } } roles { data { id } } } } }`);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.users.data).toEqual(expected());
    // The token, the page, its total, then the applications' page and total and the roles' page:
    // one statement per nested list for all four users.
    expect(svc.queries.filter((q) => /row_number\(\) over \(partition by/.test(q))).toHaveLength(2);
  });

  test('the same answers through a fragment, an inline fragment and a connection', async () => {
    const res = await thrice(
      `{ ${list()} { data { id ...A ... on User { roles { data { id } } } } }
         usersConnection(first: 4, orderBy: [{ id: DESC }], ${only()}) { edges { node { id ...A roles { data { id } } } } } }
       fragment A on User { applications { total data { right application { id } } } }`,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.users.data).toEqual(expected());
    expect(res.body.data.usersConnection.edges.map((e: { node: unknown }) => e.node)).toEqual(expected());
  });

  test('what is left to the resolvers answers as before: aliases with their own arguments, a key asked twice, directives', async () => {
    const res = await thrice(
      `query($yes: Boolean!, $no: Boolean!) { ${list()} { data { id
          one: applications(pageSize: 1) { data { right } } all: applications { total }
          roles { data { id } } ...R
          skipped: roles @include(if: $no) { total } kept: roles @include(if: $yes) { total } } } }
       fragment R on User { roles { total } }`,
      { yes: true, no: false },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.users.data).toEqual(
      expected().map((u) => ({
        id: u.id,
        one: { data: u.applications.data.slice(0, 1).map(({ right }) => ({ right })) },
        all: { total: u.applications.total },
        roles: { data: u.roles.data, total: u.roles.data.length },
        kept: { total: u.roles.data.length },
      })),
    );
  });

  test('a fragment used under two lists: each list its own users', async () => {
    const res = await thrice(
      `{ a: ${list(1, 2)} { data { ...A } } b: ${list(2, 2)} { data { ...A } } }
       fragment A on User { id applications { total data { right application { id } } } roles { data { id } } }`,
    );
    expect(res.body.errors).toBeUndefined();
    expect([...res.body.data.a.data, ...res.body.data.b.data]).toEqual(expected());
  });

  test('a nested list the token may not read is null with FORBIDDEN at each user, the rest answered', async () => {
    const token = await tokenFor('user:read');
    const res = await thrice(`{ ${list()} { data { id applications { total } tokens { total } } } }`, undefined, { token });
    expect(res.status).toBe(200);
    expect(res.body.data.users.data).toEqual(expected().map((u) => ({ id: u.id, applications: { total: u.applications.total }, tokens: null })));
    expect(res.body.errors.map((e: { path: unknown[]; extensions: { code: string } }) => [e.extensions.code, e.path])).toEqual(
      [0, 1, 2, 3].map((i) => ['FORBIDDEN', ['users', 'data', i, 'tokens']]),
    );
  });

  test('a nested argument that does not parse is an error at each user, the rest answered', async () => {
    const res = await thrice(`{ ${list()} { data { id applications(orderBy: [{ right: ASC, createdAt: DESC }]) { total } roles { total } } } }`);
    expect(res.status).toBe(200);
    expect(res.body.data.users.data.map((u: { applications: unknown; roles: unknown }) => [u.applications, u.roles])).toEqual(
      expected().map((u) => [null, { total: u.roles.data.length }]),
    );
    expect(res.body.errors.map((e: { path: unknown[]; extensions: { code: string } }) => [e.extensions.code, e.path])).toEqual(
      [0, 1, 2, 3].map((i) => ['BAD_USER_INPUT', ['users', 'data', i, 'applications']]),
    );
  });

  test("a variable inside a nested list's filter, sent or not: the same answer on every run", async () => {
    const query = `query($f: SafeIntFilter) { ${list()} { data { id applications(filter: { right: $f }) { total } } } }`;
    const totals = (res: { body: any }) => res.body.data.users.data.map((u: { applications: { total: number } }) => u.applications.total);
    // Not sent: no condition on right (graphql-js leaves the field out; a compiled run must not read it as null).
    expect(totals(await thrice(query, {}))).toEqual(expected().map((u) => u.applications.total));
    expect(totals(await thrice(query, { f: { gte: 2 } }))).toEqual(expected().map((u) => (u.applications.data[0]?.right >= 2 ? u.applications.total : 0)));
  });

  test('tokens read ahead beside applications and roles, as a page and as a connection', async () => {
    const res = await thrice(
      `{ ${list()} { data { id tokens { total } tokensConnection(first: 1) { totalCount } applications { total } roles { data { id } } } } }`,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.users.data).toEqual(
      expected().map((u) => ({
        id: u.id,
        tokens: { total: 0 },
        tokensConnection: { totalCount: 0 },
        applications: { total: u.applications.total },
        roles: u.roles,
      })),
    );
  });
});
