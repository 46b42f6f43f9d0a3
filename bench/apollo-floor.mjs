// The floor of this service's stack for GraphQL: Koa 3, koa-bodyparser, Apollo Server 5 through
// @as-integrations/koa (what the service is built on), a small schema in SDL on graphql-js, the
// bearer token's keyed hash (the service's own Keyring) and its lookup, and statements of the
// service's shape: `user(id)` reads one row; `patchUser` is floor.mjs's write (answering the two
// fields asked for, where the service's answers every column). Nothing else:
// no request id, log line, metrics, limits, error mapping, read cache, type-graphql, graphql-jit.
// It measures how close to PostGraphile any service on this stack can come here
// (docs/benchmarks.md#the-floor-of-the-stack).
//
//   FLOORS=1 npm run bench:compare      # beside the service, each case also as a share of its floor
// or by hand, on the database a run of it left (uts_bench_service; export TOKEN_KEY before that run):
//   npm run build; export TOKEN_KEY=…   # the key the seeded database was written with
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/uts_bench_service PORT=5731 node bench/apollo-floor.mjs
//   wrk -t2 -c32 -d8s -s bench/compare/load.lua http://127.0.0.1:5731 -- us-gql-user   # or us-gql-patch
import { ApolloServer } from '@apollo/server';
import { koaMiddleware } from '@as-integrations/koa';
import { GraphQLError } from 'graphql';
import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import { patchFirstName, pool, tokenOf } from './floor.mjs';

const USER = {
  name: 'floor-user',
  text: `select id, first_name as "firstName", last_name as "lastName", status from users where id = $1 and deleted_at is null`,
};

const typeDefs = `
  type User { id: ID! firstName: String! lastName: String! status: Int! }
  input UserPatch { firstName: String }
  type Query { user(id: ID!): User }
  type Mutation { patchUser(id: ID!, input: UserPatch!): User }
`;
const resolvers = {
  Query: {
    user: async (_root, { id }) => (await pool.query({ ...USER, values: [Number(id)] })).rows[0] ?? null,
  },
  Mutation: {
    patchUser: (_root, { id, input }, { token }) => patchFirstName(Number(id), input.firstName, token),
  },
};

const server = new ApolloServer({ typeDefs, resolvers });
await server.start();
const app = new Koa();
app.use(bodyParser());
app.use(
  koaMiddleware(server, {
    context: async ({ ctx }) => {
      const token = await tokenOf(ctx.get('Authorization'));
      if (!token) throw new GraphQLError('unauthorized', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
      return { token };
    },
  }),
);
app.listen(Number(process.env.PORT ?? 5731), '127.0.0.1');
