import type { MigrationObject } from '@mikro-orm/core';
import type { GraphQLSchema } from 'graphql';
import type { ClassType } from 'type-graphql';
import type { Permission } from '../auth/caller.js';
import { ScopeVocabulary, type ScopeSpec } from '../auth/scopes.js';
import { ConfigError, type Config } from '../config.js';
import type { DatabaseSchema } from '../db/database.js';
import type { Keyring } from '../db/keyring.js';
import { migrations as coreMigrations } from '../db/migrations/index.js';
import { tablesWithoutLiveCount } from '../db/migrations/live-counts.js';
import type { Sql } from '../db/sql.js';
import type { GraphQLContext, ServiceContainer } from '../graphql/context.js';
import { recordEntity, subgraphSchema, type EntityDeclaration } from '../graphql/federation.js';
import { buildGraphQLSchema } from '../graphql/schema.js';
import type { RouteSpec } from '../http/routes.js';
import { entitySchemaOf } from '../resource/entity.js';
import type { Resource } from '../resource/resource.js';
import { auditResourcesOf, type AnyModule, type GraphQLApi, type ModuleDeps, type ModuleRuntime, type Stoppable } from './module.js';

/**
 * Everything generic code derives from the list of modules (src/modules.ts), each derivation a
 * function of the list: the scope vocabulary, the services container, the REST route table, the
 * GraphQL schema, the database's entities, migrations and hooks, the live-count check. Start-up
 * work only: nothing here runs per request.
 */

/** The scope words of the modules: the grant rule's vocabulary (src/auth/scopes.ts). */
export function scopeVocabulary(modules: readonly AnyModule[]): ScopeVocabulary {
  const scopes = modules.flatMap((m): ScopeSpec[] =>
    m.scope === undefined ? [] : [typeof m.scope === 'string' ? { name: m.scope, actions: ['read', 'write'] } : m.scope],
  );
  return new ScopeVocabulary(scopes);
}

/** The audit log's resources: every module's (auditResourcesOf), in list order, each once. */
export const auditResources = (modules: readonly AnyModule[]): readonly string[] => [...new Set(modules.flatMap(auditResourcesOf))];

/** The permission declarations of a service (`service.permissions`: each operation's) and of the services it holds (a relation's). */
function declarationsOf(service: unknown, where: string): [string, string][] {
  if (typeof service !== 'object' || service === null) return [];
  const own = Object.entries((service as { permissions?: Record<string, string> }).permissions ?? {}).map(([op, p]): [string, string] => [`${where}.${op}`, p]);
  const held = Object.entries(service).filter(([key, value]) => key !== 'permissions' && typeof value === 'object' && value !== null && 'permissions' in value);
  return [...own, ...held.flatMap(([key, value]) => declarationsOf(value, `${where}.${key}`))];
}

/** Refuses a permission outside the vocabulary in a service's declarations. */
function checkPermissions(module: AnyModule, service: unknown, scopes: ScopeVocabulary): void {
  for (const [operation, permission] of declarationsOf(service, module.key)) scopes.check(permission, `the operation ${operation}`);
}

/**
 * The services container: each module's service under its key, made in list order, each with the
 * services of the modules before it. Refuses two modules with one key, and a permission a service
 * declares that no module's scope has.
 */
export function createServices(modules: readonly AnyModule[], keyring: Keyring, config: Config): ServiceContainer {
  const scopes = scopeVocabulary(modules);
  const relations = modules.flatMap((m) => m.relations ?? []);
  const cascadeOf = (resource: Resource) => relations.flatMap((relation) => relation.cascadeOf(resource));
  const audited = auditResources(modules);
  const services: Record<string, unknown> = {};
  for (const module of modules) {
    if (Object.hasOwn(services, module.key)) throw new Error(`two modules have the key "${module.key}"`);
    const deps: ModuleDeps = { config, keyring, scopes, services: { ...services }, cascadeOf, auditResources: audited };
    const service = module.service(deps);
    checkPermissions(module, service, scopes);
    services[module.key] = service;
  }
  return Object.freeze(services);
}

/** The REST API's route table (below BASE_PATH), module by module; a route's permission must be in the vocabulary. */
export function apiRoutes(modules: readonly AnyModule[], services: ServiceContainer, basePath: string): RouteSpec[] {
  const scopes = scopeVocabulary(modules);
  const routes = modules.flatMap((m) => m.routes?.(services[m.key], { basePath }) ?? []);
  for (const route of routes) if (route.permission) scopes.check(route.permission, `${route.method} ${route.path}`);
  return routes;
}

/**
 * The order the schema lists the modules' operations and subscriptions in, by module key; modules
 * not named come after those named, in list order (src/modules.ts: SCHEMA_ORDER).
 */
export interface SchemaOrder {
  operations: readonly string[];
  subscriptions: readonly string[];
}

const inOrder = (modules: readonly AnyModule[], keys: readonly string[]): AnyModule[] => {
  const rank = (m: AnyModule) => (keys.includes(m.key) ? keys.indexOf(m.key) : keys.length + modules.indexOf(m));
  return [...modules].sort((a, b) => rank(a) - rank(b));
};

/** How a module's resolvers reach its service in a request's context. */
const apiOf = (module: AnyModule): GraphQLApi<unknown> => ({ service: (ctx: GraphQLContext) => ctx.services[module.key] });

