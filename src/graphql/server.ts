import { Readable } from 'node:stream';
import { ApolloServer, HeaderMap, type HTTPGraphQLRequest } from '@apollo/server';
import { ApolloServerPluginInlineTrace } from '@apollo/server/plugin/inlineTrace';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import type { Middleware } from 'koa';
import { authorizationOf, callerOf, clientOf, tokenHashes, type Credential } from '../auth/authenticate.js';
import { bearerOf } from '../auth/bearer.js';
import type { CheckedSql, TokenHints } from '../auth/checked-sql.js';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import { AppError } from '../errors.js';
import { undoFromNow, type AppContext, type AppState } from '../http/context.js';
import { errorHeaders, failureOf, methodNotAllowed, STATUS_OF } from '../http/errors.js';
import { readBody } from '../http/middleware.js';
import type { Logger } from '../observability/log.js';
import type { ReadCache } from '../read-cache/store.js';
import { GraphQLReadCache } from './cached-read.js';
import { Loaders, type GraphQLContext, type ServiceContainer as Services } from './context.js';
import { formatError, httpErrorBody } from './errors.js';
import { executionPlugin, executorGateway, severalRootFields, type ExecutorDeps } from './executor.js';
import { sandboxWithFallback } from './explorer.js';
import type { Admitted, Gate, OperationRequest, Refused, Transport, Verdict } from './gate.js';
import { GRAPHQL_LIMITS } from './limits.js';

/** What /graphql serves (OPTIONS aside): queries over GET (and HEAD), everything over POST. */
export const GRAPHQL_METHODS = ['GET', 'HEAD', 'POST'];

/**
 * A request's GraphQL parameters: the JSON body of a POST, the query string of a GET read as
 * Apollo Server reads it (each parameter once; `variables` and `extensions` as JSON). Null when
 * Apollo would refuse the query string itself: it answers that in its own words.
 */
function operationRequestOf(ctx: AppContext): OperationRequest | null {
  if (ctx.method === 'POST') return ctx.request.body as OperationRequest;
  const params = new URLSearchParams(ctx.querystring);
  const request: OperationRequest = {};
  for (const name of ['query', 'operationName', 'variables', 'extensions', 'documentId'] as const) {
    const values = params.getAll(name);
    if (values.length > 1) return null;
    if (!values.length) continue;
    if (name === 'query' || name === 'operationName' || name === 'documentId') request[name] = values[0];
    else {
      try {
        request[name] = JSON.parse(values[0]);
      } catch {
        return null;
      }
    }
  }
  return request;
}

/** Whether a request names an operation at all (a GET without one is for the landing page). */
const namesOperation = (request: OperationRequest | null) =>
  request === null || request.query !== undefined || request.extensions !== undefined || request.documentId !== undefined;

/**
 * What Apollo Server is handed of a request the gate admitted by an id: the id as Apollo's
 * persisted query extension (Apollo does not read `documentId`, nor an empty query beside an id),
 * which Apollo looks up in the gate's persisted queries (Gate.persistedQueries).
 */
function byIdForApollo(request: OperationRequest, id: string): Record<string, unknown> {
  const { operationName, variables } = request;
  const extensions = { ...(request.extensions as Record<string, unknown> | undefined), persistedQuery: { version: 1, sha256Hash: id } };
  return { ...(operationName !== undefined ? { operationName } : {}), ...(variables !== undefined ? { variables } : {}), extensions };
}

/**
 * Apollo's own log lines go to the service log, with Apollo's words only ("Unexpected error
 * processing request"): Apollo's logger interface gets each line as one string, its words and the
 * text of the error it is about joined by a colon, and that text may quote request values. No
 * public API hands the two over apart; the error itself reaches the gate's plugin
 * (unexpectedErrorProcessingRequest), which logs its name with the request's id.
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
 * Apollo Server answers some requests before its request pipeline, where no plugin sees them (a
 * body without a query, variables that are not JSON, a batch, an Accept it cannot serve): their
 * errors are formatted by formatError, which has no request to read the id from, so the id is
 * added to the JSON Apollo wrote. Apollo offers no public hook between such an error and its answer.
 */
function completeEarlyErrors(ctx: AppContext): void {
  if (ctx.status < 400 || typeof ctx.body !== 'string' || ctx.body.includes('"requestId"')) return;
  let body: { errors?: { extensions?: Record<string, unknown> }[] };
  try {
    body = JSON.parse(ctx.body);
  } catch {
    return;
  }
  if (!Array.isArray(body?.errors)) return;
  for (const error of body.errors) error.extensions = { ...error.extensions, requestId: ctx.state.requestId };
  ctx.body = JSON.stringify(body);
}

