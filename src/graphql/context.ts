import DataLoader from 'dataloader';
import type { FieldNode, GraphQLResolveInfo } from 'graphql';
import type { Caller } from '../auth/caller.js';
import type { Sql } from '../db/sql.js';
import { AppError } from '../errors.js';
import type { Services } from '../services.js';
import type { UserRecord } from '../users/user.resource.js';
import type { Admitted } from './gate.js';

/**
 * What every resolver gets: the caller (null only while an introspection query runs without a
 * token), the request id, the services, where to run statements (the pool, or the transaction of
 * a mutation with several root fields), and this request's DataLoaders.
 */
export interface GraphQLContext {
  caller: Caller | null;
  /** The request's X-Request-Id, carried by every error of the answer. */
  requestId: string;
  services: Services;
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

/** A record service's read of live records by id, of all their fields or of those named (src/resource/service.ts). */
export interface RecordsById<T> {
  findMany(caller: Caller, sql: Sql, ids: readonly number[], options?: { fields?: ReadonlySet<string> }): Promise<T[]>;
}

/** The caller; the HTTP layer lets a request without one through only for introspection. */
export function callerOf(ctx: GraphQLContext): Caller {
  if (!ctx.caller) throw AppError.unauthorized('an access token is required', 'missing');
  return ctx.caller;
}

/**
 * Per-request batching of nested fields: every `Token.user` of a response is one statement, and
 * every `User.tokens(…)` (likewise applications, roles) with the same arguments is one statement,
 * however many parents the page has. Made per request (and per transaction): a loader caches what
 * it loaded.
 */
export class Loaders {
  private readonly nested = new Map<FieldNode, DataLoader<number, unknown>>();
  private readonly byIds = new Map<RecordsById<unknown>, Map<ReadonlySet<string> | undefined, DataLoader<number, unknown>>>();

  constructor(
    private readonly services: Services,
    private readonly caller: Caller | null,
    private readonly sql: Sql,
  ) {}

  /** The users by id (`Token.user`, the `User` entities of a subgraph request). */
  get userById(): DataLoader<number, UserRecord | null> {
    return this.byId(this.services.users);
  }

  /**
   * Live records of one service by id: every id asked for in a request is one statement (the
   * service's `findMany`, which checks the caller's read permission), null for an absent or
   * deleted record. One loader per service (so per record type) and set of fields: `fields`, as
   * `selectedFields` answers them for one field of the document (the same set each time), reads
   * only those columns; without it, whole records.
   */
  byId<T extends { id: number }>(service: RecordsById<T>, fields?: ReadonlySet<string>): DataLoader<number, T | null> {
    let byFields = this.byIds.get(service);
    if (!byFields) this.byIds.set(service, (byFields = new Map()));
    let loader = byFields.get(fields);
    if (!loader) {
      loader = new DataLoader<number, T | null>(async (ids) => {
        const found = await service.findMany(this.requireCaller(), this.sql, ids, fields ? { fields } : {});
        const byId = new Map(found.map((record) => [record.id, record]));
        return ids.map((id) => byId.get(id) ?? null);
      });
      byFields.set(fields, loader);
    }
    return loader as DataLoader<number, T | null>;
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
  byField<T>(
    info: GraphQLResolveInfo,
    prepare: () => (caller: Caller, sql: Sql, parentIds: readonly number[]) => Promise<Map<number, T>>,
  ): DataLoader<number, T> {
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
}
