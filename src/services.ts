import type { GraphQLSchema } from 'graphql';
import { loadConfig, type Config } from './config.js';
import type { Keyring } from './db/keyring.js';
import type { AnyModule, ServicesOf } from './module/module.js';
import { createServices as servicesOf, schemaOf, subgraphSchemaOf } from './module/registry.js';
import { MODULES, SCHEMA_ORDER } from './modules.js';

/** The service layer of the modules (src/modules.ts): one service per module, under its key, shared by REST, GraphQL and the command-line tools. */
export type Services = ServicesOf<typeof MODULES>;

/**
 * The services of the modules: `MODULES`, or a list with more (a test's made-up module), made with
 * the service's settings (`config`; the defaults when not given: a tool that only documents the API).
 */
export function createServices(keyring: Keyring, options: { config?: Config; modules?: readonly AnyModule[] } = {}): Services {
  return servicesOf(options.modules ?? MODULES, keyring, options.config ?? loadConfig({}, false)) as Services;
}

/** The GraphQL schema of the modules (schema.graphql, for MODULES). */
export const serviceSchema = (modules: readonly AnyModule[] = MODULES): Promise<GraphQLSchema> => schemaOf(modules, SCHEMA_ORDER);

/** The same schema as an Apollo Federation 2 subgraph (GRAPHQL_FEDERATION=true; schema.subgraph.graphql, for MODULES). */
export const serviceSubgraphSchema = (modules: readonly AnyModule[] = MODULES): Promise<GraphQLSchema> => subgraphSchemaOf(modules, SCHEMA_ORDER);
