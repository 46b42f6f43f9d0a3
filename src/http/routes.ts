import type { Middleware } from 'koa';
import { authorizationOf, callerOf, clientOf, tokenHashes, type Credential } from '../auth/authenticate.js';
import { bearerOf } from '../auth/bearer.js';
import type { TokenHints } from '../auth/checked-sql.js';
import { requirePermission, type Caller, type Permission } from '../auth/caller.js';
import type { Sql } from '../db/sql.js';
import type { Database } from '../db/database.js';
import { cachedRead } from './cached-read.js';
import type { ReadCache } from '../read-cache/store.js';
import { undoFromNow, type AppContext, type AppState, type RouteContext } from './context.js';
import { bodyless, readBody, type BodyKind } from './middleware.js';
import type { Schema } from './openapi-schemas.js';

/**
 * The REST API as a table of routes. Each route says what it needs, and the one pipeline below
 * gives it that in the same order on every route (as Outline's routes: authenticate, validate,
 * handle, present):
 *
 * 1. the route's template noted (request log, metrics);
 * 2. the body read in full (JSON, or forms where `body: 'form'`), its problems kept for step 4, so
 *    that the token is looked up only once the whole request has arrived;
 * 3. the bearer token checked (401), which for a cacheable route also reads the snapshot the read
 *    cache keys answers by; a request whose token this instance has seen checks it in its first
 *    statement instead (a write only commits if the token is live and as it was seen), and is
 *    answered only once that check found the token as it was seen (src/auth/checked-sql.ts);
 * 4. the body's problems (413, 415, 400);
 * 5. the permission the route declares (403), before its input is parsed (so 403 wins over 400);
 * 6. the read cache, for routes declared `cacheable`;
 * 7. the handler: it parses its input (400), calls a service function and presents the result.
 *
 * The same table feeds the OpenAPI document (src/http/openapi.ts) and the preflight's methods.
 */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** An OpenAPI tag: the resource a route belongs to (Swagger UI and generated clients group operations by it). */
export interface ApiTag {
  name: string;
  description: string;
}

/**
 * What the OpenAPI document (src/http/openapi.ts) says of a route, kept with the route so that the
 * two change together: its tag, summary and description, and its operation (parameters, request
 * body, answers), whose schemas are derived from the resource definitions
 * (src/http/openapi-schemas.ts).
 */
export interface RouteDocs {
  tag: ApiTag;
  /** One line: what the operation does (OpenAPI `summary`). */
  summary: string;
  /** What a caller needs to know beyond it: rules, effects, refusals, the permission (CommonMark). */
  description: string;
  /**
   * The seed and docs/rest.md write this path with a trailing slash (a collection such as `/user/`,
   * `/apply/user/id/`, `/user/{id}/status/`): the document names it so, for the clients generated
   * from it. The service answers either form.
   */
  trailingSlash?: boolean;
  /** The OpenAPI operation's `parameters`, `requestBody` and `responses` (a 401 is added to every API route's). */
  operation: Schema;
  /** The schemas the operation refers to (`#/components/schemas/<name>`), by name; those of src/http/openapi.ts need not be repeated. */
  schemas?: Record<string, Schema>;
}

/** A route as the OpenAPI document needs it. */
export type DocumentedRoute = Pick<RouteSpec, 'method' | 'path' | 'docs'>;

export interface RouteSpec {
  method: Method;
  /** Below BASE_PATH, without a trailing slash: `/user/:id`. */
  path: string;
  /** The permission the route needs beyond a valid token (checked before its input is parsed). */
  permission?: Permission;
  /** The bodies it reads: JSON (the default) or JSON and forms. */
  body?: BodyKind;
  /** Its answers may be served from the read cache (only reads whose answer depends on nothing but the data and the caller's scopes). */
  cacheable?: boolean;
  /** Its tag, summary and description in the OpenAPI document. */
  docs: RouteDocs;
  /**
   * Parses, calls a service function and presents. `sql` is where its statements run: for a GET,
   * the read path (a replica that has replayed everything committed before the request, else the
   * primary: src/db/replicas.ts); for a write, the primary.
   */
  handle(ctx: RouteContext, caller: Caller, sql: Sql): Promise<void>;
}

