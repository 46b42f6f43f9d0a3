import type { MigrationObject } from '@mikro-orm/core';
import type { Registry } from 'prom-client';
import type { ClassType } from 'type-graphql';
import type { ScopeSpec, ScopeVocabulary } from '../auth/scopes.js';
import type { Config } from '../config.js';
import type { Database, MigrationHooks } from '../db/database.js';
import type { Keyring } from '../db/keyring.js';
import type { Sql } from '../db/sql.js';
import type { GraphQLContext, ServiceContainer } from '../graphql/context.js';
import type { RouteSpec } from '../http/routes.js';
import type { Logger } from '../observability/log.js';
import type { EventSource } from '../realtime/events.js';
import type { Relation } from '../resource/relation.js';
import type { Cascade, Resource } from '../resource/resource.js';

/**
 * A resource module: everything one resource folder (src/users/, src/tokens/, …) brings to the
 * service, declared once in its `index.ts` and registered by one line in src/modules.ts. Generic
 * code derives every surface from the list of modules (src/module/registry.ts): the services
 * container, the REST router and its OpenAPI document, the GraphQL schema (operations, nested
 * fields, subscriptions), the ORM's entities and the migrations, the scope vocabulary and the
 * live-count check. docs/architecture.md#adding-a-resource walks through one.
 *
 * The module interface sits above the generic folders it ties together (resource/ for definitions,
 * http/ for routes, graphql/ and realtime/ for the schema), so that none of them imports it, nor any
 * resource folder.
 */
export interface ModuleSpec<K extends string, S> {
  /** Its key in the services container (`users`: `services.users`), unique among the modules. */
  key: K;
  /** Its record definitions: the ORM's entities; a `counted` one must have its `live_counts` row at start. */
  records?: readonly Resource[];
  /**
   * Its scope: `'user'` grants `user:read`, `user:write` and `user:*`; `{ name: 'audit', actions:
   * ['read'] }` only reading. The words join the vocabulary the grant rule checks (src/auth/scopes.ts).
   */
  scope?: string | ScopeSpec;
  /**
   * Its relations (src/resource/relation.ts): a delete of a record on either side takes the live
   * links with it (every module's record service is told: `ModuleDeps.cascadeOf`).
   */
  relations?: readonly Relation[];
  /**
   * The audit log's resources its writes record events under (an event's `resource`, which webhook
   * event patterns name: `ModuleDeps.auditResources`). Left out: its records' names and its
   * relations' link resources (`auditResourcesOf`); the audit module's own record writes none.
   */
  auditResources?: readonly string[];
  /** Its own migrations (a new table), run in name order with the core ones of src/db/migrations/. */
  migrations?: readonly MigrationObject[];
  /** What it does around the migrations with the key ring, and checks once they ran (tokens: the key check). */
  database?: MigrationHooks;
  /**
   * Record types that are entities of a federated graph, keyed by `id` (GRAPHQL_FEDERATION=true:
   * Apollo Federation's `@key(fields: "id")` in the subgraph schema, src/graphql/federation.ts): a
   * router's reference resolves as the record's query by id would, with its read permission
   * (`service.permissions.get`), through `Loaders.byId`: one statement per type for all the
   * references of a request. The module's service reads them (`findMany`).
   */
  entities?: readonly Resource[];
  /**
   * Its service, made once at start: `deps` holds what it may use (the key ring, the scope
   * vocabulary, and the services of the modules listed before it). A service declares the
   * permission of each operation in `permissions` (src/module/registry.ts checks them at start),
   * which its adapters read for the early 403.
   */
  service(deps: ModuleDeps): S;
  /** Its REST routes (below BASE_PATH), each with its OpenAPI docs (src/http/routes.ts). */
  routes?(service: S, context: RouteContext): RouteSpec[];
  /**
   * Its GraphQL resolvers (type-graphql classes: root queries and mutations, fields it adds to
   * other modules' types). Called once per process (type-graphql's metadata is global), in the order
   * the schema lists the modules (src/modules.ts: SCHEMA_ORDER).
   */
  graphql?(api: GraphQLApi<S>): ClassType[];
  /** Its subscriptions (src/realtime/realtime.graphql.ts builds them), after every module's operations. */
  subscriptions?(api: GraphQLApi<S>): ClassType[];
  /**
   * Its work beside the requests (webhooks: the deliveries) and its own Prometheus metrics: started
   * once the service listens on a migrated database (with MIGRATE=false, once the migrations ran),
   * in list order; what it answers is stopped by the graceful stop once the requests are answered
   * and the subscriptions closed, before the event source and the pool close.
   */
  start?(runtime: ModuleRuntime<S>): Promise<Stoppable | null> | Stoppable | null;
  /**
   * `npm run rotate-key`: re-seals the module's secrets still under TOKEN_KEY_PREVIOUS with
   * TOKEN_KEY (tokens: their access and refresh tokens; webhooks: their signing secrets), and
   * answers the line the tool prints (null: nothing to tell).
   */
  rotateKeys?(sql: Sql, keyring: Keyring): Promise<string | null>;
}