/**
 * Each module's resolver classes, made once per process: type-graphql's metadata is global, and a
 * second call would define every operation twice.
 */
const operationsMade = new WeakMap<AnyModule, ClassType[]>();
const subscriptionsMade = new WeakMap<AnyModule, ClassType[]>();
function made(cache: WeakMap<AnyModule, ClassType[]>, module: AnyModule, make: ((api: GraphQLApi<unknown>) => ClassType[]) | undefined): ClassType[] {
  let classes = cache.get(module);
  if (!classes) cache.set(module, (classes = make ? make.call(module, apiOf(module)) : []));
  return classes;
}

/** The resolvers of the schema: every module's operations, then every module's subscriptions, each in the schema's order. */
export function schemaResolvers(modules: readonly AnyModule[], order: SchemaOrder): ClassType[] {
  return [
    ...inOrder(modules, order.operations).flatMap((m) => made(operationsMade, m, m.graphql)),
    ...inOrder(modules, order.subscriptions).flatMap((m) => made(subscriptionsMade, m, m.subscriptions)),
  ];
}

const schemas = new Map<string, Promise<GraphQLSchema>>();

/** The GraphQL schema of the modules (built once per list of modules). */
export function schemaOf(modules: readonly AnyModule[], order: SchemaOrder): Promise<GraphQLSchema> {
  const key = modules.map((m) => m.key).join(' ');
  let schema = schemas.get(key);
  if (!schema) schemas.set(key, (schema = buildGraphQLSchema(schemaResolvers(modules, order))));
  return schema;
}

/** The record definitions of the modules. */
const recordsOf = (modules: readonly AnyModule[]): Resource[] => modules.flatMap((m) => m.records ?? []);

/**
 * What the database is made of: the modules' entities, the migrations (src/db/migrations/'s core
 * list and the modules' own, in name order: a name is its date), and the modules' migration hooks.
 */
export function databaseSchemaOf(modules: readonly AnyModule[]): DatabaseSchema {
  const migrations: MigrationObject[] = [...coreMigrations, ...modules.flatMap((m) => m.migrations ?? [])];
  const names = new Set<string>();
  for (const { name } of migrations) {
    if (names.has(name)) throw new Error(`two migrations are named ${name}`);
    names.add(name);
  }
  migrations.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    entities: recordsOf(modules).map(entitySchemaOf),
    migrations,
    hooks: modules.flatMap((m) => (m.database ? [m.database] : [])),
  };
}

/**
 * Refuses to start when a counted resource's table has no `live_counts` row: its unfiltered totals
 * would read 0. Its migration makes the row (src/db/migrations/live-counts.ts).
 */
export async function checkLiveCounts(sql: Sql, modules: readonly AnyModule[]): Promise<void> {
  const counted = recordsOf(modules).filter((r) => r.counted);
  const missing = await tablesWithoutLiveCount(
    sql,
    counted.map((r) => r.table),
  );
  if (missing.length) {
    throw new ConfigError(
      `the table${missing.length === 1 ? '' : 's'} ${missing.join(', ')} of a counted resource ${missing.length === 1 ? 'has' : 'have'} no live_counts row ` +
        '(its unfiltered totals would read 0): its migration must make it (liveCountStatements in src/db/migrations/live-counts.ts)',
    );
  }
}

/**
 * The federation entities of the modules (their `entities`), each resolved through its module's
 * service. Refuses a type two modules declare.
 */
export function federationEntities(modules: readonly AnyModule[]): EntityDeclaration[] {
  const entities = modules.flatMap((m) =>
    (m.entities ?? []).map((resource) => recordEntity(resource, (ctx: GraphQLContext) => ctx.services[m.key] as { permissions: { get: Permission } })),
  );
  const types = entities.map((e) => e.type);
  const twice = types.find((type, i) => types.indexOf(type) !== i);
  if (twice) throw new Error(`two modules declare the entity ${twice}`);
  return entities;
}

const subgraphs = new Map<string, Promise<GraphQLSchema>>();

/** The modules' schema as an Apollo Federation 2 subgraph, with their entities (GRAPHQL_FEDERATION=true; built once per list of modules). */
export function subgraphSchemaOf(modules: readonly AnyModule[], order: SchemaOrder): Promise<GraphQLSchema> {
  const key = modules.map((m) => m.key).join(' ');
  let schema = subgraphs.get(key);
  if (!schema) subgraphs.set(key, (schema = schemaOf(modules, order).then((types) => subgraphSchema(types, federationEntities(modules)))));
  return schema;
}

/**
 * Starts the modules' work beside the requests (`start`), in list order; answers what stops them
 * all, in the reverse order. A start that fails stops those already started, then throws.
 */
export async function startModules(
  modules: readonly AnyModule[],
  services: ServiceContainer,
  runtime: Omit<ModuleRuntime<unknown>, 'service'>,
): Promise<Stoppable> {
  const started: Stoppable[] = [];
  const stop = async () => {
    for (const work of [...started].reverse()) await work.stop();
  };
  try {
    for (const module of modules) {
      const work = await module.start?.({ ...runtime, service: services[module.key] });
      if (work) started.push(work);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop };
}
