import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTrace } from '@apollo/server/plugin/inlineTrace';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { koaMiddleware } from '@as-integrations/koa';
import { getOperationAST, Kind, parse, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Middleware } from 'koa';
import { authenticate, authorizationOf, clientOf } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import { AppError } from '../errors.js';
import type { AppContext, AppState } from '../http/context.js';
import { errorHeaders, failureOf, methodNotAllowed, STATUS_OF } from '../http/errors.js';
import { readBody } from '../http/middleware.js';
import type { Logger } from '../observability/log.js';
import type { ReadCache } from '../read-cache/store.js';
import { GraphQLReadCache } from './cached-read.js';
import { Loaders, type GraphQLContext, type ServiceContainer as Services } from './context.js';
import { errorsPlugin, formatError, httpErrorBody } from './errors.js';
import { executorGateway } from './executor.js';
import { DocumentStore } from './document-store.js';
import { sandboxWithFallback } from './explorer.js';
import { costLimitPlugin, documentNesting, GRAPHQL_LIMITS, sizeLimitRule, valueNesting } from './limits.js';
import { operationPlugin } from './operation.js';

/** What /graphql serves (OPTIONS aside): queries over GET (and HEAD), everything over POST. */
export const GRAPHQL_METHODS = ['GET', 'HEAD', 'POST'];

/** A request's GraphQL parameters: the JSON body of a POST, the query string of a GET. */
const paramsOf = (ctx: AppContext) => (ctx.method === 'POST' ? ctx.request.body : ctx.query) as Record<string, unknown>;

/**
 * Whether a request may run without a token: only the Sandbox page (a GET without an operation)
 * and a query (the operation Apollo will run, found as it finds it) that asks for nothing but
 * introspection meta-fields (__schema, __type, __typename) or, in a subgraph, its SDL
 * (`_service`: what introspection tells, in the form routers read), and only where introspection is on.
 */
function runsWithoutToken(ctx: AppContext, federation: boolean): boolean {
  const params = paramsOf(ctx);
  if (ctx.method !== 'POST' && params.query === undefined && params.extensions === undefined) return true;
  if (typeof params.query !== 'string') return false;
  let operation: OperationDefinitionNode | null | undefined;
  try {
    const name = typeof params.operationName === 'string' ? params.operationName : undefined;
    operation = getOperationAST(parse(params.query, { maxTokens: GRAPHQL_LIMITS.maxTokens }), name);
  } catch {
    return false;
  }
  const schemaOnly = (name: string) => name.startsWith('__') || (federation && name === '_service');
  return operation?.operation === 'query' && operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && schemaOnly(s.name.value));
}

/**
 * A document or variables nested deeper than GRAPHQL_LIMITS.maxNesting, refused before graphql-js
 * walks them recursively (thousands of levels would overflow its stack: a 500).
 */
function nestingProblem(ctx: AppContext): { code: string; message: string } | null {
  const params = paramsOf(ctx);
  const { maxNesting } = GRAPHQL_LIMITS;
  if (typeof params.query === 'string') {
    const depth = documentNesting(params.query);
    if (depth > maxNesting) {
      return {
        code: 'GRAPHQL_PARSE_FAILED',
        message: `the document nests braces, brackets or parentheses ${depth} levels deep; at most ${maxNesting} are allowed`,
      };
    }
  }
  let variables = params.variables;
  if (typeof variables === 'string') {
    try {
      variables = JSON.parse(variables);
    } catch {
      return null; // Apollo answers variables that are not JSON
    }
  }
  // The variables object itself is one level: its values may nest maxNesting more.
  if (valueNesting(variables, maxNesting + 1) > maxNesting + 1) {
    return { code: 'BAD_USER_INPUT', message: `the variables are nested more than ${maxNesting} levels deep` };
  }
  return null;
}

/**
 * Apollo answers some requests before any plugin sees them (variables that are not JSON, a batch,
 * a mutation over GET): their errors get the request id as well, and a 405 or a 415 the code its
 * status means.
 */
function completeEarlyErrors(ctx: AppContext): void {
  if (ctx.status < 400 || typeof ctx.body !== 'string') return;
  let body: { errors?: { extensions?: Record<string, unknown> }[] };
  try {
    body = JSON.parse(ctx.body);
  } catch {
    return;
  }
  if (!Array.isArray(body?.errors)) return;
  for (const error of body.errors) {
    const code = ctx.status === 405 ? 'METHOD_NOT_ALLOWED' : ctx.status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : undefined;
    error.extensions = { ...error.extensions, ...(code ? { code } : {}), requestId: ctx.state.requestId };
  }
  ctx.body = JSON.stringify(body);
}

/**
 * Apollo's own log lines go to the service log. Only Apollo's words are kept ("Unexpected error
 * processing request"): what follows them is an error's message, which may quote request values.
 */