/** What a module's `start` runs on. */
export interface ModuleRuntime<S> {
  /** The module's service. */
  service: S;
  config: Config;
  /** The database: the request pool (`sql`), the key ring, and pools of their own for work that must not queue behind requests (`backgroundSql`). */
  db: Pick<Database, 'sql' | 'keyring' | 'backgroundSql' | 'outage'>;
  /** The instance's event source: the audit log's events in id order (src/realtime/events.ts). */
  events: EventSource;
  log: Logger;
  /** The registry of GET /metrics, where a module's own metrics go; null with METRICS=false. */
  metrics: Registry | null;
}

/** What a module's `start` answers: its work, which a stop ends. */
export interface Stoppable {
  stop(): Promise<void>;
}

export type Module<K extends string = string, S = unknown> = Readonly<ModuleSpec<K, S>>;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a list of modules holds each with its own service type
export type AnyModule = Module<string, any>;

/** What a module's service is made with. */
export interface ModuleDeps {
  /** The service's settings (src/config.ts): a module's own are there too (webhooks: `config.webhooks`). */
  config: Config;
  keyring: Keyring;
  /** The scope words of every module: the grant rule's vocabulary. */
  scopes: ScopeVocabulary;
  /** The services of the modules listed before this one (read them with `serviceOf`). */
  services: ServiceContainer;
  /** What a delete of a record of `resource` takes with it besides its definition's own `cascade`: the links of every module's relations. */
  cascadeOf(resource: Resource): readonly Cascade[];
  /** Every module's audit resources, in list order: what an audit event's `resource` may be (webhooks' event patterns name them). */
  auditResources: readonly string[];
}

export interface RouteContext {
  /** BASE_PATH: where the REST routes are served (a `Location` header names it). */
  basePath: string;
}

/** What a module's resolvers reach their service with. */
export interface GraphQLApi<S> {
  /** The module's service in the request's context. */
  service(ctx: GraphQLContext): S;
}

/** The audit resources a module writes events under: its own declaration, else its records' names and its relations' link resources. */
export const auditResourcesOf = (module: AnyModule): readonly string[] =>
  module.auditResources ?? [...new Set([...(module.records ?? []).map((r) => r.name), ...(module.relations ?? []).map((r) => r.auditResource)])];

/** Declares a module (the identity: the type parameters keep its key and service type for the container's type). */
export function defineModule<K extends string, S>(spec: ModuleSpec<K, S>): Module<K, S> {
  return spec;
}

/**
 * A module's service in a container, typed by the module: what one module uses of another it
 * depends on (oauth: the tokens' and links' services). The container holds each module's service
 * under its key by construction (src/module/registry.ts).
 */
export const serviceOf = <K extends string, S>(module: Module<K, S>, services: ServiceContainer): S => {
  const service = services[module.key];
  if (service === undefined) throw new Error(`the ${module.key} module's service is not made yet: list its module before the modules that use it`);
  return service as S;
};

/** The services of a list of modules, each under its key: the container's type (src/services.ts). */
export type ServicesOf<M extends readonly AnyModule[]> = { readonly [I in M[number] as I['key']]: ReturnType<I['service']> };
