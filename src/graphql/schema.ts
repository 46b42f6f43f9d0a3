import 'reflect-metadata';
import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema, type BuildSchemaOptions, type PubSub } from 'type-graphql';
import type { ClassType } from 'type-graphql';
import { serviceSdl } from './federation.js';
import { withPlainResolvers } from './plain-resolvers.js';

const NO_TOPICS: PubSub = {
  publish() {
    throw new Error('subscriptions stream events from the audit log (src/realtime/hub.ts), not topics');
  },
  subscribe() {
    throw new Error('subscriptions stream events from the audit log (src/realtime/hub.ts), not topics');
  },
};

/**
 * The schema of the modules' GraphQL adapters (src/module/registry.ts: schemaOf, which makes each
 * module's resolvers once per process: type-graphql's metadata is global). The schema lists
 * operations in the order their resolvers were defined.
 */
export function buildGraphQLSchema(resolvers: readonly ClassType[]): Promise<GraphQLSchema> {
  // The services validate every input, for REST and GraphQL alike. type-graphql asks for a PubSub
  // once the schema has subscriptions; ours give their own `subscribe` (events come from the
  // audit log through src/realtime/hub.ts), so topics are never published or subscribed to.
  return buildSchema({ resolvers: resolvers as unknown as BuildSchemaOptions['resolvers'], validate: false, pubSub: NO_TOPICS }).then(withPlainResolvers);
}

/** A schema as schema.graphql has it at the repository root. */
export const schemaText = (schema: GraphQLSchema): string => `${printSchema(schema)}\n`;

/** A subgraph schema (src/graphql/federation.ts) as schema.subgraph.graphql has it: the SDL `_service { sdl }` answers. */
export const subgraphSchemaText = async (subgraph: GraphQLSchema): Promise<string> => `${await serviceSdl(subgraph)}\n`;
