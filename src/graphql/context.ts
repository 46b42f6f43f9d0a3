import DataLoader from 'dataloader';
import type { FieldNode, GraphQLResolveInfo } from 'graphql';
import type { Caller } from '../auth/caller.js';
import type { Sql } from '../db/sql.js';
import { AppError } from '../errors.js';
import type { RecordOf, Resource } from '../resource/resource.js';
import type { Admitted } from './gate.js';

/**
 * The services of the modules (src/modules.ts), each under its module's key (`users`), built once
 * at start (src/module/registry.ts). Generic code sees them as values; a module's own adapters get
 * their service typed through the module (src/module/module.ts: `serviceOf`).
 */
export type ServiceContainer = Readonly<Record<string, unknown>>;

/** A service that reads live records by id, in one statement: what `Loaders.byId` batches. */
interface RecordFinder {
  resource: Resource;
  findMany(caller: Caller, sql: Sql, ids: readonly number[], options?: { fields?: ReadonlySet<string> }): Promise<readonly { id: number }[]>;
}

const isFinder = (service: unknown): service is RecordFinder =>
  typeof service === 'object' && service !== null && 'resource' in service && typeof (service as RecordFinder).findMany === 'function';

/** Each container's record finders by resource name (made once per container, on the first lookup). */
const finders = new WeakMap<ServiceContainer, Map<string, RecordFinder>>();

function finderOf(services: ServiceContainer, resource: Resource): RecordFinder {
  let byName = finders.get(services);
  if (!byName) {
    byName = new Map(
      Object.values(services)
        .filter(isFinder)
        .map((service) => [service.resource.name, service]),
    );
    finders.set(services, byName);
  }
  const finder = byName.get(resource.name);
  if (!finder) throw new Error(`no service reads ${resource.name} records by id`);
  return finder;
}

/**
 * What every resolver gets: the caller (null only while an introspection query runs without a
 * token), the request id, the services, where to run statements (the pool, or the transaction of
 * a mutation with several root fields), and this request's DataLoaders.
 */
export interface GraphQLContext {
  caller: Caller | null;
  /** The request's X-Request-Id, carried by every error of the answer. */
  requestId: string;
  services: ServiceContainer;
  /** Where the operation's statements run: the primary (a mutation's transaction, once it opens one). */
  sql: Sql;
  /** Where a query's statements run: the read path (src/db/replicas.ts), the primary without replicas. */
  reads: Sql;
  loaders: Loaders;
  /** What the gate admitted (src/graphql/gate.ts): the document, operation and variables the executor runs. */
  admitted?: Admitted;
  /** The HTTP request's state, where the operation's name and type are noted for the request log (and an overloaded 503 for the outage log). */
  http?: { graphql?: { name: string | null; type: string }; overloaded?: boolean };
}

/** The caller; the HTTP layer lets a request without one through only for introspection. */
export function callerOf(ctx: GraphQLContext): Caller {
  if (!ctx.caller) throw AppError.unauthorized('an access token is required', 'missing');
  return ctx.caller;
}

/** A nested field's read for a list of parents: each parent's value, by the parent's id. */
export type NestedBatch<T> = (caller: Caller, sql: Sql, parentIds: readonly number[]) => Promise<Map<number, T>>;

/**
 * Per-request batching of nested fields: every `Token.user` of a response is one statement, and
 * every `User.tokens(…)` (likewise applications, roles) with the same arguments is one statement,
 * however many parents the page has. Made per request (and per transaction): a loader caches what
 * it loaded.
 */
export class Loaders {
  private readonly nested = new Map<FieldNode, DataLoader<number, unknown>>();
  /** Nested fields read ahead for their whole list of parents (src/graphql/prefetch.ts), by field node. */
  private readonly ahead = new Map<FieldNode, Map<number, unknown>>();
  private readonly records = new Map<string, Map<ReadonlySet<string> | undefined, DataLoader<number, unknown>>>();

