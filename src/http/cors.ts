import cors from '@koa/cors';
import type { Middleware } from 'koa';
import type { Config } from '../config.js';
import type { AppState } from './context.js';

/** What a browser app may send: the API's own headers, and the one Apollo clients add. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Accept', 'Attrs', 'Prefer', 'X-Client', 'X-Request-Id', 'apollo-require-preflight'];
/** What a browser app may read besides the CORS-safelisted headers. */
export const CORS_EXPOSED_HEADERS = ['Location', 'Link', 'X-Total-Count', 'X-Request-Id', 'Preference-Applied', 'WWW-Authenticate'];

/**
 * CORS (docs/operations.md) for the allowed origins, on every answer: errors and 401s included (the headers
 * are set before the request runs, and @koa/cors keeps them on a thrown error), and preflights
 * answered 204 before authentication. No credentials mode: the API reads a bearer header, never a
 * cookie. `methodsOf` gives a path's methods, so that a preflight names what the path serves
 * (@koa/cors alone can only name one fixed list).
 */
export function corsMiddleware(origins: Exclude<Config['corsOrigins'], null>, methodsOf: (path: string) => string[]): Middleware<AppState> {
  const allowed = (origin: string) => origin !== '' && (origins === '*' || origins.includes(origin));
  const answer = cors({
    origin: (ctx) => (allowed(ctx.get('Origin')) ? ctx.get('Origin') : ''),
    allowHeaders: CORS_ALLOWED_HEADERS,
    exposeHeaders: CORS_EXPOSED_HEADERS,
    maxAge: 86_400,
    credentials: false,
  });
  return async function corsHeaders(ctx, next) {
    await answer(ctx, next);
    const preflight = ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method') !== '';
    if (preflight && ctx.response.get('Access-Control-Allow-Origin')) {
      const methods = methodsOf(ctx.path);
      // An unknown path serves nothing: no method is allowed, so the browser blocks the call.
      if (methods.length) ctx.set('Access-Control-Allow-Methods', methods.join(', '));
      else ctx.remove('Access-Control-Allow-Methods');
    }
  };
}