/** Answers a request in GraphQL's error shape: the HTTP status, and the content type the client asked for. */
function answerErrors(ctx: AppContext, status: number, body: unknown): void {
  ctx.status = status;
  ctx.body = body;
  // GraphQL over HTTP: a client that asks for application/graphql-response+json (Apollo Client
  // 4 does) reads a non-2xx answer of that type as GraphQL errors with their codes, where an
  // application/json one is only "Response not successful".
  if (ctx.accepts('application/json', 'application/graphql-response+json') === 'application/graphql-response+json') {
    ctx.type = 'application/graphql-response+json; charset=utf-8';
  } else {
    ctx.type = 'application/json; charset=utf-8';
  }
}

/**
 * Subscriptions over Server-Sent Events on /graphql (src/realtime/sse.ts serves them; declared here
 * so that graphql/ does not import realtime/, which imports graphql/).
 */
export interface SseEndpoint {
  /** Whether a request asks for an event stream (graphql-sse's distinct connections mode). */
  wants(ctx: AppContext): boolean;
  /** Runs a subscription for an authenticated request, as the gate judged it (null: the request names nothing to run). */
  serve(ctx: AppContext, caller: Caller, verdict: Verdict | null): Promise<void>;
}

export interface GraphQLEndpoint {
  middleware: Middleware<AppState>;
  stop(): Promise<void>;
}

interface GraphQLDeps {
  db: Database;
  services: Services;
  log: Logger;
  introspection: boolean;
  /** The GraphQL gate (src/graphql/gate.ts), shared with the subscription transports. */
  gate: Gate;
  /** Answers of cacheable reads (src/read-cache/), shared with REST; null: off. */
  readCache: ReadCache | null;
  /** What the instance's token checks found (src/auth/checked-sql.ts), shared with REST. */
  tokenHints: TokenHints;
  /** Subscriptions over Server-Sent Events (src/realtime/sse.ts). */
  sse?: SseEndpoint;
  /** GRAPHQL_FEDERATION: the gate's schema is the Apollo Federation 2 subgraph's (src/graphql/federation.ts). */
  federation?: boolean;
}

