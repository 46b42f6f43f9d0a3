import type { ParameterizedContext } from 'koa';
import type { RouterContext } from '@koa/router';
import type { Caller } from '../auth/caller.js';

export interface AppState {
  requestId: string;
  /** performance.now() when the request arrived, in milliseconds (the request log and metrics time it from then). */
  started: number;
  /** The authenticated caller of an API route or a GraphQL request. */
  caller: Caller;
  /** The template of the route the request matched (`/user/:id`), set by the route itself. */
  route?: string | null;
  /** The GraphQL operation a /graphql request ran (for the request log and metrics). */
  graphql?: { name: string | null; type: string };
  /** Whether a cacheable read was answered from the read cache; unset for other requests. */
  /** What the read cache did: served the answer, found none, or stood aside (the database is being written too fast for kept answers to be reused). */
  readCache?: 'hit' | 'miss' | 'aside';
  /** Its 503 says the instance is overloaded (no database connection came free in time), not that the database is unavailable. */
  overloaded?: boolean;
}

declare module 'koa' {
  interface Request {
    /** The request's body, parsed (src/http/middleware.ts readBody); undefined until read. */
    body?: unknown;
    /** The body's text as it came (UTF-8), once read. */
    rawBody?: string;
  }
}

export type AppContext = ParameterizedContext<AppState>;
export type RouteContext = RouterContext<AppState>;

/**
 * Takes back the headers set on the answer from now on (and what the read cache noted of it): for
 * work whose answer is then not given (src/auth/checked-sql.ts).
 */
export function undoFromNow(ctx: AppContext): () => void {
  // Node's list of names (not Koa's `headers`, a copy of every value): this runs on every hinted read.
  const before = ctx.res.getHeaderNames();
  return () => {
    for (const name of ctx.res.getHeaderNames()) if (!before.includes(name)) ctx.remove(name);
    delete ctx.state.readCache;
  };
}
