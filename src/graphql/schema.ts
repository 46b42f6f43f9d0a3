import 'reflect-metadata';
import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema, type BuildSchemaOptions, type PubSub } from 'type-graphql';
import { applications } from '../applications/application.resource.js';
import { auditResolver } from '../audit/audit.graphql.js';
import { linkResolvers } from '../links/link.graphql.js';
import { realtimeResolvers } from '../realtime/realtime.graphql.js';
import { namedResolver } from '../resource/named.graphql.js';
import { roles } from '../roles/role.resource.js';
import { tokenResolvers } from '../tokens/token.graphql.js';
import { userResolver } from '../users/user.graphql.js';
import { webhookResolvers } from '../webhooks/webhook.graphql.js';
import { serviceSdl, subgraphSchema } from './federation.js';
import { withPlainResolvers } from './plain-resolvers.js';

let built: Promise<GraphQLSchema> | undefined;
let builtSubgraph: Promise<GraphQLSchema> | undefined;

const NO_TOPICS: PubSub = {
  publish() {
    throw new Error('subscriptions stream events from the audit log (src/realtime/hub.ts), not topics');
  },
  subscribe() {
    throw new Error('subscriptions stream events from the audit log (src/realtime/hub.ts), not topics');
  },
};

/**
 * The schema, emitted from the resources' GraphQL adapters (built once per process: type-graphql's
 * metadata is global). The adapters are defined in the order the schema lists their operations.
 */
export function graphQLSchema(): Promise<GraphQLSchema> {
  built ??= (() => {
    const resolvers = [
      namedResolver(applications, 'applications'),
      auditResolver(),
      namedResolver(roles, 'roles'),
      userResolver(),
      ...linkResolvers(),
      ...tokenResolvers(),
      ...webhookResolvers(),
      ...realtimeResolvers(),
    ] as const;
    // The services validate every input, for REST and GraphQL alike. type-graphql asks for a PubSub
    // once the schema has subscriptions; ours give their own `subscribe` (events come from the
    // audit log through src/realtime/hub.ts), so topics are never published or subscribed to.
    return buildSchema({ resolvers: resolvers as unknown as BuildSchemaOptions['resolvers'], validate: false, pubSub: NO_TOPICS }).then(withPlainResolvers);
  })();
  return built;
}

/** schema.graphql as checked in at the repository root. */
export async function schemaText(): Promise<string> {
  return `${printSchema(await graphQLSchema())}\n`;
}

/** The same schema as an Apollo Federation 2 subgraph (GRAPHQL_FEDERATION=true; src/graphql/federation.ts), built once. */
export function graphQLSubgraphSchema(): Promise<GraphQLSchema> {
  builtSubgraph ??= graphQLSchema().then(subgraphSchema);
  return builtSubgraph;
}

/** schema.subgraph.graphql as checked in at the repository root: the SDL `_service { sdl }` answers. */
export async function subgraphSchemaText(): Promise<string> {
  return `${await serviceSdl(await graphQLSubgraphSchema())}\n`;
}
