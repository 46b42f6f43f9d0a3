import { Trace } from '@apollo/usage-reporting-protobuf';
import { readFile } from 'node:fs/promises';
import { parse } from 'graphql';
import { isCacheableDocument } from '../../src/graphql/cacheable.js';
import { subgraphSchemaText } from '../../src/graphql/schema.js';
import { serviceSubgraphSchema as graphQLSubgraphSchema } from '../../src/services.js';
import { startTestService, type TestService } from '../support/service.js';
import { bearer, collect, sseConnect, wsConnect } from '../support/subscriptions.js';
import { admin, adminCreate, gql, svc, tokenFor, uniq, useService } from '../support/graphql-platform.js';

/**
 * The service as an Apollo Federation 2 subgraph (GRAPHQL_FEDERATION=true, SPEC §12), asked
 * directly as a router asks it: `_service { sdl }`, `_entities(representations:)` for the four
 * entities, permissions per reference, one statement per type, Apollo's inline trace on demand.
 * test/graphql/routers.test.ts puts real routers in front of it.
 */
useService({ GRAPHQL_FEDERATION: 'true' });

const ENTITIES = `query($representations: [_Any!]!) {
  _entities(representations: $representations) {
    __typename
    ... on User { id firstName lastName }
    ... on Token { id userID scope }
    ... on Application { id name }
    ... on Role { id name }
  }
}`;

type Representation = { __typename: string; id: unknown };
const ref = (__typename: string, id: unknown): Representation => ({ __typename, id: String(id) });
const entities = (representations: Representation[], options: { token?: string | null; headers?: Record<string, string> } = {}) =>
  svc.graphql(ENTITIES, { representations }, options);

