import { pipeline } from 'node:stream';
import { createBrotliDecompress, createUnzip } from 'node:zlib';
import bourne from '@hapi/bourne';
import type { Middleware, Next } from 'koa';
import qs from 'qs';
import getRawBody from 'raw-body';
import { AppError } from '../errors.js';
import { answerBareStatus, failureOf, sendError } from './errors.js';
import { requestIdFrom } from './request-id.js';
import { headerCount } from '../shared/headers.js';
import type { Logger } from '../observability/log.js';
import type { DatabaseOutage } from '../db/outage.js';
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
  observe: ((ctx: AppContext, ms: number) => void) | null;
  /** CORS (src/http/cors.ts), around everything but the request id: its headers are on every answer, preflights answered before any check. */
  cors: Middleware<AppState> | null;
}) {
  const { log, outage, observe, cors } = options;
  return async function edge(ctx: AppContext, next: Next): Promise<void> {
    const requestId = requestIdFrom(ctx.get('X-Request-Id'));
    ctx.state.requestId = requestId;
    ctx.state.started = performance.now();
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
    if (ctx.status === 503 && !ctx.state.overloaded) outage.failed({ requestId });
    // Its token was read from the database, or the readiness probe reached it.
    else if (ctx.status < 400 && (ctx.state.caller || ctx.path === '/readyz')) outage.succeeded();
    const route = routeOf(ctx);
    const { graphql: operation, readCache } = ctx.state;
    // To the microsecond, as it was written when it was timed in nanoseconds.
    const ms = Math.round((performance.now() - ctx.state.started) * 1000) / 1000;
    // Built field by field (no spreads of conditional objects): it is made for every request.
    const line: Record<string, unknown> = { requestId, method: ctx.method };
    if (route) line.route = route;
    else line.path = ctx.path.slice(0, 200);
    line.status = ctx.status;
    line.ms = ms;
    if (operation) {
      line.operationName = operation.name?.slice(0, 64) ?? null;
      line.operationType = operation.type;
    }
    if (readCache) line.readCache = readCache;
    log.info('request', line);
    observe?.(ctx, ms);
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

const BODY_LIMIT = 1024 * 1024;
const accepted = { json: ['application/json', 'application/*+json'], form: ['application/json', 'application/*+json', 'application/x-www-form-urlencoded'] };
const refused = {
  json: 'the request body must be JSON (Content-Type: application/json)',
  form: 'the request body must be application/x-www-form-urlencoded or JSON',
};
/**
 * A body's text is UTF-8 (RFC 8259 §8.1 for JSON; forms carry ASCII with UTF-8 escaped): a body
 * declaring another charset is a 415, and bytes that are not UTF-8 a 400, rather than text stored
 * with U+FFFD where the client's characters were. `fatal`: the decoder throws on them.
 */
const UTF8_NAMES = new Set(['utf-8', 'utf8']);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Whether the request declares a body (a length, or chunks). */
const hasBody = (ctx: AppContext) => Boolean(ctx.request.length || ctx.get('Transfer-Encoding'));

/**
 * The body's bytes as sent, its Content-Encoding undone (gzip, deflate and br, as the body parser
 * this replaces, co-body's `inflation`, undid them), at most 1 MiB of them. raw-body also checks
 * them against Content-Length and tells a client that went away.
 */
async function bodyBytes(ctx: AppContext): Promise<Buffer> {
  const coding = (ctx.get('Content-Encoding') || 'identity').trim().toLowerCase();
  const decompress = coding === 'gzip' || coding === 'deflate' ? createUnzip() : coding === 'br' ? createBrotliDecompress() : null;
  if (!decompress && coding !== 'identity')
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'the request body has a Content-Encoding this service does not read (gzip, deflate, br or none)');
  try {
    if (!decompress) return await getRawBody(ctx.req, { length: ctx.get('Content-Length') || undefined, limit: BODY_LIMIT });
    // pipeline: an error on either side (the client gone, bytes that do not inflate) ends the read.
    return await getRawBody(
      pipeline(ctx.req, decompress, () => {}),
      { limit: BODY_LIMIT },
    );
  } catch (err) {
    const failure = err as { type?: string };
    if (failure.type === 'entity.too.large') throw new AppError('PAYLOAD_TOO_LARGE', 'the request body is larger than 1 MiB');
    if (failure.type === 'request.aborted') throw AppError.badRequest('the request body was cut short');
    if (failure.type === 'request.size.invalid') throw AppError.badRequest('the request body is not as long as its Content-Length says');
    throw AppError.badRequest(`the request body could not be read${decompress ? ` as ${coding}` : ''}`);
  }
}

/**
 * Whether the request declares no body: neither a length nor chunks (an empty body that is
 * declared, `Content-Length: 0`, is still parsed: as JSON it is no object). Its body is then `{}`.
 * Synchronous, so that a GET's pipeline need not wait a promise for a body it does not have.
 */
export function bodyless(ctx: AppContext): boolean {
  if (ctx.req.headers['content-length'] !== undefined || ctx.req.headers['transfer-encoding'] !== undefined) return false;
  ctx.request.body ??= {};
  return true;
}

/**
 * Reads the request's body into `ctx.request.body` (and its text into `rawBody`): 415 for another
 * declared type or charset, 413 over 1 MiB, 400 when it is not UTF-8 or does not parse; it
 * resolves once the whole body is in: a request's answer never starts before its body arrived.
 * None of the messages echo the body (it can hold secrets).
 */
export async function readBody(ctx: AppContext, kind: BodyKind): Promise<void> {
  if (ctx.request.body !== undefined || bodyless(ctx)) return; // read already, or none sent
  // `Content-Type: application/json` as most clients write it, with no parameter: JSON, no charset,
  // as type-is and content-type would find it after parsing the header (two packages' parsers on
  // every write); any other text goes through them.
  const plainJson = ctx.req.headers['content-type'] === 'application/json';
  if (!plainJson) {
    const type = ctx.is(...accepted[kind]);
    if (!type) {
      if (hasBody(ctx)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', refused[kind]);
      ctx.request.body = {}; // a declared empty body of no type, or of another
      return;
    }
    const charset = ctx.request.charset;
    if (charset && !UTF8_NAMES.has(charset.toLowerCase())) {
      const named = /^[\x21-\x7e]{1,40}$/.test(charset) ? `charset=${charset}` : 'its charset';
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', `the request body must be UTF-8 (charset=utf-8, or none); ${named} is not read`);
    }
  }
  const bytes = await bodyBytes(ctx);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw AppError.badRequest('the request body is not valid UTF-8: send its text encoded as UTF-8');
  }
  const form = kind === 'form' && !plainJson && ctx.is('application/x-www-form-urlencoded') !== false;
  let parsed: unknown;
  try {
    parsed = form ? parseForm(text) : parseJson(text);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw AppError.badRequest(kind === 'form' ? 'the request body is not valid JSON or form data' : 'the request body is not valid JSON');
  }
  ctx.request.rawBody = text;
  ctx.request.body = parsed;
}

/**
 * JSON text: any JSON value (an empty body is ''); a "__proto__" key is valid JSON, and dropped
 * like any other field outside the writable set (bourne finds it however it is escaped).
 */
const parseJson = (text: string): unknown => (text ? bourne.parse(text, { protoAction: 'remove' }) : text);

/** A form (`token=…&token_type_hint=…`): a %-escape that is not UTF-8 is a 400, as raw bytes that are not. */
function parseForm(text: string): unknown {
  return qs.parse(text, {
    allowDots: true,
    decoder: (part: string) => {
      try {
        return decodeURIComponent(part.replace(/\+/g, ' '));
      } catch {
        throw AppError.badRequest('the form body has a %-escape that is not UTF-8');
      }
    },
  });
}
