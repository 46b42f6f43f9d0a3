import type { RequestListener } from 'node:http';
import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import { applicationRoutes } from './applications/application.routes.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { AppState } from './http/context.js';
import { corsMiddleware } from './http/cors.js';
import { docsPage, serviceVersion } from './http/docs.js';
import { openApiDocument } from './http/openapi.js';
import { oauthRoutes } from './oauth/oauth.routes.js';
import { auditRoutes } from './audit/audit.routes.js';
import { localExplorer } from './graphql/explorer.js';
import { createMetrics } from './observability/metrics.js';
import { GRAPHQL_METHODS, type GraphQLEndpoint } from './graphql/server.js';
import { errorHandler } from './http/errors.js';
import { accessLog, answerOptions, type RouteTemplates, jsonBody, requestId, requireCaller, requireOneHost, trimTrailingSlash } from './http/middleware.js';
import type { ReadCache } from './db/read-cache.js';
import { restReadCache } from './http/rest-cache.js';
import { answerCachedReadsFirst } from './http/front-cache.js';
import { DatabaseOutage } from './observability/outage.js';
import { linkRoutes } from './links/link.routes.js';
import { roleRoutes } from './roles/role.routes.js';
import type { Services } from './services.js';
import { AppError } from './shared/errors.js';
import type { Logger } from './shared/log.js';
import { tokenRoutes } from './tokens/token.routes.js';
import { userRoutes } from './users/user.routes.js';

export interface AppDeps {
  config: Pick<Config, 'basePath' | 'corsOrigins' | 'metrics' | 'graphqlIntrospection'>;
  db: Database;
  services: Services;
  log: Logger;
  /** The /graphql endpoint, and which query texts' answers it keeps (for the early answers). */
  graphql: Pick<GraphQLEndpoint, 'middleware' | 'knownCacheable'>;
  /** Answers of directory reads (src/db/read-cache.ts), shared with GraphQL; null: off. */
  readCache?: ReadCache | null;
}

/**
 * The Koa application (cross-cutting middleware, health probes, GraphQL, then the REST API), as the
 * listener the HTTP server calls for each request: read-cache hits answered first, then Koa.
 */