/** Apollo Server over the gate: it runs what the gate admitted, with the service's executor and plugins. */
async function startApollo({ db, log, introspection, gate, federation = false }: GraphQLDeps): Promise<ApolloServer<GraphQLContext>> {
  const schema = gate.schema;
  const execution: ExecutorDeps = {
    schema,
    sql: db.sql,
    log,
    traces: federation,
    admit: ({ context, request, source }) =>
      gate.admit({ ...request, query: source }, context.caller, request.http?.method === 'GET' ? 'get' : 'post', context.requestId),
  };
  const apollo = new ApolloServer<GraphQLContext>({
    // A subgraph keeps the gateway route (Apollo's inline traces need Apollo's own execution); the
    // plugin's otherwise (src/graphql/executor.ts says why).
    ...(federation ? { gateway: executorGateway(execution) } : { schema }),
    logger: apolloLogger(log),
    introspection,
    allowBatchedHttpRequests: false,
    persistedQueries: gate.persistedQueries,
    // The gate's parsed documents: Apollo parses a text once (the first time it meets it), and
    // never validates it: the gate has, with the service's limits, before Apollo saw the request.
    documentStore: gate.documentStore,
    dangerouslyDisableValidation: true,
    parseOptions: { maxTokens: GRAPHQL_LIMITS.maxTokens },
    stopOnTerminationSignals: false, // the server owns the graceful stop (server, then Apollo, then the pool)
    // Apollo's CSRF prevention refuses a GET without a preflight-forcing header, which guards
    // cookie-authenticated APIs against cross-site requests. This one authenticates by bearer
    // header only, which a cross-site page cannot make a browser send, so it guarded nothing and
    // broke every client that queries over GET (urql's default). Mutations stay POST-only.
    csrfPrevention: false,
    includeStacktraceInErrorResponses: false,
    formatError,
    plugins: [
      introspection ? sandboxWithFallback() : ApolloServerPluginLandingPageDisabled(),
      gate.apolloPlugin(),
      ...(federation ? [] : [executionPlugin({ ...execution, onErrors: (errors, requestId) => gate.logInternal(errors, requestId) })]),
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
  return apollo;
}

/** Reads a POST body: JSON (else 400, 413 or 415) holding an object (else 400). */
async function readGraphQLBody(ctx: AppContext): Promise<void> {
  await readBody(ctx, 'json');
  const body: unknown = ctx.request.body;
  if (typeof body !== 'object' || body === null) {
    throw AppError.badRequest('the request body must be a JSON object such as {"query": "{ viewer { id } }"}');
  }
}

/**
 * A request's credential and its token's keyed hashes, with its body read: a problem with the
 * body, or with the Authorization header (none, or not `Bearer <value>`), kept for callerFor.
 */
interface Presented {
  header: string | undefined;
  credential: Credential;
  hashes: Buffer[] | null;
  headerProblem: { err: unknown } | null;
  bodyProblem: { err: unknown } | null;
}

async function presented(ctx: AppContext, db: Database): Promise<Presented> {
  const header = authorizationOf(ctx.req);
  const bodyProblem =
    header !== undefined && ctx.method === 'POST'
      ? await readGraphQLBody(ctx).then(
          () => null,
          (err: unknown) => ({ err }),
        )
      : null;
  const credential = { authorization: header, client: clientOf(ctx.req.headers), requestId: ctx.state.requestId };
  try {
    return { header, credential, hashes: tokenHashes(db.keyring, bearerOf(header)), headerProblem: null, bodyProblem };
  } catch (err) {
    return { header, credential, hashes: null, headerProblem: { err }, bodyProblem };
  }
}

/**
 * The caller, or null for a request without a credential, which only introspection may be
 * (checked once the gate has read the document). As on REST, a missing or invalid token is a
 * 401 before anything else is said about the request (its body, its document, the schema); with
 * a credential, the body is read in full before the token is looked up (that statement also
 * reads the snapshot a cached answer is served under: a body that arrives after a write must not
 * get an answer from before it), when the read cache is on.
 */
async function callerFor(ctx: AppContext, { introspection, tokenHints }: GraphQLDeps, request: Presented, wantsSnapshot: boolean): Promise<Caller | null> {
  const { header, credential, hashes, headerProblem, bodyProblem } = request;
  let caller: Caller;
  try {
    if (headerProblem) throw headerProblem.err;
    caller = callerOf(await tokenHints.lookUp(hashes, wantsSnapshot), credential);
  } catch (err) {
    // Only a request with no credential at all may fall back to introspection: a wrong one is
    // a 401 (Sandbox shows it), as the README's table says.
    if (!(err instanceof AppError) || err.code !== 'UNAUTHORIZED' || !introspection || header !== undefined) throw err;
    if (ctx.method === 'POST') await readGraphQLBody(ctx).catch(() => Promise.reject(err));
    return null;
  }
  if (bodyProblem) throw bodyProblem.err;
  return caller;
}

/**
 * Apollo Server on the shared services, behind one Koa middleware for /graphql that reads the
 * request (GET, HEAD or POST with a JSON object), authenticates it (HTTP 401 before GraphQL runs,
 * so that a caller without a token learns nothing of the schema), passes it through the gate,
 * serves cacheable answers, and answers every failure in GraphQL's shape. Sandbox (the landing
 * page of GET /graphql) and introspection go together: on outside production, off in production
 * unless GRAPHQL_INTROSPECTION=true.
 */
export async function createGraphQL(deps: GraphQLDeps): Promise<GraphQLEndpoint> {
  const { db, services, log, introspection, gate } = deps;
  const answers = deps.readCache ? new GraphQLReadCache(deps.readCache) : null;
  const apollo = await startApollo(deps);

  /**
   * Apollo Server answers a request the gate admitted (or left to it), through its public
   * integration API: the request as the gate read it, HEAD as GET (Apollo serves GET; Koa leaves
   * the body out of the answer to a HEAD), and the context the resolvers get.
   */
  async function runApollo(
    ctx: AppContext,
    request: OperationRequest | null,
    caller: Caller | null,
    admitted: Admitted | null,
    checked: CheckedSql | null,
  ): Promise<void> {
    const headers = new HeaderMap();
    for (const [name, value] of Object.entries(ctx.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    const byId = admitted?.byId != null && request ? byIdForApollo(request, admitted.byId) : null;
    let search = ctx.querystring;
    if (byId && ctx.method !== 'POST') {
      const params = new URLSearchParams();
      for (const [name, value] of Object.entries(byId)) params.set(name, typeof value === 'string' ? value : JSON.stringify(value));
      search = params.toString();
    }
    const httpGraphQLRequest: HTTPGraphQLRequest = {
      method: ctx.method === 'HEAD' ? 'GET' : ctx.method,
      headers,
      search,
      body: ctx.method === 'POST' ? (byId ?? ctx.request.body) : undefined,
    };
    const context = async (): Promise<GraphQLContext> => {
      // A query runs on `reads`, a mutation on `sql` (src/graphql/executor.ts): checked, they carry the token's check in their first statement.
      const reads = checked ?? (caller ? db.readerFor(caller) : db.sql);
      const sql = checked ?? db.sql;
      // The loaders too: an operation whose first statement is a loader's carries the check in it.
      const loaders = new Loaders(services, caller, sql);
      return { caller, requestId: ctx.state.requestId, services, sql, reads, loaders, http: ctx.state, ...(admitted ? { admitted } : {}) };
    };
    const response = await apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest, context });
    ctx.body = response.body.kind === 'complete' ? response.body.string : Readable.from(response.body.asyncIterator);
    if (response.status !== undefined) ctx.status = response.status;
    for (const [name, value] of response.headers) ctx.set(name, value);
  }

  /** The gate's verdict on an HTTP request: null for a landing page or nothing to run, which Apollo answers. */
  function verdictOf(ctx: AppContext, request: OperationRequest | null, caller: Caller | null, transport: Transport) {
    if (request === null) return null;
    // A browser's GET gets the landing page, whatever its query string says (Apollo serves it first).
    if (introspection && ctx.method !== 'POST' && ctx.accepts('application/json', 'application/graphql-response+json', 'text/html') === 'text/html')
      return null;
    if (!namesOperation(request)) return null;
    return gate.admit(request, caller, transport, ctx.state.requestId);
  }

  const refuse = (ctx: AppContext, verdict: Refused) => answerErrors(ctx, 400, { errors: gate.format(verdict.errors, ctx.state.requestId) });

  /** A request once its caller is known (or provisional, with `checked`): the gate's verdict, then the answer. */
  async function serve(ctx: AppContext, caller: Caller | null, stream: SseEndpoint | null, checked: CheckedSql | null): Promise<void> {
    const request = operationRequestOf(ctx);
    const transport: Transport = stream ? 'sse' : ctx.method === 'POST' ? 'post' : 'get';
    const verdict = verdictOf(ctx, request, caller, transport);
    if (caller) ctx.state.caller = caller;
    // Without a token: the landing page (a GET naming no operation), or a query of introspection meta-fields only.
    else if ((ctx.method === 'POST' || namesOperation(request)) && !(verdict?.kind === 'admitted' && verdict.introspectionOnly)) {
      throw AppError.unauthorized('an Authorization: Bearer <accessToken> header is required', 'missing');
    }
    if (verdict && verdict.kind !== 'unjudged' && verdict.operation) {
      ctx.state.graphql = { name: verdict.operation.name?.value ?? null, type: verdict.operation.operation };
    }
    if (stream) {
      // A subscription over Server-Sent Events: always with a token.
      if (!caller) throw AppError.unauthorized('an access token is required', 'missing');
      await stream.serve(ctx, caller, verdict);
      return;
    }
    if (verdict?.kind === 'refused') return refuse(ctx, verdict);
    const admitted = verdict?.kind === 'admitted' ? verdict : null;
    // A query, and a mutation of one root field, carry the token's check in their first statement
    // (a mutation's write commits only if the token is as hinted); anything else runs after it.
    if (checked) {
      const operation = admitted?.operation;
      if (operation?.operation === 'mutation' && !severalRootFields(operation)) checked.mayWrite();
      else if (operation?.operation !== 'query') await checked.confirm();
    }
    const raw = ctx.method === 'POST' ? (ctx.request as { rawBody?: string }).rawBody : ctx.querystring;
    const cacheKey = answers?.keyOf(ctx, caller, admitted, raw) ?? null;
    if (cacheKey && answers!.serve(ctx, caller!, cacheKey)) return;
    await runApollo(ctx, request, caller, admitted, checked);
    completeEarlyErrors(ctx);
    if (cacheKey) answers!.keep(ctx, caller!, cacheKey);
  }

  const middleware: Middleware<AppState> = async function graphQLEndpoint(ctx) {
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
      const request = await presented(ctx, db);
      // Asked once per request: while the read cache stands aside, it samples the requests that
      // read the snapshot. Not for an operation it never answers (a mutation the gate has seen),
      // whose write then carries the token's check, as REST's writes do.
      const wantsSnapshot = deps.readCache !== null && !deps.gate.knownNotQuery(operationRequestOf(ctx)) && deps.readCache.wantsSnapshot();
      // As on REST (src/http/routes.ts): a request whose token was seen before checks it in its
      // first statement, unless it needs what the lookup alone reads (the read cache's snapshot, a
      // replica's read floor) or streams its answer as it goes (SSE). Nothing is answered before
      // the check passed; when the token changed, the request runs again.
      const checked = !stream && !request.bodyProblem ? deps.tokenHints.checkedFor(request.hashes, wantsSnapshot) : null;
      if (checked && (await checked.answer(() => serve(ctx, callerOf(checked.hint, request.credential), null, checked), undoFromNow(ctx)))) return;
      await serve(ctx, await callerFor(ctx, deps, request, wantsSnapshot && !checked), stream, null);
    } catch (err) {
      const known = failureOf(err, ctx, log);
      if (known.info.overload) ctx.state.overloaded = true;
      for (const [name, value] of Object.entries(errorHeaders(known))) ctx.set(name, value);
      answerErrors(ctx, STATUS_OF[known.code], httpErrorBody(known, ctx.state.requestId));
    }
  };
  return { middleware, stop: () => apollo.stop() };
}
