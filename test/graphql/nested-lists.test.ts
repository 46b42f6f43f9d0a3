import { getNamedType, isObjectType, type GraphQLSchema } from 'graphql';
import { serviceSchema } from '../../src/services.js';

/**
 * `deleted` (ONLY or INCLUDE soft-deleted records) is an argument of top-level lists only. A nested
 * list (`User.roles`, `User.applicationsConnection`, …) lists live links of live records: a link is
 * soft-deleted with its unlink, or with the delete of either side, so there is nothing for
 * `deleted` to mean there, and no nested list takes it. No database: the schema alone.
 */
let schema: GraphQLSchema;
beforeAll(async () => {
  schema = await serviceSchema();
});

/** Every field answering a page or a connection, as `Type.field`, with its argument names. */
function listFields(types: (name: string) => boolean): { path: string; args: string[] }[] {
  return Object.values(schema.getTypeMap())
    .filter((type) => isObjectType(type) && !type.name.startsWith('__') && types(type.name))
    .flatMap((type) =>
      Object.values((type as import('graphql').GraphQLObjectType).getFields())
        .filter((field) => /(Page|Connection)$/.test(getNamedType(field.type).name))
        .map((field) => ({ path: `${type.name}.${field.name}`, args: field.args.map((a) => a.name) })),
    );
}

test('no nested list takes `deleted`', () => {
  const nested = listFields((name) => !['Query', 'Mutation', 'Subscription'].includes(name));
  expect(nested.map((f) => f.path)).toEqual(expect.arrayContaining(['User.applications', 'User.roles', 'User.rolesConnection', 'User.tokensConnection']));
  expect(nested.filter((f) => f.args.includes('deleted')).map((f) => f.path)).toEqual([]);
});

test('every top-level list of records takes `deleted`', () => {
  const top = listFields((name) => name === 'Query').filter((f) => f.path !== 'Query.auditEvents');
  expect(top.length).toBeGreaterThanOrEqual(8);
  expect(top.filter((f) => !f.args.includes('deleted')).map((f) => f.path)).toEqual([]);
});