export function createApp({ config, db, services, log, graphql, readCache }: AppDeps): RequestListener {
  const app = new Koa<AppState>();
  const routers: Router<AppState>[] = [];
  // Read-cache hits (REST and GraphQL) are answered before this chain (src/http/front-cache.ts, at
  // the end), for requests that pass its checks unchanged: a check added here, before the read
  // caches, must be added there too.
  app.use(requestId);
  const metrics = config.metrics ? createMetrics(db) : null;
  if (metrics) app.use(metrics.middleware);
  if (config.corsOrigins) app.use(corsMiddleware(config.corsOrigins, (path) => methodsOf(routers, path)));
  const outage = new DatabaseOutage(log);
  app.use(accessLog(log, outage));
  app.use(errorHandler(log));
  app.use(requireOneHost);
  app.use(trimTrailingSlash);
  app.use(answerOptions);

  const health = new Router<AppState>();
  health.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  health.get('/readyz', async (ctx) => {
    if (!(await db.ready())) throw new AppError('UNAVAILABLE', 'the database is unreachable or not migrated');
    ctx.body = { status: 'ready' };
  });
  if (metrics) health.get('/metrics', metrics.endpoint);
  // The REST API described (built once, on first request, from the routers as they stand) and rendered.
  let document: unknown; // built at the end of createApp, once every route is in place
  health.get('/openapi.json', (ctx) => {
    ctx.body = document;
  });
  const docs = docsPage();
  health.get('/docs', docs.page);
  app.use(docs.assets);
  // The local GraphQL explorer goes with introspection (off in production unless asked for).
  if (config.graphqlIntrospection) app.use(localExplorer());
  app.use(health.routes());
  app.use(health.allowedMethods());

  // GraphQL reads, authenticates (introspection needs no token) and answers errors on its own.
  const graphQL = new Router<AppState>();
  graphQL.all('/graphql', graphql.middleware);
  app.use(graphQL.routes());

  // Every API route: authenticate, then read the JSON body, then the route's handler. Router-level
  // middleware runs only for a matched route, so unknown paths answer 404 and wrong methods 405.
  const api: Router<AppState> = new Router<AppState>({ prefix: config.basePath || undefined });
  api.use(requireCaller(db));
  api.use(jsonBody);
  // Directory reads answered before, under the directory version this request's token lookup read.
  if (readCache) api.use(restReadCache(readCache, config.basePath));
  for (const routes of [
    userRoutes(services.users, config.basePath),
    tokenRoutes(services.tokens, config.basePath),
    applicationRoutes(services.applications, config.basePath),
    roleRoutes(services.roles, config.basePath),
    linkRoutes(services.links),
    auditRoutes(services.audit),
  ]) {
    api.use(routes.routes());
  }
  app.use(api.routes());
  app.use(api.allowedMethods());

  // The calls other services make (introspection, revocation, authorize): authenticated like the
  // API, with form bodies as well as JSON (the OAuth RFCs send forms).
  const oauth: Router<AppState> = new Router<AppState>({ prefix: config.basePath || undefined });
  oauth.use(requireCaller(db));
  oauth.use(oauthRoutes(services.tokens, services.links).routes());
  app.use(oauth.routes());
  app.use(oauth.allowedMethods());
  routers.push(health, api, oauth);
  // A route without a description stops the start here, rather than failing /openapi.json later.
  document = openApiDocument(
    [{ router: health, prefix: '' }, { router: api, prefix: config.basePath }, { router: oauth, prefix: config.basePath }],
    { version: serviceVersion() },
  );
  // Where a request's route template comes from when the router could not note it (see routeOf).
  const templates = new Set(['/graphql', ...routers.flatMap((router) => router.stack.filter((layer) => layer.methods.length > 0).map((layer) => String(layer.path)))]);
  Object.assign(app.context, {
    routes: { templates, match: (path: string, method: string) => routeTemplate(routers, path, method) } satisfies RouteTemplates,
  });
  // Koa 3: the callback is taken once every middleware is in place.
  const koa = app.callback() as RequestListener;
  if (!readCache) return koa;
  return answerCachedReadsFirst(
    { db, answers: readCache, graphqlCacheable: graphql.knownCacheable, basePath: config.basePath, cors: Boolean(config.corsOrigins), log, outage, metrics },
    koa,
  );
}

/** The template of the route a request matches (`/user/:id`; by path alone for a wrong method), or undefined. */
function routeTemplate(routers: Router<AppState>[], path: string, method: string): string | undefined {
  if (path === '/graphql') return path;
  let byPath: string | undefined;
  for (const router of routers) {
    const matched = router.match(path, method);
    const route = matched.pathAndMethod.filter((layer) => layer.methods.length > 0).at(-1);
    if (route) return String(route.path);
    byPath ??= matched.path.filter((layer) => layer.methods.length > 0).at(-1)?.path as string | undefined;
  }
  return byPath;
}

/** The methods the routers serve on a path (with or without its trailing slash), OPTIONS included. */
function methodsOf(routers: Router<AppState>[], rawPath: string): string[] {
  const path = rawPath.length > 1 ? rawPath.replace(/\/+$/, '') || '/' : rawPath;
  if (path === '/graphql') return [...GRAPHQL_METHODS, 'OPTIONS'];
  if (path === '/graphiql' || path === '/docs' || path.startsWith('/graphiql/') || path.startsWith('/docs/')) return ['GET', 'HEAD', 'OPTIONS'];
  const methods = new Set<string>();
  for (const router of routers) {
    for (const layer of router.match(path, 'GET').path) for (const method of layer.methods) methods.add(method);
  }
  return methods.size ? [...methods, 'OPTIONS'] : [];
}
