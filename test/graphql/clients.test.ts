import { ApolloClient, CombinedGraphQLErrors, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { cacheExchange, Client, fetchExchange } from '@urql/core';
import { readFile } from 'node:fs/promises';
import { ClientError, GraphQLClient } from 'graphql-request';
import { startTestService, type TestService } from '../support/service.js';

/**
 * The "Frontend clients" set-ups of docs/graphql.md, run as written against the real service: Apollo Client,
 * urql (queries over GET, its default here) and graphql-request; what a query, a 401 and a
 * FORBIDDEN field look like in each.
 */
let svc: TestService;
let url: string;
let userReader: string;
beforeAll(async () => {
  svc = await startTestService();
  url = `${svc.running.url}/graphql`;
  userReader = await svc.tokenWith('user:read');
});
afterAll(async () => {
  await svc?.stop();
});

// --- as in docs/graphql.md ---------------------------------------------------------------------
const apolloClient = (token: string) =>
  new ApolloClient({ link: new HttpLink({ uri: url, headers: { Authorization: `Bearer ${token}` } }), cache: new InMemoryCache() });
const urqlClient = (token: string) =>
  new Client({
    url,
    exchanges: [cacheExchange, fetchExchange],
    preferGetMethod: true,
    fetchOptions: () => ({ headers: { Authorization: `Bearer ${token}` } }),
  });
const requestClient = (token: string) => new GraphQLClient(url, { headers: { Authorization: `Bearer ${token}` } });
// ------------------------------------------------------------------------------------------------

const VIEWER = '{ viewer { scope } }';
/** `token` needs token:read, which the user:read token lacks: data for `users`, FORBIDDEN (and null) for `token`. */
const MIXED = '{ users(pageSize: 1) { total } token(id: 1) { id } }';

describe('Apollo Client', () => {
  test('a query', async () => {
    const { data } = await apolloClient(svc.adminToken).query({ query: gql(VIEWER) });
    expect(data).toEqual({ viewer: { __typename: 'Token', scope: '*' } });
  });
  test('a 401 arrives as CombinedGraphQLErrors with code UNAUTHENTICATED (not a bare ServerError)', async () => {
    const error = await apolloClient('not-a-token')
      .query({ query: gql(VIEWER) })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(CombinedGraphQLErrors.is(error)).toBe(true);
    expect((error as CombinedGraphQLErrors).errors[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
  });
  test("a FORBIDDEN field: with errorPolicy 'all' the data that was allowed, and the error", async () => {
    const result = await apolloClient(userReader).query({ query: gql(MIXED), errorPolicy: 'all' });
    expect(result.data).toMatchObject({ users: { total: expect.any(Number) }, token: null });
    expect(CombinedGraphQLErrors.is(result.error)).toBe(true);
    expect((result.error as CombinedGraphQLErrors).errors[0]).toMatchObject({ path: ['token'], extensions: { code: 'FORBIDDEN' } });
  });
});

describe('urql', () => {
  test('a query over GET, no extra header needed', async () => {
    const result = await urqlClient(svc.adminToken).query(VIEWER, {}).toPromise();
    expect(result.error).toBeUndefined();
    expect(result.data).toMatchObject({ viewer: { scope: '*' } });
  });
  test('a 401 arrives as result.error with the code and the HTTP status', async () => {
    const result = await urqlClient('not-a-token').query(VIEWER, {}).toPromise();
    expect(result.error?.graphQLErrors[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((result.error?.response as Response).status).toBe(401);
  });
  test('a FORBIDDEN field: data and result.error together', async () => {
    const result = await urqlClient(userReader).query(MIXED, {}).toPromise();
    expect(result.data).toMatchObject({ users: { total: expect.any(Number) }, token: null });
    expect(result.error?.graphQLErrors[0]).toMatchObject({ path: ['token'], extensions: { code: 'FORBIDDEN' } });
  });
});

describe('graphql-request', () => {
  test('a query', async () => {
    expect(await requestClient(svc.adminToken).request(VIEWER)).toEqual({ viewer: { scope: '*' } });
  });
  test('a 401 throws a ClientError with the status and the code', async () => {
    const error = await requestClient('not-a-token')
      .request(VIEWER)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).response.status).toBe(401);
    expect((error as ClientError).response.errors?.[0].extensions).toMatchObject({ code: 'UNAUTHENTICATED' });
  });
  test('a FORBIDDEN field throws a ClientError carrying the partial data', async () => {
    const error = (await requestClient(userReader)
      .request(MIXED)
      .then(
        () => null,
        (e: unknown) => e,
      )) as ClientError;
    expect(error.response.data).toMatchObject({ users: { total: expect.any(Number) }, token: null });
    expect(error.response.errors?.[0]).toMatchObject({ path: ['token'], extensions: { code: 'FORBIDDEN' } });
  });
});

test("docs/graphql.md's GraphQL Code Generator config maps every custom scalar of the schema", async () => {
  const [readme, schema] = await Promise.all([
    readFile(new URL('../../docs/graphql.md', import.meta.url), 'utf8'),
    readFile(new URL('../../schema.graphql', import.meta.url), 'utf8'),
  ]);
  const config = /```ts\n(\/\/ codegen\.ts[\s\S]*?)```/.exec(readme)?.[1] ?? '';
  const scalars = [...schema.matchAll(/^scalar (\w+)/gm)].map((m) => m[1]);
  expect(scalars.length).toBeGreaterThan(0);
  for (const scalar of scalars) expect(config).toMatch(new RegExp(`\\b${scalar}:`));
});
