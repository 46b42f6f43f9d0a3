import type { ParameterizedContext } from 'koa';
import type { RouterContext } from '@koa/router';
import type { Caller } from '../auth/caller.js';

export interface AppState {
  requestId: string;
  /** Set by the authenticate middleware on every API route. */
  caller: Caller;
  /** The route template the request matched (`/user/:id`; null: none), once routeOf found it. */
  route?: string | null;
  /** The GraphQL operation a /graphql request ran (for the request log and metrics). */
  graphql?: { name: string | null; type: string };
  /** Whether a cacheable read was answered from the read cache (src/db/read-cache.ts); unset for others. */
  readCache?: 'hit' | 'miss';
}

export type AppContext = ParameterizedContext<AppState>;
export type RouteContext = RouterContext<AppState>;
