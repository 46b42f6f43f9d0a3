import 'reflect-metadata';
import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema, getMetadataStorage } from 'type-graphql';
import { ApplicationResolver } from '../applications/application.graphql.js';
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
    resolvers: [UserResolver, TokenResolver, UserTokensResolver, ApplicationResolver, RoleResolver, LinkResolver, UserLinksResolver],
    validate: false, // the services validate every input, for REST and GraphQL alike
  });
  return built;
}

/** schema.graphql as checked in at the repository root. */
export async function schemaText(): Promise<string> {
  return `${printSchema(await graphQLSchema())}\n`;
}