/** What the routes' pipeline needs. */
export interface RouteDeps {
  db: Pick<Database, 'sql' | 'keyring' | 'readerFor' | 'readFloors'>;
  readCache: ReadCache | null;
  /** What the instance's token checks found (src/auth/checked-sql.ts). */
  tokenHints: TokenHints;
}

/** Where routes are registered (the app's routers by segment: src/http/segment-router.ts). */
export interface RouteTarget {
  register(template: string, methods: string[], middleware: Middleware<AppState>[]): void;
}

/**
 * Registers a route table on `router` (the app's routers: src/app.ts), each route below `prefix`
 * (BASE_PATH) and behind the pipeline above.
 */
export function mountRoutes(routes: readonly RouteSpec[], deps: RouteDeps, prefix: string, router: RouteTarget): void {
  const cache = deps.readCache ? cachedRead(deps.readCache) : null;
  const hints = deps.tokenHints;
  for (const route of routes) {
    const template = `${prefix}${route.path}`;
    // Only a GET the read cache may serve needs the snapshot its answers are kept under.
    const store = route.cacheable ? deps.readCache : null;
    const reads = route.method === 'GET';
    const handler = (ctx: RouteContext, sql?: Sql) => route.handle(ctx, ctx.state.caller, sql ?? (reads ? deps.db.readerFor(ctx.state.caller) : deps.db.sql));
    // The read cache, then the handler (called here rather than as Koa middleware: a request whose token hint was stale runs it again).
    const serve = store && cache ? (ctx: AppContext) => cache(ctx, () => handler(ctx as RouteContext)) : (ctx: AppContext) => handler(ctx as RouteContext);
    /** The request as it always ran: the token looked up by itself (with the snapshot or read floor asked for), then the route. */
    const checkedFirst = async (
      ctx: AppContext,
      credential: Credential,
      hashes: Buffer[] | null,
      wantsSnapshot: boolean,
      bodyProblem: { err: unknown } | null,
    ) => {
      ctx.state.caller = callerOf(await hints.lookUp(hashes, wantsSnapshot), credential);
      if (bodyProblem) throw bodyProblem.err;
      if (route.permission) requirePermission(ctx.state.caller, route.permission);
      await serve(ctx);
    };
    const pipeline = async (ctx: AppContext) => {
      ctx.state.route = template;
      const header = authorizationOf(ctx.req);
      // Without a credential there is nothing to wait for: the 401 comes at once.
      const bodyProblem =
        header === undefined || bodyless(ctx)
          ? null
          : await readBody(ctx, route.body ?? 'json').then(
              () => null,
              (err: unknown) => ({ err }),
            );
      const credential = { authorization: header, client: clientOf(ctx.req.headers), requestId: ctx.state.requestId };
      const hashes = tokenHashes(deps.db.keyring, bearerOf(header));
      // Asked once per request: while the read cache stands aside, it samples the requests that read the snapshot.
      const wantsSnapshot = reads && store !== null && store.wantsSnapshot();
      // A request whose token was seen before checks it in its first statement (src/auth/checked-sql.ts).
      const checked = bodyProblem ? null : hints.checkedFor(hashes, wantsSnapshot);
      if (checked) {
        if (!reads) checked.mayWrite();
        // Nothing is answered before the check passed (CheckedSql.answer); when the token changed, the route runs again, nothing written.
        const answered = await checked.answer(async () => {
          ctx.state.caller = callerOf(checked.hint, credential);
          if (route.permission) requirePermission(ctx.state.caller, route.permission);
          if (store) ctx.state.readCache = 'aside'; // the store wanted no snapshot: it stands aside
          await handler(ctx as RouteContext, checked);
        }, undoFromNow(ctx));
        // The token changed: looked up afresh (it was live, the body fine, the snapshot not wanted).
        if (!answered) await checkedFirst(ctx, credential, hashes, false, null);
        return;
      }
      await checkedFirst(ctx, credential, hashes, wantsSnapshot, bodyProblem);
    };
    router.register(template, [route.method], [pipeline] as never);
  }
}