/** The tables the statements of a request read records of by id (`… from users t where t.id = any(…)`), one entry per statement. */
const byIdReads = (statements: string[]) =>
  statements
    .map((s) => /from (\w+) t where t\.id = any\(/.exec(s)?.[1])
    .filter((table): table is string => table !== undefined)
    .sort();

interface Seeded {
  users: number[];
  applications: number[];
  roles: number[];
  tokens: number[];
  deletedUser: number;
}
let seeded: Seeded;

beforeAll(async () => {
  const users = [];
  for (let i = 0; i < 3; i++) users.push(await adminCreate('/user/', { firstName: `Entity${i}`, lastName: uniq('fed') }));
  const applications = [await adminCreate('/application/', { name: uniq('fed-app') }), await adminCreate('/application/', { name: uniq('fed-app') })];
  const roles = [await adminCreate('/role/', { name: uniq('fed-role') }), await adminCreate('/role/', { name: uniq('fed-role') })];
  const tokens = [await adminCreate('/token/', { userID: users[0], accessToken: uniq('fed-token'), scope: 'user:read' })];
  const deletedUser = await adminCreate('/user/', { firstName: 'Gone', lastName: uniq('fed') });
  expect(await admin('DELETE', `/user/${deletedUser}`)).toBe(1);
  seeded = { users, applications, roles, tokens, deletedUser };
});

describe('_entities', () => {
  test('resolves each reference as user(id), token(id), application(id), role(id) do, in the order given; null for an absent or a deleted record', async () => {
    const [u0, u1] = seeded.users;
    const [app] = seeded.applications;
    const [role] = seeded.roles;
    const [token] = seeded.tokens;
    const res = await entities([
      ref('User', u1),
      ref('Application', app),
      ref('Role', role),
      ref('Token', token),
      ref('User', 999_999_999),
      ref('User', seeded.deletedUser),
      ref('User', u0),
    ]);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const direct = await gql(
      `query($u0: ID!, $u1: ID!, $app: ID!, $role: ID!, $token: ID!) {
        u1: user(id: $u1) { id firstName lastName } app: application(id: $app) { id name } role(id: $role) { id name }
        token(id: $token) { id userID scope } u0: user(id: $u0) { id firstName lastName }
      }`,
      { u0, u1, app, role, token },
    );
    expect(res.body.data._entities).toEqual([
      { __typename: 'User', ...direct.u1 },
      { __typename: 'Application', ...direct.app },
      { __typename: 'Role', ...direct.role },
      { __typename: 'Token', ...direct.token },
      null,
      null,
      { __typename: 'User', ...direct.u0 },
    ]);
  });

  test('an entity’s nested fields resolve as they do under user(id) and token(id), reading only the columns asked for', async () => {
    const [u0] = seeded.users;
    const [token] = seeded.tokens;
    svc.queries.length = 0;
    const res = await svc.graphql(
      `query($representations: [_Any!]!) {
        _entities(representations: $representations) {
          ... on User { firstName tokens { total data { id } } }
          ... on Token { scope user { id lastName } }
        }
      }`,
      { representations: [ref('User', u0), ref('Token', token)] },
    );
    const statements = [...svc.queries];
    expect(res.body.errors).toBeUndefined();
    const direct = await gql(
      `query($u0: ID!, $token: ID!) { user(id: $u0) { firstName tokens { total data { id } } } token(id: $token) { scope user { id lastName } } }`,
      { u0, token },
    );
    expect(res.body.data._entities).toEqual([direct.user, direct.token]);
    // The users' statement for the User references reads the columns selected (and the id), not whole rows.
    const userReads = statements.filter((q) => /from users t where t\.id = any\(/.test(q));
    expect(userReads.some((q) => /^select t\.id as "id", t\.first_name as "firstName" from users/.test(q))).toBe(true);
  });

  test('reads all the references of one type in one statement, however many (50 users, 20 of each other type: four statements)', async () => {
    const users = [];
    for (let i = 0; i < 50; i++) users.push(ref('User', seeded.users[i % seeded.users.length] + (i >= 3 ? 1_000_000 + i : 0)));
    const others = Array.from({ length: 20 }, (_, i) => [
      ref('Application', seeded.applications[i % 2]),
      ref('Role', seeded.roles[i % 2]),
      ref('Token', i === 0 ? seeded.tokens[0] : 2_000_000 + i),
    ]).flat();
    svc.queries.length = 0;
    const res = await entities([...users, ...others]);
    const statements = [...svc.queries];
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const answered = res.body.data._entities;
    expect(answered).toHaveLength(110);
    // The three seeded users resolve; the 47 made-up ids are absent.
    expect(answered.slice(0, 50).filter((e: unknown) => e !== null)).toHaveLength(3);
    expect(byIdReads(statements)).toEqual(['applications', 'roles', 'tokens', 'users']);
  });

  test("checks the read permission of each reference: FORBIDDEN at its own path, the others still resolve, each answer at its reference's index", async () => {
    const narrow = await tokenFor('user:read application:read');
    // Several times: a document that ran before may run compiled (src/graphql/executor.ts says why this one does not).
    for (let run = 0; run < 3; run++) {
      const res = await entities(
        [
          ref('Token', seeded.tokens[0]),
          ref('User', seeded.users[0]),
          ref('Role', seeded.roles[0]),
          ref('Application', seeded.applications[0]),
          ref('Role', seeded.roles[1]),
        ],
        { token: narrow },
      );
      expect(res.status).toBe(200);
      expect(res.body.data._entities).toEqual([
        null,
        expect.objectContaining({ __typename: 'User', id: String(seeded.users[0]) }),
        null,
        expect.objectContaining({ __typename: 'Application', id: String(seeded.applications[0]) }),
        null,
      ]);
      expect(res.body.errors.map((e: any) => ({ code: e.extensions.code, path: e.path }))).toEqual([
        { code: 'FORBIDDEN', path: ['_entities', 0] },
        { code: 'FORBIDDEN', path: ['_entities', 2] },
        { code: 'FORBIDDEN', path: ['_entities', 4] },
      ]);
    }
  });

  test('no statement reads a type the caller may not read', async () => {
    const narrow = await tokenFor('application:read');
    svc.queries.length = 0;
    const res = await entities([ref('User', seeded.users[0]), ref('User', seeded.users[1]), ref('Application', seeded.applications[0])], { token: narrow });
    expect(res.body.errors.map((e: any) => e.path)).toEqual([
      ['_entities', 0],
      ['_entities', 1],
    ]);
    expect(byIdReads(svc.queries)).toEqual(['applications']);
  });

  test('a reference whose id is not an id is BAD_USER_INPUT at its path', async () => {
    const res = await entities([ref('Role', 'not-a-number'), ref('Role', seeded.roles[1])]);
    expect(res.status).toBe(200);
    expect(res.body.data._entities).toEqual([null, expect.objectContaining({ __typename: 'Role', id: String(seeded.roles[1]) })]);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: ['_entities', 0], extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }) })]);
  });

  test('representations that do not name an entity are BAD_USER_INPUT, naming the first such one', async () => {
    for (const bad of [{ __typename: 'Nope', id: '1' }, { __typename: 'UserPage', id: '1' }, { __typename: 'Query', id: '1' }, { id: '1' }, 'User', 7]) {
      const res = await svc.graphql(ENTITIES, { representations: [ref('User', seeded.users[0]), bad] });
      expect(res.body.data).toBeNull();
      expect(res.body.errors).toEqual([
        expect.objectContaining({
          path: ['_entities'],
          extensions: expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'representations[1].__typename' }),
        }),
      ]);
    }
    expect(svc.logLines.filter((line) => /"level":"error"/.test(line))).toEqual([]);
  });

  test('counts toward the cost limit as one record per reference: what 15 references may ask, 30 may not', async () => {
    const query = `query($representations: [_Any!]!) { _entities(representations: $representations) { ... on User { tokens(pageSize: 1000) { total } } } }`;
    const refs = (n: number) => Array.from({ length: n }, () => ref('User', seeded.users[0]));
    const allowed = await svc.graphql(query, { representations: refs(15) });
    expect(allowed.status).toBe(200);
    expect(allowed.body.data._entities).toHaveLength(15);
    const refused = await svc.graphql(query, { representations: refs(30) });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions).toEqual(expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED', cost: 30_031, maxCost: 20_000 }));
  });

  test('without a token, or with a wrong one: 401 UNAUTHENTICATED, as every other query', async () => {
    for (const token of [null, 'not-a-token']) {
      const res = await entities([ref('User', seeded.users[0])], { token });
      expect(res.status).toBe(401);
      expect(res.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(res.body.data).toBeUndefined();
    }
  });

  test('is never answered from the read cache (an entity answer depends on its representations and the caller), while cacheable queries still may be', async () => {
    const representations = [ref('User', seeded.users[2])];
    for (let i = 0; i < 3; i++) {
      svc.queries.length = 0;
      const res = await entities(representations);
      expect(res.body.data._entities).toEqual([expect.objectContaining({ id: String(seeded.users[2]) })]);
      expect(byIdReads(svc.queries)).toEqual(['users']);
    }
    // What the read cache decides from the subgraph schema (src/graphql/cacheable.ts): the marks
    // survived its derivation, and neither federation field is cacheable.
    const subgraph = await graphQLSubgraphSchema();
    expect(isCacheableDocument(subgraph, parse(`{ users(pageSize: 1) { data { id firstName applications { total } } } }`))).toBe(true);
    expect(isCacheableDocument(subgraph, parse(ENTITIES))).toBe(false);
    expect(isCacheableDocument(subgraph, parse('{ _service { sdl } }'))).toBe(false);
  });
});