  constructor(
    private readonly services: ServiceContainer,
    private readonly caller: Caller | null,
    private readonly sql: Sql,
  ) {}

  /**
   * Live records of a resource by id (`Token.user`, the entities of a subgraph request), through
   * the service of the module that defines it: every id asked for in a request is one statement
   * (the service's `findMany`, which checks the caller's read permission), null for an absent or
   * deleted record. One loader per resource and set of fields, made on its first use in the
   * request: `fields`, as `selectedFields` answers them for one field of the document (the same set
   * each time), reads only those columns; without it, whole records.
   */
  byId<R extends Resource>(resource: R, fields?: ReadonlySet<string>): DataLoader<number, (RecordOf<R> & { id: number }) | null> {
    let byFields = this.records.get(resource.name);
    if (!byFields) this.records.set(resource.name, (byFields = new Map()));
    let loader = byFields.get(fields);
    if (!loader) {
      const finder = finderOf(this.services, resource);
      loader = new DataLoader<number, unknown>(async (ids) => {
        const found = await finder.findMany(this.requireCaller(), this.sql, ids, fields ? { fields } : {});
        const byId = new Map(found.map((record) => [record.id, record]));
        return ids.map((id) => byId.get(id) ?? null);
      });
      byFields.set(fields, loader);
    }
    return loader as DataLoader<number, (RecordOf<R> & { id: number }) | null>;
  }

  private requireCaller(): Caller {
    if (!this.caller) throw AppError.unauthorized('an access token is required', 'missing');
    return this.caller;
  }

  /**
   * The loader of one nested field of the document (a page or a connection under each record of a
   * list): one batch for every parent, whatever their number. Keyed by the field's node in the
   * document, so that its arguments are parsed once (`prepare`, on the first parent) and not once
   * per parent; two aliases of a field are two nodes, two loaders.
   */
  byField<T>(info: GraphQLResolveInfo, prepare: () => NestedBatch<T>): DataLoader<number, T> {
    const node = info.fieldNodes[0];
    let loader = this.nested.get(node);
    if (!loader) {
      const batch = prepare();
      loader = new DataLoader<number, unknown>(async (ids) => {
        const found = await batch(this.requireCaller(), this.sql, ids);
        return ids.map((parent) => found.get(parent)!);
      });
      this.nested.set(node, loader);
    }
    return loader as DataLoader<number, T>;
  }

  /**
   * Reads a nested field (one node of the document) for a whole list of parents ahead of its
   * resolvers, with the batch its resolver would make (src/graphql/prefetch.ts says why). The same
   * node under another list of the request (a fragment used twice) adds its parents: one node and
   * its variables give one value per parent. A failed read is kept as the answer of each of those
   * parents, as a failed batch of the loader would be.
   */
  async readAhead<T>(node: FieldNode, batch: NestedBatch<T>, parentIds: readonly number[]): Promise<void> {
    let found: Map<number, unknown>;
    try {
      found = await batch(this.requireCaller(), this.sql, parentIds);
    } catch (err) {
      const failed = new ReadFailed(err);
      found = new Map(parentIds.map((id) => [id, failed]));
    }
    const known = this.ahead.get(node);
    if (!known) this.ahead.set(node, found);
    else for (const [id, value] of found) known.set(id, value);
  }

  /** A nested field's value for one parent, when it was read ahead (throws its read's error); undefined when it was not. */
  readyFor<T>(info: GraphQLResolveInfo, parentId: number): T | undefined {
    if (info.fieldNodes.length !== 1) return undefined;
    const value = this.ahead.get(info.fieldNodes[0])?.get(parentId);
    if (value instanceof ReadFailed) throw value.error;
    return value as T | undefined;
  }
}

/** A read ahead that failed: its error, answered by each parent's field. */
class ReadFailed {
  constructor(readonly error: unknown) {}
}
