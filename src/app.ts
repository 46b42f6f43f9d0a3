import type { RequestListener } from 'node:http';
import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import { applicationRoutes } from './applications/application.routes.js';
import { auditRoutes } from './audit/audit.routes.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { AppError } from './errors.js';
import { localExplorer } from './graphql/explorer.js';
import { GRAPHQL_METHODS, type GraphQLEndpoint } from './graphql/server.js';
import type { AppState } from './http/context.js';
import { corsMiddleware } from './http/cors.js';
import { docsPage, serviceVersion } from './http/docs.js';
import { requestEdge } from './http/middleware.js';
import { openApiDocument } from './http/openapi.js';
import { mountRoutes, type Method, type RouteSpec } from './http/routes.js';
import { linkRoutes } from './links/link.routes.js';
import type { Logger } from './observability/log.js';
import type { Metrics } from './observability/metrics.js';
import { DatabaseOutage } from './observability/outage.js';
import { oauthRoutes } from './oauth/oauth.routes.js';
import type { ReadCache } from './read-cache/store.js';
import { roleRoutes } from './roles/role.routes.js';
import type { Services } from './services.js';
import { tokenRoutes } from './tokens/token.routes.js';
import { userRoutes } from './users/user.routes.js';
import { webhookRoutes } from './webhooks/webhook.routes.js';

export interface AppDeps {
  config: Pick<Config, 'basePath' | 'corsOrigins' | 'graphqlIntrospection'>;
  db: Database;
  services: Services;
  log: Logger;
  metrics: Metrics | null;
  /** The /graphql endpoint. */
  graphql: Pick<GraphQLEndpoint, 'middleware'>;
  /** Answers of cacheable reads (src/read-cache/), shared with GraphQL; null: off. */
  readCache: ReadCache | null;
  /** Whether the service is stopping (draining: /readyz answers 503 while requests are still served). */
  stopping?: () => boolean;
}

/** The REST API's route table (below BASE_PATH). */
export function apiRoutes({ services }: Pick<AppDeps, 'services'>, basePath: string): RouteSpec[] {
  return [
    ...userRoutes(services.users, basePath),
    ...tokenRoutes(services.tokens, basePath),
    ...applicationRoutes(services.applications, basePath),
    ...roleRoutes(services.roles, basePath),
    ...linkRoutes(services.links),
    ...webhookRoutes(services.webhooks, basePath),
    ...auditRoutes(services.audit),
    ...oauthRoutes(services.tokens, services.links),
  ];
}

/**
 * The Koa application, one pipeline for every request: the edge (request id, CORS, HTTP edge checks,
 * error answers, the request log and metrics); then the health probes and documents, GraphQL, and the REST
 * API (src/http/routes.ts: authentication, body, permission, read cache, handler). Returned as the
 * listener the HTTP server calls for each request.
 */
export function createApp({ config, db, services, log, metrics, graphql, readCache, stopping = () => false }: AppDeps): RequestListener {
  const app = new Koa<AppState>();
  const routers: Router<AppState>[] = [];
  app.use(
    requestEdge({
      log,
      outage: new DatabaseOutage(log),
      observe: metrics ? (ctx) => metrics.observe(ctx) : null,
      cors: config.corsOrigins ? corsMiddleware(config.corsOrigins, (path) => methodsOf(routers, path)) : null,
    }),
  );

  const health = new Router<AppState>();
  const publicRoutes: { method: Method; path: string }[] = [];
  const publicGet = (path: string, handle: Middleware<AppState>) => {
    health.get(path, handle);
    publicRoutes.push({ method: 'GET', path });
  };
  publicGet('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  publicGet('/readyz', async (ctx) => {
    if (stopping()) throw AppError.unavailable('the service is stopping');
    if (!(await db.ready())) throw AppError.unavailable('the database is unreachable or not migrated');
    ctx.body = { status: 'ready' };
  });
  if (metrics) publicGet('/metrics', metrics.endpoint);
  const api = apiRoutes({ services }, config.basePath);
  const document = openApiDocument(
    { api, public: [...publicRoutes, { method: 'GET', path: '/openapi.json' }, { method: 'GET', path: '/docs' }], basePath: config.basePath },
    { version: serviceVersion() },
  );
  publicGet('/openapi.json', (ctx) => {
    ctx.body = document;
  });
  const docs = docsPage();
  publicGet('/docs', docs.page);
  app.use(docs.assets);
  // The local GraphQL explorer goes with introspection (off in production unless asked for).
  if (config.graphqlIntrospection) app.use(localExplorer());
  app.use(health.routes());
  app.use(health.allowedMethods());

  // GraphQL reads, authenticates (introspection needs no token) and answers errors on its own.
  const graphQL = new Router<AppState>();
  graphQL.all('/graphql', graphql.middleware);
  app.use(graphQL.routes());

  const rest = mountRoutes(api, { db, readCache }, config.basePath);
  app.use(rest.routes());
  app.use(rest.allowedMethods());
  routers.push(health, rest);
  // What goes wrong after an answer has started (a client gone in the middle of an event stream:
  // EPIPE) has no one left to answer: noted at debug level, instead of Koa's print to stderr.
  app.on('error', (err: Error & { code?: string }) => log.debug('connection failed after its answer began', { error: err.code ?? err.name }));
  // Koa 3: the callback is taken once every middleware is in place.
  return app.callback() as RequestListener;
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
