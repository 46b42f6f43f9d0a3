import Router, { type RouterMiddleware } from '@koa/router';
import type { Middleware } from 'koa';
import type { AppState } from './context.js';

/**
 * The app's routes as one @koa/router per path segment below the base path (`user`, `token`,
 * `healthz`, …), and a dispatch that hands each request to the router of its segment only.
 * @koa/router matches a request against every route it holds, one regular expression each, and
 * the service holds 60: one router for all of them spent ~4 µs a request on this before choosing
 * a route (a `GET /user/{id}` against 17 routes of `user`: ~1.4 µs; docs/benchmarks.md). Each
 * router is used as it is meant to be (`routes()`, then `allowedMethods()`), so every answer it
 * makes (its matches, 404s, 405s with `Allow`, 501s, `ctx.matched`) is the one a single router
 * makes: no two routes of different segments can match the same path. Hand-written because it is a
 * Map in front of the routers; a package router with a radix tree would change the matching rules
 * the routes are written in.
 */
export class SegmentRouter {
  private readonly routers = new Map<string, Router<AppState>>();
  /** Answers a path of no known segment as a router of no route does (its 404, or a 501 for a method it does not know). */
  private readonly none = new Router<AppState>();
  /** How many segments of a path the base path takes: the segment after them picks the router. */
  private readonly skip: number;

  constructor(basePath: string) {
    this.skip = basePath.split('/').filter(Boolean).length;
  }

  /**
   * The segment that picks the router of a path (`/user/12/role` → `user`), in lower case (routes
   * match whatever their letters' case). A path below the base path is keyed by its segments up to
   * that one; one outside it (a probe at the root) by its first, so they never meet.
   */
  private keyOf(path: string): string {
    // The text after the path's first slash up to the slash that ends the picking segment, found
    // by indexOf: split, slice and join made three arrays and a string on every request.
    const start = path.indexOf('/');
    if (start === -1) return '';
    let end = start;
    for (let segment = 0; segment <= this.skip && end !== path.length; segment++) {
      end = path.indexOf('/', end + 1);
      if (end === -1) end = path.length;
    }
    return path.slice(start + 1, end).toLowerCase();
  }

  /** The router of a route's template; a template whose picking segments hold a parameter cannot be routed by segment. */
  private routerOf(template: string): Router<AppState> {
    const key = this.keyOf(template);
    // path-to-regexp's syntax (a parameter, a wildcard, an optional group, reserved characters)
    // where the router is chosen: such a template could match paths of other segments.
    if (/[:*?(){}[\]+!\\]/.test(key)) throw new Error(`route ${template}: a parameter where the router is chosen`);
    let router = this.routers.get(key);
    if (!router) this.routers.set(key, (router = new Router<AppState>()));
    return router;
  }

  register(template: string, methods: string[], middleware: Middleware<AppState>[]): void {
    this.routerOf(template).register(template, methods, middleware as RouterMiddleware<AppState>[]);
  }

  get(template: string, middleware: Middleware<AppState>): void {
    this.routerOf(template).get(template, middleware as RouterMiddleware<AppState>);
  }

  /** The routes on a path for `method` (and those on it of other methods), as the one router would list them. */
  match(path: string, method: string): ReturnType<Router<AppState>['match']> {
    return (this.routers.get(this.keyOf(path)) ?? this.none).match(path, method);
  }

  /** The routes and their allowed methods, each request through its segment's router. Taken once every route is registered. */
  middleware(): Middleware<AppState> {
    // As app.use(router.routes()) then app.use(router.allowedMethods()) would chain them.
    const served = (router: Router<AppState>): Middleware<AppState> => {
      const routes = router.routes() as unknown as Middleware<AppState>;
      const allowed = router.allowedMethods() as unknown as Middleware<AppState>;
      return (ctx, next) => routes(ctx, () => allowed(ctx, next));
    };
    const bySegment = new Map([...this.routers].map(([key, router]) => [key, served(router)]));
    const none = served(this.none);
    return (ctx, next) => (bySegment.get(this.keyOf(ctx.path)) ?? none)(ctx, next);
  }
}
