import type { TokenHints } from './auth/checked-sql.js';
import type { RequestListener } from 'node:http';
import Koa, { type Middleware } from 'koa';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { AppError } from './errors.js';
import { localExplorer } from './graphql/explorer.js';
import { GRAPHQL_METHODS, type GraphQLEndpoint } from './graphql/server.js';
import type { AppState } from './http/context.js';
import { corsMiddleware } from './http/cors.js';
import { docsPage, servicePackage } from './http/docs.js';
import { requestEdge } from './http/middleware.js';
import { SegmentRouter } from './http/segment-router.js';
import type { Metrics } from './http/metrics.js';
import { openApiDocument } from './http/openapi.js';
import { json } from './http/openapi-schemas.js';
import { mountRoutes, type ApiTag, type DocumentedRoute, type RouteSpec } from './http/routes.js';
import type { AnyModule } from './module/module.js';
import { apiRoutes as routesOf } from './module/registry.js';
import { MODULES } from './modules.js';
import type { Logger } from './observability/log.js';
import type { ReadCache } from './read-cache/store.js';
import type { Services } from './services.js';

export interface AppDeps {
  config: Pick<Config, 'basePath' | 'corsOrigins' | 'graphqlIntrospection'>;
  db: Database;
  services: Services;
  /** The modules the services were made of (src/modules.ts). */
  modules: readonly AnyModule[];
  log: Logger;
  metrics: Metrics | null;
  /** The /graphql endpoint. */
  graphql: Pick<GraphQLEndpoint, 'middleware'>;
  /** Answers of cacheable reads (src/read-cache/), shared with GraphQL; null: off. */
  readCache: ReadCache | null;
  /** What the instance's token checks found (src/auth/checked-sql.ts), shared with GraphQL. */
  tokenHints: TokenHints;
  /** Whether the service is stopping (draining: /readyz answers 503 while requests are still served). */
  stopping?: () => boolean;
}

/** The REST API's route table (below BASE_PATH): the modules' routes, in list order. */
export function apiRoutes({ services, modules = MODULES }: Pick<AppDeps, 'services'> & Partial<Pick<AppDeps, 'modules'>>, basePath: string): RouteSpec[] {
  return routesOf(modules, services, basePath);
}

const SERVICE_TAG: ApiTag = {
  name: 'service',
  description: 'Health probes, metrics and this document: at the root (never below BASE_PATH), without a token.',
};

/** What the probes and documents answer from. */
interface PublicDeps {
  ready: () => Promise<boolean>;
  stopping: () => boolean;
  metrics: Metrics | null;
  document: unknown;
  docsPage: Middleware<AppState>;
}

/** A probe or document: served at the root (never below BASE_PATH), without a token. */
interface PublicRoute extends DocumentedRoute {
  /** Served only with this setting on. */
  onlyWith?: 'metrics';
  serve(deps: PublicDeps): Middleware<AppState>;
}

const PUBLIC_ROUTES: readonly PublicRoute[] = [
  {
    method: 'GET',
    path: '/healthz',
    docs: {
      tag: SERVICE_TAG,
      summary: 'Liveness',
      description: 'Answers `{"status":"ok"}` while the process serves requests, whatever the database does.',
      operation: { responses: { 200: { description: '{"status":"ok"}', content: json({ type: 'object' }) } } },
    },
    serve: () => (ctx) => {
      ctx.body = { status: 'ok' };
    },
  },
  {
    method: 'GET',
    path: '/readyz',
    docs: {
      tag: SERVICE_TAG,
      summary: 'Readiness',
      description:
        'Answers `{"status":"ready"}` when the database answers and every migration has run; 503 otherwise, and while the service ' +
        'drains before a stop (SHUTDOWN_DRAIN_MS).',
      operation: { responses: { 200: { description: '{"status":"ready"}', content: json({ type: 'object' }) }, 503: { $ref: '#/components/responses/E503' } } },
    },
    serve:
      ({ ready, stopping }) =>
      async (ctx) => {
        if (stopping()) throw AppError.unavailable('the service is stopping');
        if (!(await ready())) throw AppError.unavailable('the database is unreachable or not migrated');
        ctx.body = { status: 'ready' };
      },
  },
  {
    method: 'GET',
    path: '/metrics',
    onlyWith: 'metrics',
    docs: {
      tag: SERVICE_TAG,
      summary: 'Prometheus metrics',
      description: 'Requests by method, route and status, GraphQL operations, the database pool, subscriptions and the process (METRICS=false turns it off).',
      operation: { responses: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } } } },
    },
    serve: ({ metrics }) => metrics!.endpoint,
  },
  {
    method: 'GET',
    path: '/openapi.json',
    docs: {
      tag: SERVICE_TAG,
      summary: 'This document',
      description: 'The OpenAPI 3.1 document of the REST API, built from the route table and the resource definitions.',
      operation: { responses: { 200: { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } } },
    },
    serve:
      ({ document }) =>
      (ctx) => {
        ctx.body = document;
      },
  },
  {
    method: 'GET',
    path: '/docs',
    docs: {
      tag: SERVICE_TAG,
      summary: 'This document, rendered',
      description: 'An HTML reference rendered from `/openapi.json` by Swagger UI, served by the service itself (no CDN).',
      operation: { responses: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } } },
    },
    serve: ({ docsPage }) => docsPage,
  },
];

