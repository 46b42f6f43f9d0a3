import type { GraphQLSchema } from 'graphql';
import type { Keyring } from './db/keyring.js';
import type { AnyModule, ServicesOf } from './module/module.js';
import { createServices as servicesOf, schemaOf } from './module/registry.js';
import { MODULES, SCHEMA_ORDER } from './modules.js';

/** The service layer of the modules (src/modules.ts): one service per module, under its key, shared by REST, GraphQL and the command-line tools. */
export type Services = ServicesOf<typeof MODULES>;

/** The services of the modules: `MODULES`, or a list with more (a test's made-up module). */
export function createServices(keyring: Keyring, modules: readonly AnyModule[] = MODULES): Services {
  return servicesOf(modules, keyring) as Services;
}

/** The GraphQL schema of the modules (schema.graphql, for MODULES). */
export const serviceSchema = (modules: readonly AnyModule[] = MODULES): Promise<GraphQLSchema> => schemaOf(modules, SCHEMA_ORDER);
