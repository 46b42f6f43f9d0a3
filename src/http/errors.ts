import { DriverException } from '@mikro-orm/core';
import { requestIdFrom } from './middleware.js';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Next } from 'koa';
import { AppError, asAppError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import type { AppContext } from './context.js';

/** The JSON error body of SPEC §6. */
function send(ctx: AppContext, error: AppError): void {
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  ctx.body = {
    code: error.status,
    error: error.error,
    message: error.message,
    requestId: ctx.state.requestId,
    ...(error.details ? { details: error.details } : {}),
  };
}

/**
 * What a failure of this request means to its caller. One that is not a known AppError is a bug:
 * it is logged with the request id, its kind and stack, but never a driver message (it can carry
 * values from the request), and the caller gets an INTERNAL error that names no cause.
 */
export function failureOf(err: unknown, ctx: AppContext, log: Logger): AppError {
  const known = asAppError(err);
  if (known) return known;
  const e = err as Error;
  log.error('request failed', {
    requestId: ctx.state.requestId,
    method: ctx.method,
    route: ctx.path,
    error: e?.name,
    ...(err instanceof DriverException ? { code: (err as { code?: string }).code } : { message: e?.message, stack: e?.stack }),
  });
  return new AppError('INTERNAL', 'an internal error occurred; quote the requestId when reporting it');
}

/** Turns every failure into the JSON error body, and the router's bare 404/405 into it too. */
export function errorHandler(log: Logger) {
  return async function handleErrors(ctx: AppContext, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        // The router answers a method it has no route for at all (TRACE, PROPFIND) with 501 and an
        // empty Allow, on any path: a path with no route is a 404 whatever the method.
        const allow = String(ctx.response.get('Allow') ?? '');
        if (ctx.status === 404 || ((ctx.status === 405 || ctx.status === 501) && !allow)) {
          ctx.remove('Allow');
          send(ctx, AppError.notFound(`no route for ${ctx.method} ${ctx.path}`));
        } else if (ctx.status === 405 || ctx.status === 501) {
          send(ctx, new AppError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; allowed: ${allow}`, undefined, { Allow: allow }));
        }
      }
    } catch (err) {
      send(ctx, failureOf(err, ctx, log));
    }
  };
}

/** The most a request line and its headers may take (the server's maxHeaderSize). */
export const MAX_HEADER_BYTES = 64 * 1024;

/**
 * Requests that Node's HTTP parser refuses before Koa sees them (a header with control characters,
 * headers over 64 KiB, a request that did not arrive in time) still get the JSON error body and an
 * X-Request-Id, then the connection closes (the parser cannot know where the next request starts).
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // An answer to an earlier request on this connection is still being made (a pipelined request
  // went wrong): writing now would look like that answer. Close, as Node does.
  if (!socket.writable || err.code === 'ECONNRESET' || (socket as { _httpMessage?: unknown })._httpMessage) {
    socket.destroy();
    return;
  }
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('HEADERS_TOO_LARGE', `the request line and headers are larger than ${MAX_HEADER_BYTES / 1024} KiB`)
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('REQUEST_TIMEOUT', 'the request did not arrive in time')
        : AppError.badRequest('the request is not valid HTTP/1.1 (for example, a header holds a control character)');
  answerOnSocket(socket, error);
}

/**
 * CONNECT (a proxy's method) reaches Node's 'connect' event, not Koa; without an answer Node closes
 * the socket silently. This service is no proxy: a 405 with the JSON body.
 */
export function answerConnect(req: { headers: Record<string, unknown> }, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const error = new AppError('METHOD_NOT_ALLOWED', 'CONNECT is not allowed: this service is not a proxy', undefined, {
    Allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
  });
  answerOnSocket(socket, error, typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : undefined);
}

/** Writes a complete JSON error answer straight onto a socket and closes it. */
function answerOnSocket(socket: Duplex, error: AppError, givenRequestId?: string): void {
  const requestId = requestIdFrom(givenRequestId);
  const body = JSON.stringify({ code: error.status, error: error.error, message: error.message, requestId });
  const headers = Object.entries(error.headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${headers}Connection: close\r\n\r\n${body}`,
  );
}