describe('_service { sdl }', () => {
  let file: string;
  beforeAll(async () => {
    file = await readFile(new URL('../../schema.subgraph.graphql', import.meta.url), 'utf8');
  });

  test('schema.subgraph.graphql matches the subgraph SDL the code emits (run `npm run schema` when this fails)', async () => {
    const emitted = await subgraphSchemaText(await graphQLSubgraphSchema());
    if (emitted !== file) throw new Error('schema.subgraph.graphql is stale: run `npm run schema` and commit the result');
    expect(emitted).toBe(file);
  });

  test('answers schema.subgraph.graphql: a Federation 2 @link, the four entities keyed by id, subscriptions @inaccessible', async () => {
    const res = await svc.graphql('{ _service { sdl } }');
    expect(res.status).toBe(200);
    expect(`${res.body.data._service.sdl}\n`).toBe(file);
    expect(file).toMatch(/^extend schema @link\(url: "https:\/\/specs\.apollo\.dev\/federation\/v2\.\d+", import: \["@key", "@inaccessible"\]\)/);
    for (const type of ['User', 'Token', 'Application', 'Role']) expect(file).toContain(`type ${type} @key(fields: "id") {`);
    expect(file).toContain('type Subscription @inaccessible {');
    expect(file).toContain('union _Entity = Application | Role | Token | User');
  });

  test('is answered without a token where introspection is (it tells what introspection tells), and not with anything else beside it', async () => {
    const alone = await svc.graphql('{ _service { sdl } }', undefined, { token: null });
    expect(alone.status).toBe(200);
    expect(`${alone.body.data._service.sdl}\n`).toBe(file);
    const more = await svc.graphql('{ _service { sdl } users { total } }', undefined, { token: null });
    expect(more.status).toBe(401);
  });
});

