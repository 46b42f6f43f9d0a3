import { graphql, GraphQLObjectType, GraphQLSchema, GraphQLString, type GraphQLField } from 'graphql';
import { serviceSchema as graphQLSchema, serviceSubgraphSchema as graphQLSubgraphSchema } from '../../src/services.js';
import { withPlainResolvers } from '../../src/graphql/plain-resolvers.js';

/**
 * The fields resolved once per parent record run as their plain resolvers (src/graphql/plain-resolvers.ts),
 * not through type-graphql's parameter wrapper. No database: the schema alone.
 */
describe('plain resolvers', () => {
  const PER_PARENT = ['User.applications', 'User.roles', 'User.applicationsConnection', 'User.rolesConnection', 'User.tokens', 'User.tokensConnection'];

  const field = (schema: GraphQLSchema, path: string): GraphQLField<unknown, unknown> => {
    const [type, name] = path.split('.');
    return (schema.getType(type) as GraphQLObjectType).getFields()[name];
  };

  it('makes the method of every nested list field (one call per parent) its resolve', async () => {
    const schema = await graphQLSchema();
    for (const path of PER_PARENT) {
      const { resolve, extensions } = field(schema, path);
      expect({ path, plain: typeof extensions.plainResolver }).toEqual({ path, plain: 'function' });
      expect(resolve).toBe(extensions.plainResolver);
    }
  });

  it('resolves the standard root fields of a record type plainly (its own fields keep the call through type-graphql)', async () => {
    const schema = await graphQLSchema();
    const standard = [
      'Query.users',
      'Query.usersConnection',
      'Query.user',
      'Mutation.createUser',
      'Mutation.updateUser',
      'Mutation.patchUser',
      'Mutation.destroyUser',
      'Mutation.restoreUser',
      'Mutation.applyUserID',
    ];
    for (const path of standard) {
      const { resolve, extensions } = field(schema, path);
      expect({ path, plain: typeof extensions.plainResolver, resolve: resolve === extensions.plainResolver }).toEqual({
        path,
        plain: 'function',
        resolve: true,
      });
    }
    // Every record type: applications, roles and tokens too.
    for (const path of [
      'Query.applications',
      'Query.role',
      'Query.tokensConnection',
      'Mutation.patchApplication',
      'Mutation.destroyRole',
      'Mutation.destroyToken',
    ]) {
      expect({ path, plain: field(schema, path).resolve === field(schema, path).extensions.plainResolver }).toEqual({ path, plain: true });
    }
  });

  it('keeps what else a marked field declares (its arguments, and whether it may be cached)', async () => {
    const schema = await graphQLSchema();
    const applications = field(schema, 'User.applications');
    expect(applications.args.map((a) => a.name)).toEqual(expect.arrayContaining(['page', 'pageSize', 'filter', 'orderBy']));
    expect(applications.extensions.readCache).toBe(true);
  });

  it('stay so in the subgraph schema (GRAPHQL_FEDERATION), with every field extension of the type-graphql schema', async () => {
    const [schema, subgraph] = await Promise.all([graphQLSchema(), graphQLSubgraphSchema()]);
    for (const path of PER_PARENT) {
      const { resolve, extensions } = field(subgraph, path);
      expect({ path, same: resolve === field(schema, path).resolve, plain: resolve === extensions.plainResolver }).toEqual({ path, same: true, plain: true });
    }
    for (const type of Object.values(schema.getTypeMap())) {
      if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__')) continue;
      for (const [name, own] of Object.entries(type.getFields())) {
        const derived = field(subgraph, `${type.name}.${name}`);
        expect({ at: `${type.name}.${name}`, extensions: derived.extensions }).toEqual({ at: `${type.name}.${name}`, extensions: own.extensions });
      }
    }
  });

  it('maps only marked fields: an unmarked resolver stays as it was', async () => {
    const own = (_root: unknown, args: { x?: string }) => `own ${args.x ?? ''}`;
    const plain = (_root: unknown, args: { x?: string }) => `plain ${args.x ?? ''}`;
    const Query = new GraphQLObjectType({
      name: 'Query',
      fields: {
        marked: { type: GraphQLString, args: { x: { type: GraphQLString } }, resolve: own, extensions: { plainResolver: plain } },
        unmarked: { type: GraphQLString, args: { x: { type: GraphQLString } }, resolve: own },
      },
    });
    const schema = withPlainResolvers(new GraphQLSchema({ query: Query }));
    const result = await graphql({ schema, source: '{ marked(x: "a") unmarked(x: "b") }' });
    expect(result).toEqual({ data: { marked: 'plain a', unmarked: 'own b' } });
  });
});