/** The probes and documents a service with these settings serves. */
const publicRoutes = (config: Pick<Config, 'metrics'>) => PUBLIC_ROUTES.filter((route) => route.onlyWith !== 'metrics' || config.metrics);

/**
 * The OpenAPI document of a service with these settings: `/openapi.json`, and `npm run openapi`,
 * which builds it without a database (the route tables only hold their services' functions).
 */
export function serviceDocument(
  config: Pick<Config, 'basePath' | 'metrics'>,
  services: Services,
  modules: readonly AnyModule[] = MODULES,
): Record<string, unknown> {
  return openApiDocument({ api: apiRoutes({ services, modules }, config.basePath), public: publicRoutes(config), basePath: config.basePath }, servicePackage());
}

/**
 * The Koa application, one pipeline for every request: the edge (request id, CORS, HTTP edge checks,
 * error answers, the request log and metrics); then the health probes and documents, GraphQL, and the REST
 * API (src/http/routes.ts: authentication, body, permission, read cache, handler). Returned as the
 * listener the HTTP server calls for each request.
 */
export function createApp({ config, db, services, modules, log, metrics, graphql, readCache, tokenHints, stopping = () => false }: AppDeps): RequestListener {
  const app = new Koa<AppState>();
  // The routes of every path but /graphql (the probes and documents, the API below BASE_PATH): one
  // router per segment, each request matched by its segment's only (src/http/segment-router.ts).
  const router = new SegmentRouter(config.basePath);
  app.use(
    requestEdge({
      log,
      outage: db.outage,
      observe: metrics ? (ctx, ms) => metrics.observe(ctx, ms) : null,
      cors: config.corsOrigins ? corsMiddleware(config.corsOrigins, (path) => methodsOf(router, path)) : null,
    }),
  );

  const docs = docsPage();
  const served = publicRoutes({ metrics: metrics !== null });
  const routes = apiRoutes({ services, modules }, config.basePath);
  const document = openApiDocument({ api: routes, public: served, basePath: config.basePath }, servicePackage());
  const deps: PublicDeps = { ready: () => db.ready(), stopping, metrics, document, docsPage: docs.page };
  app.use(docs.assets);
  // The local GraphQL explorer goes with introspection (off in production unless asked for).
  if (config.graphqlIntrospection) app.use(localExplorer());

  for (const route of served) router.get(route.path, route.serve(deps));
  // GraphQL reads, authenticates (introspection needs no token), answers every method and its
  // errors on its own. It is one path, taken before the router (whose paths never overlap it, and
  // match whatever their letters' case, as this does; the edge has cut a trailing slash): the
  // router matches a path against every route it holds, a measurable share of a GraphQL request.
  app.use((ctx, next) => (isGraphQLPath(ctx.path) ? graphql.middleware(ctx, next) : next()));
  mountRoutes(routes, { db, readCache, tokenHints }, config.basePath, router);
  app.use(router.middleware());
  // What goes wrong after an answer has started (a client gone in the middle of an event stream:
  // EPIPE) has no one left to answer: noted at debug level, instead of Koa's print to stderr.
  app.on('error', (err: Error & { code?: string }) => log.debug('connection failed after its answer began', { error: err.code ?? err.name }));
  // Koa 3: the callback is taken once every middleware is in place.
  return app.callback() as RequestListener;
}

/** GraphQL's one path, whatever its letters' case (as the router matches its own paths). */
const isGraphQLPath = (path: string) => path.toLowerCase() === '/graphql';

/** The methods the routers serve on a path (with or without its trailing slash), OPTIONS included. */
function methodsOf(router: SegmentRouter, rawPath: string): string[] {
  const path = rawPath.length > 1 ? rawPath.replace(/\/+$/, '') || '/' : rawPath;
  if (isGraphQLPath(path)) return [...GRAPHQL_METHODS, 'OPTIONS'];
  if (path === '/graphiql' || path === '/docs' || path.startsWith('/graphiql/') || path.startsWith('/docs/')) return ['GET', 'HEAD', 'OPTIONS'];
  const methods = new Set<string>();
  for (const layer of router.match(path, 'GET').path) for (const method of layer.methods) methods.add(method);
  return methods.size ? [...methods, 'OPTIONS'] : [];
}
