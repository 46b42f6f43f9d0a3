import { composeServices } from '@apollo/composition';
import { ApolloGateway, IntrospectAndCompose, RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { createGatewayRuntime } from '@graphql-hive/gateway';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse, type GraphQLObjectType, type GraphQLSchema } from 'graphql';
import { gql, svc, tokenFor, useService } from '../support/graphql-platform.js';
import { REVIEWS_SDL, startReviewsSubgraph, type Review, type ReviewsSubgraph } from '../support/reviews-subgraph.js';

/**
 * The service as a subgraph behind real routers (SPEC §12), over real HTTP: this service
 * (GRAPHQL_FEDERATION=true) and a small reviews subgraph (test/support/reviews-subgraph.ts) that
 * adds `User.reviews` and answers `User` references, composed with @apollo/composition, behind
 * @apollo/gateway and Hive Gateway, each set up as its documentation shows, forwarding the
 * caller's Authorization (docs/graphql.md#behind-a-router). Apollo Router is a binary that cannot
 * be installed here; its configuration is in the docs.
 */
useService({ GRAPHQL_FEDERATION: 'true' });

const AUTHORS = 40;
let users: { id: string; firstName: string; lastName: string }[];
let applications: { id: string; name: string }[];
let reviews: Review[];
let reviewsSubgraph: ReviewsSubgraph;
let supergraphSdl: string;
/** The supergraph's API: what clients of a router see. */
let apiSchema: GraphQLSchema;

/** The tables the statements read records of by id (`… from users t where t.id = any(…)`), one entry per statement. */
const byIdReads = (statements: string[]) =>
  statements
    .map((s) => /from (\w+) t where t\.id = any\(/.exec(s)?.[1])
    .filter((table): table is string => table !== undefined)
    .sort();

beforeAll(async () => {
  const created = await gql(
    `mutation { ${Array.from({ length: AUTHORS }, (_, i) => `u${i}: createUser(input: { firstName: "Author${i}", lastName: "Router" }) { id firstName lastName }`).join(' ')} }`,
  );
  users = Array.from({ length: AUTHORS }, (_, i) => created[`u${i}`]);
  const apps = await gql(
    `mutation { a: createApplication(input: { name: "reviewed-a-${Date.now()}" }) { id name } b: createApplication(input: { name: "reviewed-b-${Date.now()}" }) { id name } }`,
  );
  applications = [apps.a, apps.b];
  reviews = users.map((user, i) => ({ id: `r${i}`, body: `Review ${i}`, authorID: user.id, applicationID: applications[i % 2].id }));
  reviewsSubgraph = await startReviewsSubgraph(reviews);

  // Composition as a router's build step does it: each subgraph's SDL, this one's as `_service { sdl }` answers it.
  const service = await svc.graphql('{ _service { sdl } }');
  const composed = composeServices([
    { name: 'users', url: `${svc.url}/graphql`, typeDefs: parse(service.body.data._service.sdl) },
    { name: 'reviews', url: reviewsSubgraph.url, typeDefs: parse(REVIEWS_SDL) },
  ]);
  if (composed.errors) throw new Error(`composition failed: ${composed.errors.map((e) => e.message).join('; ')}`);
  supergraphSdl = composed.supergraphSdl;
  apiSchema = composed.schema.toAPISchema().toGraphQLJSSchema();
});

afterAll(async () => {
  await reviewsSubgraph?.stop();
});

test('composes with a subgraph that adds User.reviews by its key: both subgraphs’ fields on User, this service’s operations, no subscriptions', () => {
  const user = apiSchema.getType('User') as GraphQLObjectType;
  expect(Object.keys(user.getFields())).toEqual(expect.arrayContaining(['id', 'firstName', 'lastName', 'tokens', 'reviews']));
  const queries = Object.keys(apiSchema.getQueryType()!.getFields());
  expect(queries).toEqual(expect.arrayContaining(['users', 'user', 'tokens', 'applications', 'roles', 'topReviews']));
  expect(queries).not.toContain('_entities');
  expect(Object.keys(apiSchema.getMutationType()!.getFields())).toEqual(expect.arrayContaining(['createUser', 'destroyTokens']));
  // Subscriptions are served by this service itself (WebSocket, SSE), not offered through a router.
  expect(apiSchema.getSubscriptionType()).toBeUndefined();
});

interface Router {
  url: string;
  stop(): Promise<void>;
}

/** @apollo/gateway in Apollo Server, composing at start from each subgraph's `_service` (IntrospectAndCompose), forwarding Authorization. */
async function startApolloGateway(): Promise<Router> {
  interface Context {
    authorization?: string;
  }
  class AuthorizationForwarding extends RemoteGraphQLDataSource<Context> {
    override willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<Context>) {
      if (context.authorization) request.http?.headers.set('authorization', context.authorization);
    }
  }
  const gateway = new ApolloGateway({
    supergraphSdl: new IntrospectAndCompose({
      subgraphs: [
        { name: 'users', url: `${svc.url}/graphql` },
        { name: 'reviews', url: reviewsSubgraph.url },
      ],
      // `_service` runs without a token only where introspection is on; a token works everywhere.
      introspectionHeaders: { authorization: `Bearer ${svc.adminToken}` },
    }),
    buildService: ({ url }) => new AuthorizationForwarding({ url }),
  });
  const server = new ApolloServer<Context>({ gateway });
  const { url } = await startStandaloneServer(server, {
    listen: { host: '127.0.0.1', port: 0 },
    context: async ({ req }) => ({ authorization: req.headers.authorization }),
  });
  return { url, stop: () => server.stop() };
}