function apolloLogger(log: Logger) {
  const line = (message: unknown) => `apollo: ${String(message).split(':')[0]}`;
  return {
    debug: (message?: unknown) => log.debug(line(message)),
    info: (message?: unknown) => log.info(line(message)),
    warn: (message?: unknown) => log.warn(line(message)),
    error: (message?: unknown) => log.error(line(message)),
  };
}

/**
 * Subscriptions over Server-Sent Events on /graphql (src/realtime/sse.ts serves them; declared here
 * so that graphql/ does not import realtime/, which imports graphql/).
 */
export interface SseEndpoint {
  /** Whether a request asks for an event stream (graphql-sse's distinct connections mode). */
  wants(ctx: AppContext): boolean;
  /** Runs a subscription for an authenticated request. */
  serve(ctx: AppContext, caller: Caller): Promise<void>;
}

export interface GraphQLEndpoint {
  middleware: Middleware<AppState>;
  stop(): Promise<void>;
}

/**
 * Apollo Server on the shared services, behind one Koa middleware for /graphql that reads the
 * request (GET, HEAD or POST with a JSON object), authenticates it (HTTP 401 before GraphQL runs,
 * so that a caller without a token learns nothing of the schema), serves cacheable answers, and
 * answers every failure in GraphQL's shape. Sandbox (the landing page of GET /graphql) and
 * introspection go together: on outside production, off in production unless GRAPHQL_INTROSPECTION=true.
 */
