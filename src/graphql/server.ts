import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { koaMiddleware } from '@as-integrations/koa';
import { getOperationAST, Kind, parse, type OperationDefinitionNode } from 'graphql';
import type { Middleware } from 'koa';
import { authenticate, authorizationOf, clientOf } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import type { AppContext, AppState } from '../http/context.js';
import { endShared, withSharedScope } from '../db/transaction.js';
import { failureOf } from '../http/errors.js';
import { earlyCaller, jsonBody } from '../http/middleware.js';
import type { Services } from '../services.js';
import { AppError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { Loaders, type GraphQLContext } from './context.js';
import { errorsPlugin, formatError, httpErrorBody } from './errors.js';
import { costLimitPlugin, documentNesting, GRAPHQL_LIMITS, sizeLimitRule, valueNesting } from './limits.js';
import { mutationTransactionPlugin } from './mutations.js';
import { operationPlugin } from './operation.js';
import { sandboxWithFallback } from './explorer.js';
import type { ReadCache } from '../db/read-cache.js';
import { GraphQLResponseCache } from './response-cache.js';
import { graphQLSchema } from './schema.js';

/** What /graphql serves (OPTIONS aside): queries over GET (and HEAD), everything over POST. */
export const GRAPHQL_METHODS = ['GET', 'HEAD', 'POST'];
const METHODS = GRAPHQL_METHODS;

/**
 * Whether a request may run without a token: only the Sandbox page (a GET without an operation)
 * and a query (the operation Apollo will run, found as it finds it) that asks for nothing but
 * introspection meta-fields (__schema, __type, __typename), and only where introspection is on.
 */
/** A request's GraphQL parameters: the JSON body of a POST, the query string of a GET. */
const paramsOf = (ctx: AppContext) => (ctx.method === 'POST' ? ctx.request.body : ctx.query) as Record<string, unknown>;

function runsWithoutToken(ctx: AppContext): boolean {
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
  return operation?.operation === 'query' && operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && s.name.value.startsWith('__'));
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
      return { code: 'GRAPHQL_PARSE_FAILED', message: `the document nests braces, brackets or parentheses ${depth} levels deep; at most ${maxNesting} are allowed` };
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
 * Apollo answers some requests before any plugin sees them (variables that are
 * not JSON, a batch, a mutation over GET): their errors get the request id as well, and a 405 or
 * a 415 the code its status means.
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

export interface GraphQLEndpoint {
  middleware: Middleware<AppState>;
  /** Whether a query text has been seen and found to read only the directory (its answers are kept). */
  knownCacheable(query: string): boolean;
  stop(): Promise<void>;
}

/**
 * Apollo Server on the shared services, behind one Koa middleware for /graphql that reads the
 * request (GET, HEAD or POST with a JSON object), authenticates it (HTTP 401 before GraphQL runs,
 * so that a caller without a token learns nothing of the schema), and answers every failure in
 * GraphQL's shape. Sandbox (the landing page of GET /graphql) and introspection go together: on
 * outside production, off in production unless GRAPHQL_INTROSPECTION=true.
 */
export async function createGraphQL(deps: {
  db: Database;
  services: Services;
  log: Logger;
  introspection: boolean;
  /** Answers of directory reads (src/db/read-cache.ts), shared with REST; null: off. */
  readCache?: ReadCache | null;
}): Promise<GraphQLEndpoint> {
  const { db, services, log, introspection } = deps;
  const schema = await graphQLSchema();
  const answers = deps.readCache ? new GraphQLResponseCache(schema, deps.readCache) : null;
  const apollo = new ApolloServer<GraphQLContext>({
    schema,
    logger: apolloLogger(log),
    introspection,
    // Without introspection, "Did you mean …?" hints would spell the schema out all the same.
    hideSchemaDetailsFromClientErrors: !introspection,
    allowBatchedHttpRequests: false,
    persistedQueries: false, // every operation comes in full; the server keeps no query cache
    parseOptions: { maxTokens: GRAPHQL_LIMITS.maxTokens },
    stopOnTerminationSignals: false, // run.ts owns the graceful stop (server, then Apollo, then the pool)
    // Apollo's CSRF prevention refuses a GET without a preflight-forcing header, which guards
    // cookie-authenticated APIs against cross-site requests. This one authenticates by bearer
    // header only, which a cross-site page cannot make a browser send, so it guarded nothing and
    // broke every client that queries over GET (urql's default). Mutations stay POST-only.
    csrfPrevention: false,
    includeStacktraceInErrorResponses: false,
    validationRules: [sizeLimitRule],
    formatError: formatError({ hideSchema: !introspection }),
    plugins: [
      introspection ? sandboxWithFallback() : ApolloServerPluginLandingPageDisabled(),
      operationPlugin(), // first: the plugins after it see a resolved query or mutation
      errorsPlugin(log),
      costLimitPlugin(),
      mutationTransactionPlugin(db.orm, log),
      // Apollo adds these by default. Cache control wraps every field resolver of the schema to
      // collect cache hints no one reads here (a third of a 50-user page's CPU); the other three
      // report to Apollo's cloud or serve federation, which this service does not use.
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
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
      return { caller, requestId: state.requestId, services, loaders: new Loaders(services, caller), http: state };
    },
  }) as unknown as Middleware<AppState>;

  /** Reads a POST body: JSON (else 400, 413 or 415) holding an object (else 400). */
  async function readBody(ctx: AppContext): Promise<void> {
    await jsonBody(ctx, async () => {});
    const body: unknown = ctx.request.body;
    if (typeof body !== 'object' || body === null) {
      throw AppError.badRequest('the request body must be a JSON object such as {"query": "{ viewer { id } }"}');
    }
  }

  /**
   * The caller, or null for what may run without a token. As on REST, a missing or invalid token
   * is a 401 before anything else is said about the request (its body, its document, the schema).
   */
  async function callerFor(ctx: AppContext): Promise<Caller | null> {
    const header = authorizationOf(ctx.req);
    // With a credential, the body is read in full before the token is looked up: that statement also
    // reads the directory version a cached answer is served under (response-cache.ts), and a body
    // that arrives after a write must not get an answer from before it. Its problems (400, 413, 415)
    // still come after the token's 401.
    const bodyProblem = header !== undefined && ctx.method === 'POST' ? await readBody(ctx).then(() => null, (err: unknown) => ({ err })) : null;
    let caller: Caller;
    try {
      caller = await (earlyCaller(ctx.req) ?? authenticate(db, header, clientOf(ctx.req.headers), ctx.state.requestId));
    } catch (err) {
      // Only a request with no credential at all may fall back to introspection: a wrong one is
      // a 401 (Sandbox shows it), as the README's table says.
      if (!(err instanceof AppError) || err.error !== 'UNAUTHORIZED' || !introspection || header !== undefined) throw err;
      const readable = ctx.method !== 'POST' || (await readBody(ctx).then(() => true, () => false));
      if (readable && runsWithoutToken(ctx)) return null;
      throw err;
    }
    if (bodyProblem) throw bodyProblem.err;
    return caller;
  }

  const middleware: Middleware<AppState> = async function graphQLEndpoint(ctx, next) {
    try {
      if (ctx.method === 'OPTIONS') {
        // As on every REST path: what the endpoint serves (no CORS: Sandbox is served from here).
        ctx.set('Allow', [...METHODS, 'OPTIONS'].join(', '));
        ctx.status = 204;
        return;
      }
      if (!METHODS.includes(ctx.method)) {
        throw new AppError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; allowed: ${METHODS.join(', ')}`, undefined, {
          Allow: METHODS.join(', '),
        });
      }
      const caller = await callerFor(ctx);
      if (caller) ctx.state.caller = caller;
      const tooDeep = nestingProblem(ctx);
      if (tooDeep) {
        ctx.status = 400;
        ctx.body = { errors: [{ message: tooDeep.message, extensions: { code: tooDeep.code, requestId: ctx.state.requestId } }] };
        return;
      }
      // A directory query answered before under the directory version this request read.
      const cacheKey = answers?.keyOf(ctx, caller, paramsOf(ctx)) ?? null;
      if (cacheKey && answers!.serve(ctx, caller!, cacheKey)) return;
      // The scope a mutation's transaction lives in; settled before the answer, and never left open.
      await withSharedScope(async () => {
        try {
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
        } finally {
          await endShared(false);
        }
      });
      if (cacheKey) answers!.keep(ctx, caller!, cacheKey);
    } catch (err) {
      const known = failureOf(err, ctx, log);
      ctx.status = known.status;
      for (const [name, value] of Object.entries(known.headers)) ctx.set(name, value);
      ctx.body = httpErrorBody(known, ctx.state.requestId);
      // GraphQL over HTTP: a client that asks for application/graphql-response+json (Apollo Client
      // 4 does) reads a non-2xx answer of that type as GraphQL errors with their codes, where an
      // application/json one is only "Response not successful".
      if (ctx.accepts('application/json', 'application/graphql-response+json') === 'application/graphql-response+json') {
        ctx.type = 'application/graphql-response+json; charset=utf-8';
      }
    }
  };
  return { middleware, knownCacheable: (query) => answers?.knownCacheable(query) ?? false, stop: () => apollo.stop() };
}
