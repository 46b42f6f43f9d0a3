import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, asAppError, type ErrorCode } from '../errors.js';
import type { Logger } from '../observability/log.js';
import type { AppContext } from './context.js';
import { requestIdFrom } from './request-id.js';

declare module '../errors.js' {
  /** The codes of what only HTTP refuses (the domain's are in src/errors.ts). */
  interface ErrorCodes {
    METHOD_NOT_ALLOWED: true;
    REQUEST_TIMEOUT: true;
    PAYLOAD_TOO_LARGE: true;
    UNSUPPORTED_MEDIA_TYPE: true;
    TOO_MANY_REQUESTS: true;
    HEADERS_TOO_LARGE: true;
  }
  interface ErrorInfo {
    /** METHOD_NOT_ALLOWED: the methods the path serves. */
    allow?: readonly string[];
  }
}

/** A 405: `method` is not served on the path, which serves `allow`. */
export const methodNotAllowed = (method: string, allow: readonly string[]): AppError =>
  new AppError('METHOD_NOT_ALLOWED', `${method} is not allowed here; allowed: ${allow.join(', ')}`, undefined, { allow });

/** The HTTP status of each error code. */
export const STATUS_OF: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

/** What a 503's Retry-After says: a database outage, or a burst of requests, is usually over in seconds. */
export const RETRY_AFTER_SECONDS = 5;

/**
 * The headers an error's answer carries (docs/rest.md#permissions, #conventions; docs/operations.md): WWW-Authenticate on a 401 (plain
 * `Bearer` when no credential was sent) and a 403, Allow on a 405, Retry-After on a 503.
 */
export function errorHeaders(error: AppError): Record<string, string> {
  switch (error.code) {
    case 'UNAUTHORIZED':
      return { 'WWW-Authenticate': error.info.credential === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"' };
    case 'FORBIDDEN':
      return { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${error.info.permission}"` };
    case 'METHOD_NOT_ALLOWED':
      return { Allow: (error.info.allow ?? []).join(', ') };
    case 'UNAVAILABLE':
      return { 'Retry-After': String(RETRY_AFTER_SECONDS) };
    default:
      return {};
  }
}

/** Puts an error on a Koa answer: its status, its headers, and `body` (REST's JSON error body by default). */
export function sendError(ctx: AppContext, error: AppError, body: unknown = errorBody(error, ctx.state.requestId)): void {
  ctx.status = STATUS_OF[error.code];
  if (error.info.overload) ctx.state.overloaded = true;
  for (const [name, value] of Object.entries(errorHeaders(error))) ctx.set(name, value);
  ctx.body = body;
}

/** The JSON error body of docs/rest.md#conventions. */
export const errorBody = (error: AppError, requestId: string) => ({
  code: STATUS_OF[error.code],
  error: error.code,
  message: error.message,
  requestId,
  ...(error.details ? { details: error.details } : {}),
});

/**
 * What a failure of this request means to its caller. One that is not a known AppError is a bug:
 * it is logged with the request id, its kind and stack, but never a driver message (it can carry
 * values from the request), and the caller gets an INTERNAL error that names no cause.
 */
export function failureOf(err: unknown, ctx: AppContext, log: Logger): AppError {
  const known = asAppError(err);
  if (known) return known;
  const e = err as Error & { code?: unknown };
  log.error('request failed', {
    requestId: ctx.state.requestId,
    method: ctx.method,
    route: ctx.path,
    error: e?.name,
    ...(e?.code !== undefined ? { code: e.code } : { message: e?.message, stack: e?.stack }),
  });
  return new AppError('INTERNAL', 'an internal error occurred; quote the requestId when reporting it');
}

/**
 * The router's bare answers as JSON errors: a path with no route is a 404 whatever the method (the
 * router answers a method it has no route for at all, TRACE or PROPFIND, with 501 and an empty
 * Allow, on any path); a method the path does not serve a 405 naming the ones it does.
 */
export function answerBareStatus(ctx: AppContext): void {
  if (ctx.body !== undefined && ctx.body !== null) return;
  const allow = String(ctx.response.get('Allow') ?? '');
  if (ctx.status === 404 || ((ctx.status === 405 || ctx.status === 501) && !allow)) {
    ctx.remove('Allow');
    sendError(ctx, AppError.notFound(`no route for ${ctx.method} ${ctx.path}`));
  } else if (ctx.status === 405 || ctx.status === 501) {
    sendError(ctx, methodNotAllowed(ctx.method, allow.split(/,\s*/)));
  }
}

/** The most a request line and its headers may take (the server's maxHeaderSize). */
export const MAX_HEADER_BYTES = 64 * 1024;

/** The JSON answer to a request Node's parser refused (a header with control characters, headers over 64 KiB, a request that came too slowly). */
export function clientErrorAnswer(err: Error & { code?: string }): AppError {
  if (err.code === 'HPE_HEADER_OVERFLOW')
    return new AppError('HEADERS_TOO_LARGE', `the request line and headers are larger than ${MAX_HEADER_BYTES / 1024} KiB`);
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new AppError('REQUEST_TIMEOUT', 'the request did not arrive in time');
  return AppError.badRequest('the request is not valid HTTP/1.1 (for example, a header holds a control character)');
}

/** CONNECT (a proxy's method) reaches Node's 'connect' event, not Koa: this service is no proxy. */
export const CONNECT_REFUSED = new AppError('METHOD_NOT_ALLOWED', 'CONNECT is not allowed: this service is not a proxy', undefined, {
  allow: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
});

/** Writes a complete JSON error answer straight onto a socket and closes it (Node's own answers bypass Koa). */
export function answerOnSocket(socket: Duplex, error: AppError, givenRequestId?: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = requestIdFrom(givenRequestId);
  const status = STATUS_OF[error.code];
  const body = JSON.stringify({ code: status, error: error.code, message: error.message, requestId });
  const headers = Object.entries(errorHeaders(error))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${headers}Connection: close\r\n\r\n${body}`,
  );
}