// eslint-disable-next-line max-lines-per-function -- 130 lines: issue 33's point 4 (the one GraphQL gate) rewrites this function
export async function createGraphQL(deps: {
  /** The modules' schema (src/module/registry.ts), as a subgraph with `federation`. */
  schema: GraphQLSchema;
  db: Database;
  services: Services;
  log: Logger;
  introspection: boolean;
  /** Answers of cacheable reads (src/read-cache/), shared with REST; null: off. */
  readCache: ReadCache | null;
  /** Subscriptions over Server-Sent Events (src/realtime/sse.ts). */
  sse?: SseEndpoint;
  /** GRAPHQL_FEDERATION: serve the schema as an Apollo Federation 2 subgraph (src/graphql/federation.ts). */
  federation?: boolean;
}): Promise<GraphQLEndpoint> {
  const { schema, db, services, log, introspection } = deps;
  const federation = deps.federation ?? false;
  const answers = deps.readCache ? new GraphQLReadCache(schema, deps.readCache) : null;
  const apollo = new ApolloServer<GraphQLContext>({
    gateway: executorGateway({ schema, sql: db.sql, log, traces: federation }),
    logger: apolloLogger(log),
    introspection,
    // Without introspection, "Did you mean …?" hints would spell the schema out all the same.
    hideSchemaDetailsFromClientErrors: !introspection,
    allowBatchedHttpRequests: false,
    persistedQueries: false, // every operation comes in full
    documentStore: new DocumentStore(),
    parseOptions: { maxTokens: GRAPHQL_LIMITS.maxTokens },
    stopOnTerminationSignals: false, // the server owns the graceful stop (server, then Apollo, then the pool)
    // Apollo's CSRF prevention refuses a GET without a preflight-forcing header, which guards
    // cookie-authenticated APIs against cross-site requests. This one authenticates by bearer
    // header only, which a cross-site page cannot make a browser send, so it guarded nothing and
    // broke every client that queries over GET (urql's default). Mutations stay POST-only.
    csrfPrevention: false,
    includeStacktraceInErrorResponses: false,
    validationRules: [sizeLimitRule],
    formatError,
    plugins: [
      introspection ? sandboxWithFallback() : ApolloServerPluginLandingPageDisabled(),
      operationPlugin(), // first: the plugins after it see a resolved query or mutation
      errorsPlugin(log),
      costLimitPlugin(),
      // A subgraph answers Apollo's inline trace (`extensions.ftv1`) when, and only when, the router
      // asks for it (`apollo-federation-include-trace: ftv1`): Apollo's plugin decides, per request.
      // Error messages in traces are masked (a message may quote a value the client sent).
      federation ? ApolloServerPluginInlineTrace({ includeErrors: { masked: true } }) : ApolloServerPluginInlineTraceDisabled(),
      // Apollo adds these by default: cache hints no one reads here, and reports to Apollo's cloud.
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
    ],
  });
  await apollo.start();
  const serveApollo = koaMiddleware(apollo, {
    context: async ({ ctx }): Promise<GraphQLContext> => {
      const state = ctx.state as AppState;
      // The caller the HTTP layer authenticated; none (null) for introspection without a token.
      const caller = (state.caller as Caller | undefined) ?? null;
      const reads = caller ? db.readerFor(caller) : db.sql;
      return { caller, requestId: state.requestId, services, sql: db.sql, reads, loaders: new Loaders(services, caller, db.sql), http: state };
    },
  }) as unknown as Middleware<AppState>;

  /** Reads a POST body: JSON (else 400, 413 or 415) holding an object (else 400). */
  async function readGraphQLBody(ctx: AppContext): Promise<void> {
    await readBody(ctx, 'json');
    const body: unknown = ctx.request.body;
    if (typeof body !== 'object' || body === null) {
      throw AppError.badRequest('the request body must be a JSON object such as {"query": "{ viewer { id } }"}');
    }
  }

  /**
   * The caller, or null for what may run without a token. As on REST, a missing or invalid token
   * is a 401 before anything else is said about the request (its body, its document, the schema);
   * with a credential, the body is read in full before the token is looked up (that statement also
   * reads the snapshot a cached answer is served under: a body that arrives after a write must not
   * get an answer from before it).
   */
  async function callerFor(ctx: AppContext): Promise<Caller | null> {
    const header = authorizationOf(ctx.req);
    const bodyProblem =
      header !== undefined && ctx.method === 'POST'
        ? await readGraphQLBody(ctx).then(
            () => null,
            (err: unknown) => ({ err }),
          )
        : null;
    let caller: Caller;
    try {
      caller = await authenticate(db, header, clientOf(ctx.req.headers), ctx.state.requestId, { snapshot: answers !== null, floor: db.readFloors });
    } catch (err) {
      // Only a request with no credential at all may fall back to introspection: a wrong one is
      // a 401 (Sandbox shows it), as the README's table says.
      if (!(err instanceof AppError) || err.code !== 'UNAUTHORIZED' || !introspection || header !== undefined) throw err;
      const readable =
        ctx.method !== 'POST' ||
        (await readGraphQLBody(ctx).then(
          () => true,
          () => false,
        ));
      if (readable && runsWithoutToken(ctx, federation)) return null;
      throw err;
    }
    if (bodyProblem) throw bodyProblem.err;
    return caller;
  }

  const middleware: Middleware<AppState> = async function graphQLEndpoint(ctx, next) {
    ctx.state.route = '/graphql';
    try {
      if (ctx.method === 'OPTIONS') {
        // As on every REST path: what the endpoint serves (no CORS: Sandbox is served from here).
        ctx.set('Allow', [...GRAPHQL_METHODS, 'OPTIONS'].join(', '));
        ctx.status = 204;
        return;
      }
      if (!GRAPHQL_METHODS.includes(ctx.method)) throw methodNotAllowed(ctx.method, GRAPHQL_METHODS);
      const stream = deps.sse?.wants(ctx) ? deps.sse : null;
      const caller = await callerFor(ctx);
      if (caller) ctx.state.caller = caller;
      if (stream) {
        // A subscription over Server-Sent Events: always with a token.
        if (!caller) throw AppError.unauthorized('an access token is required', 'missing');
        await stream.serve(ctx, caller);
        return;
      }
      const tooDeep = nestingProblem(ctx);
      if (tooDeep) {
        ctx.status = 400;
        ctx.body = { errors: [{ message: tooDeep.message, extensions: { code: tooDeep.code, requestId: ctx.state.requestId } }] };
        return;
      }
      const params = paramsOf(ctx);
      const raw = ctx.method === 'POST' ? (ctx.request as { rawBody?: string }).rawBody : ctx.querystring;
      const cacheKey = answers?.keyOf(ctx, caller, params.query, raw) ?? null;
      if (cacheKey && answers!.serve(ctx, caller!, cacheKey)) return;
      if (ctx.method === 'HEAD') {
        // Apollo serves GET only; Koa leaves the body out of the answer to a HEAD.
        ctx.method = 'GET';
        try {
          await serveApollo(ctx, next);
        } finally {
          ctx.method = 'HEAD';
        }
      } else {
        await serveApollo(ctx, next);
      }
      completeEarlyErrors(ctx);
      if (cacheKey) answers!.keep(ctx, caller!, cacheKey);
    } catch (err) {
      const known = failureOf(err, ctx, log);
      ctx.status = STATUS_OF[known.code];
      if (known.info.overload) ctx.state.overloaded = true;
      for (const [name, value] of Object.entries(errorHeaders(known))) ctx.set(name, value);
      ctx.body = httpErrorBody(known, ctx.state.requestId);
      // GraphQL over HTTP: a client that asks for application/graphql-response+json (Apollo Client
      // 4 does) reads a non-2xx answer of that type as GraphQL errors with their codes, where an
      // application/json one is only "Response not successful".
      if (ctx.accepts('application/json', 'application/graphql-response+json') === 'application/graphql-response+json') {
        ctx.type = 'application/graphql-response+json; charset=utf-8';
      }
    }
  };
  return { middleware, stop: () => apollo.stop() };
}
