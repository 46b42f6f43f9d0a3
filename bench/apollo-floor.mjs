// The floor of this service's stack for GraphQL: Koa 3, koa-bodyparser, Apollo Server 5 through
// @as-integrations/koa (what the service is built on), a small schema in SDL on graphql-js, the
// bearer token's keyed hash (the service's own Keyring) and its check, in the operation's first
// statement once the token was seen (floor.mjs), and statements of the service's shape: `user(id)`
// reads one row; `patchUser` is floor.mjs's write (the service's own statement, answering the two
// fields the floor's schema has); `users(page, pageSize)` is the
// service's page of users with their application and role links: its four statements (the page,
// the live count, each relation's page per user, the last two at once), the links read in the
// root field itself (no loader, no per-field resolver; FLOOR_NESTED=loader: a resolver per user and
// nested list with a DataLoader per request instead, as the service did before it read them ahead). Operations run compiled by graphql-jit
// through the plugin hook the service uses (`responseForOperation`), each document compiled on its
// first run. Nothing else: no request id, log line, metrics, limits, error mapping, read cache,
// type-graphql, validation of variables beyond graphql-jit's own coercion.
// It measures how close to PostGraphile any service on this stack can come here
// (docs/benchmarks.md#the-floor-of-the-stack).
//
//   FLOORS=1 npm run bench:compare      # beside the service, each case also as a share of its floor
// or by hand, on the database a run of it left (uts_bench_service; export TOKEN_KEY before that run):
//   npm run build; export TOKEN_KEY=…   # the key the seeded database was written with
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/uts_bench_service PORT=5731 node bench/apollo-floor.mjs
//   wrk -t2 -c32 -d8s -s bench/compare/load.lua http://127.0.0.1:5731 -- us-gql-user   # or us-gql-patch
import { ApolloServer, HeaderMap } from '@apollo/server';
import { koaMiddleware } from '@as-integrations/koa';
import { GraphQLError } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import DataLoader from 'dataloader';
import { credentialOf, NotLive, patchFirstName, pool, read, readFor } from './floor.mjs';

const USER = read('floor-gql-user', `select id, first_name as "firstName", last_name as "lastName", status from users where id = $1 and deleted_at is null`);

// The service's page statements (src/list/list.ts, src/list/pages.ts), as it sends them for the
// benchmark's page query (a nested page: its first 20 links); the token's check rides in the first.
const PAGE = read(
  'floor-page',
  `select t.id as "id", t.first_name as "firstName", t.last_name as "lastName", t.status as "status" from users t
          where t.id = any(array(select t.id from users t where t.deleted_at is null order by t.id asc limit $1 offset $2)) order by t.id asc`,
);
const TOTAL = { name: 'floor-total', text: `select live as total from live_counts where table_name = 'users'` };
const APPLICATIONS = {
  name: 'floor-applications',
  text: `select * from (select t.id as "id", t.name as "name", l.user_id as "userID", l."right" as "right", l.user_id as parent_id,
                 row_number() over (partition by l.user_id order by t.id asc) as rn
            from user_applications l join applications t on t.id = l.application_id
           where l.user_id = any($1::bigint[]) and l.deleted_at is null and t.deleted_at is null) p
          where p.rn > $2 and p.rn <= $3 order by p.parent_id, p.rn`,
};
const ROLES = {
  name: 'floor-roles',
  text: `select * from (select t.id as "id", t.name as "name", l.user_id as parent_id,
                 row_number() over (partition by l.user_id order by t.id asc) as rn
            from user_roles l join roles t on t.id = l.role_id
           where l.user_id = any($1::bigint[]) and l.deleted_at is null and t.deleted_at is null) p
          where p.rn > $2 and p.rn <= $3 order by p.parent_id, p.rn`,
};

const perUser = process.env.FLOOR_NESTED === 'loader';

/** Each user's page of links (the first 20), in the order of `ids`: one statement for all of them. */
async function linkPages(statement, ids, shape) {
  const pages = new Map(ids.map((id) => [id, { data: [] }]));
  for (const row of (await pool.query({ ...statement, values: [ids, 0, 20] })).rows) pages.get(row.parent_id).data.push(shape(row));
  return ids.map((id) => pages.get(id));
}
const applicationLink = (row) => ({ right: row.right, application: row });
const role = (row) => row;

