import { ConnectionException, DriverException } from '@mikro-orm/core';
import type { Next } from 'koa';
import { AppError } from '../shared/errors.js';
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

/** Errors raised below the services (the database) as the AppError they mean. */
function translate(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  if (err instanceof ConnectionException) return new AppError('UNAVAILABLE', 'the database is unavailable; try again shortly');
  return null;
}

/**
 * Turns every failure into the JSON error body, and the router's bare 404/405 into it too.
 * A 500 names no cause to the caller; the log gets the error's kind and stack, never a driver
 * message (it can carry values from the request).
 */
export function errorHandler(log: Logger) {
  return async function handleErrors(ctx: AppContext, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        if (ctx.status === 404) send(ctx, AppError.notFound(`no route for ${ctx.method} ${ctx.path}`));
        else if (ctx.status === 405 || ctx.status === 501) {
          const allow = String(ctx.response.get('Allow'));
          send(ctx, new AppError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; allowed: ${allow}`, undefined, { Allow: allow }));
        }
      }
    } catch (err) {
      const known = translate(err);
      if (known) {
        send(ctx, known);
        return;
      }
      const e = err as Error;
      log.error('request failed', {
        requestId: ctx.state.requestId,
        method: ctx.method,
        route: ctx.path,
        error: e?.name,
        ...(err instanceof DriverException ? { code: (err as { code?: string }).code } : { message: e?.message, stack: e?.stack }),
      });
      send(ctx, new AppError('INTERNAL', 'an internal error occurred; quote the requestId when reporting it'));
    }
  };
}
