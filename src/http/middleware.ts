import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import bodyParser from 'koa-bodyparser';
import type { Next } from 'koa';
import { authenticate, authorizationOf, clientOf } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import { AppError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import type { DatabaseOutage } from '../observability/outage.js';
import type { AppContext } from './context.js';

const CALLER_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** A request's id: the caller's X-Request-Id when it is a sane token, else a new UUID. */
export function requestIdFrom(given: string | undefined): string {
  return given && CALLER_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * What the read cache's early answer (front-cache.ts) found out about a request before it handed
 * the request to the Koa app: its id, and its bearer token's lookup, under way or done. The app
 * goes on with them rather than making a second id or sending the lookup a second time.
 */
export interface EarlyRequest {
  requestId: string;
  /** process.hrtime.bigint() when the request arrived: the log and metrics time it from then. */
  started: bigint;
  /** Absent when the request was handed over before its token was looked up. */
  caller?: Promise<Caller>;
}

const early = new WeakMap<IncomingMessage, EarlyRequest>();

/** Hands a request to the app with what was found out about it before (see EarlyRequest). */
export function handOver(req: IncomingMessage, found: EarlyRequest): void {
  early.set(req, found);
}

/** The bearer lookup front-cache.ts made for a request it handed over, if it made one. */
export const earlyCaller = (req: IncomingMessage): Promise<Caller> | undefined => early.get(req)?.caller;

/** When a request arrived: when it reached the server, for one handed over by front-cache.ts. */
export const arrivalOf = (req: IncomingMessage): bigint => early.get(req)?.started ?? process.hrtime.bigint();

/** X-Request-Id: the caller's when it is a sane token, else a new UUID; echoed on every answer. */
export async function requestId(ctx: AppContext, next: Next): Promise<void> {
  ctx.state.requestId = early.get(ctx.req)?.requestId ?? requestIdFrom(ctx.get('X-Request-Id'));
  ctx.set('X-Request-Id', ctx.state.requestId);
  await next();
}

/** The app's route templates, and a matcher by path and method (installed on the context by app.ts). */
export interface RouteTemplates {
  templates: ReadonlySet<string>;
  match(path: string, method: string): string | undefined;
}

/**
 * The route template a request matched (`/user/:id`), or null (an unknown path), found once the
 * answer is made and kept. The router notes it for a request that reached its handler; one refused
 * before (a 401 from authentication, a 415 from the body reader) only has the path of the
 * router-level middleware, so the routes are matched again, for those requests alone.
 */
export function routeOf(ctx: AppContext): string | null {
  if (ctx.state.route !== undefined) return ctx.state.route;
  const noted = (ctx as { _matchedRoute?: string })._matchedRoute;
  const routes = (ctx as { routes?: RouteTemplates }).routes;
  const route = noted && (!routes || routes.templates.has(noted)) ? noted : (routes?.match(ctx.path, ctx.method) ?? null);
  ctx.state.route = route;
  return route;
}

/** What the request log says of one answered request. */
export interface AnsweredRequest {
  requestId: string;
  method: string;
  /** The route template, or null when no route matched (the path is logged instead). */
  route: string | null;
  path: string;
  status: number;
  /** process.hrtime.bigint() when the request arrived. */
  started: bigint;
  operation?: { name: string | null; type: string };
  readCache?: 'hit' | 'miss';
}

/**
 * One line per request: method, route template (the path itself only when no route matched;
 * never the query string: filters may hold token values), status, time, and for /graphql the
 * operation's name and type. Written by the access log below, and by the read cache's early answer
 * (front-cache.ts), which answers before the Koa app.
 */
export function logAnswered(log: Logger, request: AnsweredRequest): void {
  const { operation } = request;
  log.info('request', {
    requestId: request.requestId,
    method: request.method,
    ...(request.route ? { route: request.route } : { path: request.path.slice(0, 200) }),
    status: request.status,
    ms: Number((process.hrtime.bigint() - request.started) / 1000n) / 1000,
    ...(operation ? { operationName: operation.name?.slice(0, 64) ?? null, operationType: operation.type } : {}),
    ...(request.readCache ? { readCache: request.readCache } : {}),
  });
}

/** The request log of the Koa app (logAnswered), and the database outage's start and end. */
export function accessLog(log: Logger, outage: DatabaseOutage) {
  return async function logRequest(ctx: AppContext, next: Next): Promise<void> {
    const started = arrivalOf(ctx.req);
    try {
      await next();
    } finally {
      if (ctx.status === 503) outage.failed(ctx.state.requestId);
      // Its token was read from the database, or the readiness probe reached it.
      else if (ctx.status < 400 && (ctx.state.caller || ctx.path === '/readyz')) outage.succeeded();
      logAnswered(log, {
        requestId: ctx.state.requestId,
        method: ctx.method,
        route: routeOf(ctx),
        path: ctx.path,
        status: ctx.status,
        started,
        operation: ctx.state.graphql,
        readCache: ctx.state.readCache,
      });
    }
  };
}

/**
 * Exactly one Host header (RFC 9112 §3.2): none on HTTP/1.1, or two, is a 400 with the JSON body.
 * Node would answer a missing one itself with a bare 400 (the server turns that off) and keeps
 * only the first of two.
 */
export async function requireOneHost(ctx: AppContext, next: Next): Promise<void> {
  const hosts = ctx.req.headersDistinct.host;
  if (!hosts && ctx.req.httpVersion === '1.1') throw AppError.badRequest('the request has no Host header (HTTP/1.1 requires one)');
  if (hosts && hosts.length > 1) throw AppError.badRequest(`send one Host header, not ${hosts.length}`);
  await next();
}

/** Collection paths work with or without the trailing slash: routes are declared without it. */
export async function trimTrailingSlash(ctx: AppContext, next: Next): Promise<void> {
  if (ctx.path.length > 1 && ctx.path.endsWith('/')) ctx.path = ctx.path.replace(/\/+$/, '') || '/';
  await next();
}

/** Resolves the bearer token into `ctx.state.caller` (401 otherwise). */
export function requireCaller(db: Pick<Database, 'orm' | 'keyring'>) {
  return async function authenticateRequest(ctx: AppContext, next: Next): Promise<void> {
    ctx.state.caller = await (earlyCaller(ctx.req) ?? authenticate(db, authorizationOf(ctx.req), clientOf(ctx.req.headers), ctx.state.requestId));
    await next();
  };
}

/** A body parser for JSON (and, where asked, form) bodies of at most 1 MiB. */
const bodyReader = (types: ('json' | 'form')[]) =>
  bodyParser({
    enableTypes: types,
    extendTypes: { json: ['application/*+json'] },
    jsonLimit: '1mb',
    formLimit: '1mb',
    strict: false,
    // A "__proto__" key is valid JSON; it is dropped like any other field outside the writable set
    // (co-body reads this option, koa-bodyparser's types do not list it).
    ...({ onProtoPoisoning: 'remove' } as object),
    // Only body-reading failures arrive here; none of them may echo the body (it can hold secrets).
    onerror: (err: Error & { status?: number; type?: string }) => {
      if (err.status === 413 || err.type === 'entity.too.large') {
        throw new AppError('PAYLOAD_TOO_LARGE', 'the request body is larger than 1 MiB');
      }
      if (err.status === 415) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be UTF-8 JSON');
      // stream.not.readable: the client left after front-cache.ts had read the body (see there).
      if (err.type === 'request.aborted' || err.type === 'stream.not.readable') throw AppError.badRequest('the request body was cut short');
      throw AppError.badRequest(types.includes('form') ? 'the request body is not valid JSON or form data' : 'the request body is not valid JSON');
    },
  });
const parseJson = bodyReader(['json']);
const parseFormOrJson = bodyReader(['json', 'form']);

/** Whether the request declares a body (a length, or chunks). */
const hasBody = (ctx: AppContext) => Boolean(ctx.request.length || ctx.get('Transfer-Encoding'));

/** JSON bodies only (415 for any other declared type), at most 1 MiB (413). */
export async function jsonBody(ctx: AppContext, next: Next): Promise<void> {
  if (hasBody(ctx) && !ctx.is('application/json', 'application/*+json')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be JSON (Content-Type: application/json)');
  }
  await parseJson(ctx, next);
}

/** JSON or form bodies (the OAuth RFCs send forms), at most 1 MiB; 415 for any other type. */
export async function formOrJsonBody(ctx: AppContext, next: Next): Promise<void> {
  if (hasBody(ctx) && !ctx.is('application/json', 'application/*+json', 'application/x-www-form-urlencoded')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be application/x-www-form-urlencoded or JSON');
  }
  await parseFormOrJson(ctx, next);
}

/**
 * OPTIONS on a known path: 204, and an `Allow` that lists OPTIONS as well (the router's answer
 * lists only the methods of its routes). An unknown path stays a 404.
 */
export async function answerOptions(ctx: AppContext, next: Next): Promise<void> {
  await next();
  if (ctx.method !== 'OPTIONS' || ctx.status !== 200) return;
  const allow = String(ctx.response.get('Allow') ?? '');
  if (!allow) return;
  ctx.set('Allow', [...allow.split(/,\s*/), 'OPTIONS'].join(', '));
  ctx.status = 204;
}