describe('subscriptions', () => {
  test('stay on this service’s own endpoint, over WebSocket and over SSE, as without the subgraph', async () => {
    const [latest] = await svc.sql<{ id: string }>('select coalesce(max(id), 0)::text as id from audit_events');
    // From the last event on (`after`): the write below is delivered however soon the subscription starts.
    const query = 'subscription($after: ID) { userEvents(after: $after) { action user { lastName } } }';
    const ws = wsConnect(svc.url, bearer(svc.adminToken));
    const sse = sseConnect(svc.url, svc.adminToken);
    try {
      const overWs = collect(ws.client, query, { after: latest.id });
      const overSse = collect(sse, query, { after: latest.id });
      const lastName = uniq('subscribed');
      await adminCreate('/user/', { firstName: 'Sub', lastName });
      for (const received of [await overWs.atLeast(1), await overSse.atLeast(1)]) {
        expect(received[0]).toEqual({ data: { userEvents: { action: 'CREATE', user: { lastName } } } });
      }
    } finally {
      await ws.client.dispose();
      sse.dispose();
    }
  });
});

describe("Apollo's inline trace (ftv1)", () => {
  const TRACE = { 'apollo-federation-include-trace': 'ftv1' };

  /** The response names of a trace's nodes, depth first. */
  function traced(ftv1: string): string[] {
    const trace = Trace.decode(Buffer.from(ftv1, 'base64'));
    const names: string[] = [];
    const walk = (node: Trace.INode | null | undefined) => {
      for (const child of node?.child ?? []) {
        names.push(child.responseName || `[${child.index}]`);
        walk(child);
      }
    };
    walk(trace.root);
    return names;
  }

  test('is in the answer only when the router asks for it, with every field (__typename aside)', async () => {
    const representations = [ref('User', seeded.users[0]), ref('Application', seeded.applications[0])];
    const res = await entities(representations, { headers: TRACE });
    expect(res.status).toBe(200);
    expect(res.body.data._entities).toEqual([expect.objectContaining({ __typename: 'User' }), expect.objectContaining({ __typename: 'Application' })]);
    expect(traced(res.body.extensions.ftv1)).toEqual(['_entities', '[0]', 'id', 'firstName', 'lastName', '[1]', 'id', 'name']);
    const plain = await entities(representations);
    expect(plain.body.errors).toBeUndefined();
    expect(plain.body.extensions?.ftv1).toBeUndefined();
  });

  test('traces an operation that runs compiled when it is not traced, and leaves its untraced runs compiled', async () => {
    const query = `query($id: ID!) { user(id: $id) { id firstName applications { total } } }`;
    const run = (headers: Record<string, string> = {}) => svc.graphql(query, { id: String(seeded.users[1]) }, { headers });
    // From its second run on, an operation runs compiled (src/graphql/executor.ts).
    for (let i = 0; i < 3; i++) expect((await run()).body.extensions?.ftv1).toBeUndefined();
    const res = await run(TRACE);
    expect(res.body.data.user).toEqual({ id: String(seeded.users[1]), firstName: 'Entity1', applications: { total: 0 } });
    expect(traced(res.body.extensions.ftv1)).toEqual(['user', 'id', 'firstName', 'applications', 'total']);
    expect((await run()).body.extensions?.ftv1).toBeUndefined();
  });

  test('masks error messages in the trace', async () => {
    const narrow = await tokenFor('application:read');
    const res = await entities([ref('User', seeded.users[0])], { token: narrow, headers: TRACE });
    expect(res.body.errors[0].extensions.code).toBe('FORBIDDEN');
    const trace = Trace.decode(Buffer.from(res.body.extensions.ftv1, 'base64'));
    const errors = trace.root?.child?.[0]?.child?.[0]?.error ?? [];
    expect(errors.map((e) => e.message)).toEqual(['<masked>']);
  });

  test('a traced answer is neither kept nor served by the read cache: each traced request reads the table', async () => {
    const query = `{ roles(pageSize: 1, orderBy: [{ id: ASC }]) { data { id name } } }`;
    for (let i = 0; i < 3; i++) {
      svc.queries.length = 0;
      const res = await svc.graphql(query, undefined, { headers: TRACE });
      expect(typeof res.body.extensions.ftv1).toBe('string');
      expect(svc.queries.filter((q) => /from roles/.test(q))).toHaveLength(1);
    }
  });
});

describe('without GRAPHQL_FEDERATION', () => {
  let plain: TestService;
  beforeAll(async () => {
    plain = await startTestService();
  });
  afterAll(async () => {
    await plain?.stop();
  });

  test('there is no _service nor _entities (schema.graphql as it is: test/graphql/explorer.test.ts)', async () => {
    for (const query of ['{ _service { sdl } }', '{ _entities(representations: []) { __typename } }']) {
      const res = await plain.graphql(query);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    }
  });
});
