import DataLoader from 'dataloader';
import type { Caller } from '../auth/caller.js';
import type { Services } from '../services.js';
import { AppError } from '../shared/errors.js';
import type { UserRecord } from '../users/user.presenter.js';

/**
 * What every resolver gets: the caller (null only while an introspection query runs without a
 * token), the request id, the shared services, and this request's DataLoaders.
 */
export interface GraphQLContext {
  caller: Caller | null;
  /** The request's X-Request-Id, carried by every error of the answer. */
  requestId: string;
  services: Services;
  loaders: Loaders;
  /** The HTTP request's state, where the operation's name and type are noted for the request log. */
  http?: { graphql?: { name: string | null; type: string } };
}

/** The caller; the HTTP layer lets a request without one through only for introspection. */
export function callerOf(ctx: GraphQLContext): Caller {
  if (!ctx.caller) throw AppError.unauthorized('an access token is required', 'Bearer');
  return ctx.caller;
}

/**
 * Per-request batching of nested fields: every `Token.user` of a response is one statement, and
 * every `User.tokens(…)` (likewise applications, roles) with the same arguments is one statement,
 * however many parents the page has.
 */
export class Loaders {
  private readonly nested = new Map<string, DataLoader<number, unknown>>();
  readonly userById: DataLoader<number, UserRecord | null>;

  constructor(private readonly services: Services, private readonly caller: Caller | null) {
    this.userById = new DataLoader(async (ids) => {
      const users = await services.users.findMany(this.requireCaller(), ids);
      const byId = new Map(users.map((u) => [u.id, u]));
      return ids.map((id) => byId.get(id) ?? null);
    });
  }

  private requireCaller(): Caller {
    if (!this.caller) throw AppError.unauthorized('an access token is required', 'Bearer');
    return this.caller;
  }

  /**
   * A per-parent loader for one nested field (a page or a connection), one set of arguments and
   * whether totals are wanted (they cost a second statement): one batch for every parent.
   */
  byParent<T, A>(
    field: string,
    args: A,
    count: boolean,
    batch: (caller: Caller, parentIds: readonly number[], args: A, count: boolean) => Promise<Map<number, T>>,
  ): DataLoader<number, T> {
    const key = `${field}:${count}:${JSON.stringify(args)}`;
    let loader = this.nested.get(key);
    if (!loader) {
      loader = new DataLoader<number, unknown>(async (ids) => {
        const found = await batch(this.requireCaller(), ids, args, count);
        return ids.map((id) => found.get(id)!);
      });
      this.nested.set(key, loader);
    }
    return loader as DataLoader<number, T>;
  }
}