/** Hive Gateway's runtime on the composed supergraph, forwarding Authorization (propagateHeaders). */
async function startHiveGateway(): Promise<Router> {
  const gateway = createGatewayRuntime({
    supergraph: supergraphSdl,
    propagateHeaders: {
      fromClientToSubgraphs({ request }) {
        const authorization = request.headers.get('authorization');
        return authorization ? { authorization } : {};
      },
    },
    logging: false,
  });
  const server: Server = createServer(gateway);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    async stop() {
      await new Promise((resolve) => server.close(resolve));
      await gateway.dispose();
    },
  };
}

const ROUTERS: [string, () => Promise<Router>][] = [
  ['@apollo/gateway', startApolloGateway],
  ['Hive Gateway', startHiveGateway],
];

describe.each(ROUTERS)('behind %s', (_name, start) => {
  let router: Router;
  beforeAll(async () => {
    router = await start();
  });
  afterAll(async () => {
    await router?.stop();
  });

  async function query(text: string, variables: Record<string, unknown> = {}, token: string | null = svc.adminToken) {
    const response = await fetch(router.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query: text, variables }),
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  test('joins a User of this service to its reviews from the other subgraph', async () => {
    const picked = [users[3], users[17]];
    const res = await query(
      `query($ids: [ID!]) { users(filter: { id: { in: $ids } }, orderBy: [{ id: ASC }]) { total data { id firstName reviews { id body } } } }`,
      { ids: picked.map((u) => u.id) },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.users).toEqual({
      total: 2,
      data: [
        { id: users[3].id, firstName: 'Author3', reviews: [{ id: 'r3', body: 'Review 3' }] },
        { id: users[17].id, firstName: 'Author17', reviews: [{ id: 'r17', body: 'Review 17' }] },
      ],
    });
  });

  test('joins the other subgraph’s User and Application references to their fields here, one statement per type for all 40', async () => {
    svc.queries.length = 0;
    const res = await query(`{ topReviews { id author { id firstName lastName } application { id name } } }`);
    const statements = [...svc.queries];
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.topReviews).toEqual(reviews.map((review, i) => ({ id: review.id, author: users[i], application: applications[i % 2] })));
    expect(byIdReads(statements)).toEqual(['applications', 'users']);
  });

  test('forwards the caller’s token: without one, or with a wrong one, UNAUTHENTICATED reaches the client and nothing of this service is read', async () => {
    for (const token of [null, 'not-a-token']) {
      svc.queries.length = 0;
      const res = await query(`{ topReviews { id author { firstName } } }`, {}, token);
      // The other subgraph answers (it needs no token); every author, from here, is null with the code.
      expect(res.body.data.topReviews).toEqual(reviews.map((review) => ({ id: review.id, author: null })));
      expect(res.body.errors.length).toBeGreaterThan(0);
      expect(new Set(res.body.errors.map((e: any) => e.extensions.code))).toEqual(new Set(['UNAUTHENTICATED']));
      expect(byIdReads(svc.queries)).toEqual([]);
    }
  });

  test('a token that may read applications but not users: FORBIDDEN for each author at its path, the applications resolve', async () => {
    const narrow = await tokenFor('application:read');
    svc.queries.length = 0;
    const res = await query(`{ topReviews { id author { firstName } application { name } } }`, {}, narrow);
    expect(res.body.data.topReviews).toEqual(reviews.map((review, i) => ({ id: review.id, author: null, application: { name: applications[i % 2].name } })));
    expect(new Set(res.body.errors.map((e: any) => e.extensions.code))).toEqual(new Set(['FORBIDDEN']));
    // Each author's error is at that author (Hive Gateway names the field asked for under it).
    const authorsWithError = new Set(res.body.errors.map((e: any) => e.path.slice(0, 3).join('.')));
    expect(authorsWithError).toEqual(new Set(reviews.map((_, i) => `topReviews.${i}.author`)));
    expect(byIdReads(svc.queries)).toEqual(['applications']);
  });
});
