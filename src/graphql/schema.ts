import 'reflect-metadata';
import { GraphQLObjectType, printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema, getMetadataStorage } from 'type-graphql';
import { ApplicationResolver } from '../applications/application.graphql.js';
import { AuditResolver } from '../audit/audit.graphql.js';
import { LinkResolver, UserLinksResolver } from '../links/link.graphql.js';
import { RoleResolver } from '../roles/role.graphql.js';
import { TokenResolver, UserTokensResolver } from '../tokens/token.graphql.js';
import { UserResolver } from '../users/user.graphql.js';

let built: Promise<GraphQLSchema> | undefined;

/** The schema, emitted from the resolver classes (built once per process). */
export function graphQLSchema(): Promise<GraphQLSchema> {
  // Parameter decorators run last parameter first, and type-graphql emits arguments in the order it
  // met them; sorted by position, `updateUser(id, input)` reads in the schema as it does in the code.
  getMetadataStorage().params.sort((a, b) => a.index - b.index);
  built ??= buildSchema({
    resolvers: [UserResolver, TokenResolver, UserTokensResolver, ApplicationResolver, RoleResolver, LinkResolver, UserLinksResolver, AuditResolver],
    validate: false, // the services validate every input, for REST and GraphQL alike
  }).then(withPlainFields);
  return built;
}

/**
 * type-graphql gives every plain field (`User.firstName`) a resolver of its own that reads the
 * property through its middleware chain, even with no middleware; a page of 50 users with their
 * links resolves over a thousand such fields. Without a resolver graphql-js reads the property
 * itself (its default resolver), which is what those resolvers do. Field resolvers stay.
 */
function withPlainFields(schema: GraphQLSchema): GraphQLSchema {
  const resolved = new Set(getMetadataStorage().fieldResolvers.map((r) => r.schemaName));
  for (const type of Object.values(schema.getTypeMap())) {
    if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__') || type === schema.getQueryType() || type === schema.getMutationType()) continue;
    for (const field of Object.values(type.getFields())) {
      if (!resolved.has(field.name)) field.resolve = undefined;
    }
  }
  return schema;
}

/** schema.graphql as checked in at the repository root. */
export async function schemaText(): Promise<string> {
  return `${printSchema(await graphQLSchema())}\n`;
}