async function usersPage(credential, page, pageSize) {
  const [data, counted] = await Promise.all([readFor(credential, PAGE, [pageSize, (page - 1) * pageSize]), pool.query(TOTAL)]);
  if (!perUser) {
    const ids = data.map((user) => user.id);
    const [applications, roles] = await Promise.all([linkPages(APPLICATIONS, ids, applicationLink), linkPages(ROLES, ids, role)]);
    data.forEach((user, i) => Object.assign(user, { applications: applications[i], roles: roles[i] }));
  }
  return { total: counted.rows[0].total, data };
}

const typeDefs = `
  type User { id: ID! firstName: String! lastName: String! status: Int! applications: ApplicationLinkPage! roles: RolePage! }
  type Application { id: ID! name: String! }
  type ApplicationLink { right: Int! application: Application! }
  type ApplicationLinkPage { data: [ApplicationLink!]! }
  type Role { id: ID! name: String! }
  type RolePage { data: [Role!]! }
  type UserPage { total: Int! data: [User!]! }
  input UserPatch { firstName: String }
  type Query { user(id: ID!): User users(page: Int!, pageSize: Int!): UserPage! }
  type Mutation { patchUser(id: ID!, input: UserPatch!): User }
`;
// The fields patchUser answers: the service answers those a selection asks for; the floor's
// schema has these two to ask for.
const PATCHED_FIELDS = ['id', 'firstName'];
const unauthorized = () => new GraphQLError('unauthorized', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
/** A root field's resolver whose statements found the token not live answers the 401's error. */
const checked =
  (resolve) =>
  async (...args) => {
    try {
      return await resolve(...args);
    } catch (err) {
      throw err instanceof NotLive ? unauthorized() : err;
    }
  };
const resolvers = {
  Query: {
    user: checked(async (_root, { id }, { credential }) => (await readFor(credential, USER, [Number(id)]))[0] ?? null),
    users: checked((_root, { page, pageSize }, { credential }) => usersPage(credential, page, pageSize)),
  },
  Mutation: {
    patchUser: checked((_root, { id, input }, { credential }) => patchFirstName(Number(id), input.firstName, credential, PATCHED_FIELDS)),
  },
};

// Every operation compiled by graphql-jit (once per document and operation name), answered through
// Apollo's public plugin hook as the service's executor does (src/graphql/executor.ts).
const compiled = new WeakMap();
const jit = {
  requestDidStart: async () => ({
    responseForOperation: async ({ schema, document, operationName, request, contextValue }) => {
      let byName = compiled.get(document);
      if (!byName) compiled.set(document, (byName = new Map()));
      let query = byName.get(operationName);
      if (!query) byName.set(operationName, (query = compileQuery(schema, document, operationName ?? undefined)));
      const result = isCompiledQuery(query) ? await query.query(undefined, contextValue, request.variables ?? {}) : query;
      // An error's own status (a token the statement found not live: 401), else 400 when nothing was executed.
      const status = result.errors?.find((error) => error.extensions?.http?.status)?.extensions.http.status ?? (result.data === undefined ? 400 : undefined);
      return { http: { status, headers: new HeaderMap() }, body: { kind: 'single', singleResult: result } };
    },
  }),
};

if (perUser)
  resolvers.User = {
    applications: async (user, _args, ctx) => (ctx.applications ??= new DataLoader((ids) => linkPages(APPLICATIONS, ids, applicationLink))).load(user.id),
    roles: async (user, _args, ctx) => (ctx.roles ??= new DataLoader((ids) => linkPages(ROLES, ids, role))).load(user.id),
  };

const server = new ApolloServer({ typeDefs, resolvers, plugins: [jit] });
await server.start();
const app = new Koa();
app.use(bodyParser());
app.use(
  koaMiddleware(server, {
    context: async ({ ctx }) => {
      const credential = await credentialOf(ctx.get('Authorization'));
      if (!credential) throw unauthorized();
      return { credential };
    },
  }),
);
app.listen(Number(process.env.PORT ?? 5731), '127.0.0.1');
