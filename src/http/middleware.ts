import bodyParser from 'koa-bodyparser';
import type { Middleware, Next } from 'koa';
import { AppError } from '../errors.js';
import { answerBareStatus, failureOf, sendError } from './errors.js';
import { requestIdFrom } from './request-id.js';
import { headerCount } from '../shared/headers.js';
import type { Logger } from '../observability/log.js';
import type { DatabaseOutage } from '../observability/outage.js';
import type { AppContext, AppState } from './context.js';

/**
 * The first and last step of every request, in one middleware (each Koa middleware is a promise
 * and a dispatch more per request: three steps folded into one were a measurable share of a
 * request's CPU):
 *
 * - its id (X-Request-Id: the caller's when it is a sane token, else a new UUID; echoed on every
 *   answer) and start time;
 * - CORS, when origins are allowed, around all that follows (a preflight is answered before any
 *   check; the headers are set before the request runs, so error answers carry them too);
 * - the HTTP edge checks: exactly one Host header (RFC 9112 §3.2: none on HTTP/1.1, or two, is a
 *   400 with the JSON body; Node would answer a missing one itself with a bare 400, which the
 *   server turns off, and keeps only the first of two); collection paths with or without the
 *   trailing slash (routes are declared without it); OPTIONS on a known path answered 204 with an
 *   `Allow` that lists OPTIONS as well (the router's lists only the methods of its routes; an
 *   unknown path stays a 404);
 * - every answer's last word: a failure becomes its JSON error (src/http/errors.ts), the router's
 *   bare 404/405 too;
 * - where a database outage starts and ends (one line each), then one log line per request:
 *   method, route template (the path itself only when no route matched; never the query string:
 *   filters may hold token values), status, time, and for /graphql the operation's name and type;
 * - `observe` (the metrics) with what the request came to.
 */
export function requestEdge(options: {
  log: Logger;
  outage: DatabaseOutage;
  observe: ((ctx: AppContext) => void) | null;
  /** CORS (src/http/cors.ts), around everything but the request id: its headers are on every answer, preflights answered before any check. */
  cors: Middleware<AppState> | null;
}) {
  const { log, outage, observe, cors } = options;
  return async function edge(ctx: AppContext, next: Next): Promise<void> {
    const requestId = requestIdFrom(ctx.get('X-Request-Id'));
    ctx.state.requestId = requestId;
    ctx.state.started = process.hrtime.bigint();
    ctx.set('X-Request-Id', requestId);
    const checked = async () => {
      checkHost(ctx.req.rawHeaders, ctx.req.httpVersion);
      if (ctx.path.length > 1 && ctx.path.endsWith('/')) ctx.path = ctx.path.replace(/\/+$/, '') || '/';
      await next();
      if (ctx.method === 'OPTIONS' && ctx.status === 200) allowOptions(ctx);
    };
    try {
      await (cors ? cors(ctx as never, checked) : checked());
      answerBareStatus(ctx);
    } catch (err) {
      sendError(ctx, failureOf(err, ctx, log));
    }
    // A pool too busy to hand out a connection in time is load, not an outage: no outage line.
    if (ctx.status === 503 && !ctx.state.overloaded) outage.failed(requestId);
    // Its token was read from the database, or the readiness probe reached it.
    else if (ctx.status < 400 && (ctx.state.caller || ctx.path === '/readyz')) outage.succeeded();
    const route = routeOf(ctx);
    const operation = ctx.state.graphql;
    log.info('request', {
      requestId,
      method: ctx.method,
      ...(route ? { route } : { path: ctx.path.slice(0, 200) }),
      status: ctx.status,
      ms: Number((process.hrtime.bigint() - ctx.state.started) / 1000n) / 1000,
      ...(operation ? { operationName: operation.name?.slice(0, 64) ?? null, operationType: operation.type } : {}),
      ...(ctx.state.readCache ? { readCache: ctx.state.readCache } : {}),
    });
    observe?.(ctx);
  };
}

/** One Host header: a 400 for none on HTTP/1.1, or for several. */
function checkHost(rawHeaders: string[], httpVersion: string): void {
  const hosts = headerCount(rawHeaders, 'host');
  if (hosts === 0 && httpVersion === '1.1') throw AppError.badRequest('the request has no Host header (HTTP/1.1 requires one)');
  if (hosts > 1) throw AppError.badRequest(`send one Host header, not ${hosts}`);
}

function allowOptions(ctx: AppContext): void {
  const allow = String(ctx.response.get('Allow') ?? '');
  if (!allow) return;
  ctx.set('Allow', [...allow.split(/,\s*/), 'OPTIONS'].join(', '));
  ctx.status = 204;
}

/**
 * The route template a request matched (`/user/:id`), or null (an unknown path): the route's own,
 * or for a method the path does not serve (a 405), the template of a route on that path.
 */
export function routeOf(ctx: AppContext): string | null {
  if (ctx.state.route !== undefined) return ctx.state.route;
  const byPath = (ctx as { matched?: { path: string | RegExp; methods: string[] }[] }).matched?.filter((layer) => layer.methods.length > 0).at(-1);
  return byPath ? String(byPath.path) : null;
}

/** The bodies a route reads: JSON (every API route), or JSON and forms (the OAuth RFCs send forms). */
export type BodyKind = 'json' | 'form';

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
      if (err.status === 413 || err.type === 'entity.too.large') throw new AppError('PAYLOAD_TOO_LARGE', 'the request body is larger than 1 MiB');
      if (err.status === 415) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be UTF-8 JSON');
      if (err.type === 'request.aborted') throw AppError.badRequest('the request body was cut short');
      throw AppError.badRequest(types.includes('form') ? 'the request body is not valid JSON or form data' : 'the request body is not valid JSON');
    },
  });
const parsers = { json: bodyReader(['json']), form: bodyReader(['json', 'form']) };
const accepted = { json: ['application/json', 'application/*+json'], form: ['application/json', 'application/*+json', 'application/x-www-form-urlencoded'] };
const refused = {
  json: 'the request body must be JSON (Content-Type: application/json)',
  form: 'the request body must be application/x-www-form-urlencoded or JSON',
};

/** Whether the request declares a body (a length, or chunks). */
const hasBody = (ctx: AppContext) => Boolean(ctx.request.length || ctx.get('Transfer-Encoding'));

/**
 * Reads the request's body into `ctx.request.body` (415 for another declared type, 413 over 1 MiB,
 * 400 when it does not parse), and resolves once it is in: a request's answer never starts before
 * its whole body arrived.
 */
export async function readBody(ctx: AppContext, kind: BodyKind): Promise<void> {
  // Neither a length nor chunks: the parser would find no body and conclude an empty object (an
  // empty body that is declared, `Content-Length: 0`, is still parsed: as JSON it is no object).
  if (ctx.req.headers['content-length'] === undefined && ctx.req.headers['transfer-encoding'] === undefined) {
    ctx.request.body ??= {};
    return;
  }
  if (hasBody(ctx) && !ctx.is(...accepted[kind])) throw new AppError('UNSUPPORTED_MEDIA_TYPE', refused[kind]);
  await parsers[kind](ctx, async () => {});
}
