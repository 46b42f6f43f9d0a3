import DataLoader from 'dataloader';
import type { Caller } from '../auth/caller.js';
import type { ListInput, Page } from '../list/list.js';
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
  private readonly pages = new Map<string, DataLoader<number, Page<unknown>>>();
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
   * A per-parent page loader for one nested field, one set of list arguments and whether the
   * totals are wanted (they cost a second statement).
   */
  page<T>(
    field: 'applications' | 'roles' | 'tokens',
    input: ListInput,
    count: boolean,
    batch: (caller: Caller, parentIds: readonly number[], input: ListInput, count: boolean) => Promise<Map<number, Page<T>>>,
  ): DataLoader<number, Page<T>> {
    const key = `${field}:${count}:${JSON.stringify(input)}`;
    let loader = this.pages.get(key);
    if (!loader) {
      loader = new DataLoader<number, Page<unknown>>(async (ids) => {
        const pages = await batch(this.requireCaller(), ids, input, count);
        return ids.map((id) => pages.get(id)!);
      });
      this.pages.set(key, loader);
    }
    return loader as DataLoader<number, Page<T>>;
  }
}
