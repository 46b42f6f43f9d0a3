import type { Middleware } from 'koa';
import { ownBytes, type ReadCache } from '../db/read-cache.js';
import type { AppState } from './context.js';
import { routeOf } from './middleware.js';

/**
 * The REST reads of the directory: users, applications and roles (a record, a list) and a user's
 * links (to applications, to roles). Tokens, the audit log and the OAuth calls are not cached.
 */
const DIRECTORY_READ = /^\/(?:(?:user|application|role)(?:\/[^/]+)?|user\/[^/]+\/(?:application(?:\/[^/]+)?|role))$/;

/** Whether a path (below the base path) is one of the cached directory reads. */
export const isDirectoryRead = (path: string): boolean => DIRECTORY_READ.test(path);

/** The cache key of a REST read: its URL as sent (the Link header is built from it). */
export const restReadKey = (url: string): string => `rest ${url}`;

export interface CachedRead {
  /** The JSON body as bytes: written as they are, where a string would be encoded again for every answer. */
  body: Buffer;
  /** The headers the route set (Content-Type, X-Total-Count, Link). */
  headers: [string, string][];
  /** The route template that answered (`/user/:id`), for the request log and metrics of a later hit. */
  route: string | null;
}

/**
 * Clean answers (200) of directory GETs, served again while the directory version the request's
 * bearer lookup read is unchanged (src/db/read-cache.ts says why that is exact). Keyed by the
 * caller's scopes (read-cache.ts adds them) and the request URL as sent (the Link header is built
 * from it). Runs after authentication and the body reader: a revoked or expired token is refused
 * as before, and a body the API refuses (415, 413, 400) is refused, cached answer or not. Hits are
 * mostly answered before the app (front-cache.ts); this serves the others (with an Origin, say).
 */
export function restReadCache(answers: ReadCache, basePath: string): Middleware<AppState> {
  return async function cachedDirectoryRead(ctx, next) {
    const { caller } = ctx.state;
    const path = basePath && ctx.path.startsWith(basePath) ? ctx.path.slice(basePath.length) : ctx.path;
    if (ctx.method !== 'GET' || !caller?.directoryVersion || !isDirectoryRead(path)) return next();
    const key = restReadKey(ctx.originalUrl);
    const hit = answers.get<CachedRead>(caller, key);
    ctx.state.readCache = hit ? 'hit' : 'miss';
    if (hit) {
      for (const [name, value] of hit.headers) ctx.set(name, value); // Content-Type among them
      ctx.status = 200;
      ctx.body = hit.body;
      return;
    }
    const before = new Set(Object.keys(ctx.response.headers));
    await next();
    const body: unknown = ctx.body;
    if (ctx.status !== 200 || body === null || typeof body !== 'object' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function') return;
    // Koa would write JSON.stringify(body): written here once, and kept.
    const bytes = ownBytes(JSON.stringify(body));
    ctx.body = bytes;
    const headers = Object.entries(ctx.response.headers)
      .filter(([name]) => !before.has(name) && name !== 'content-length')
      .map(([name, value]) => [name, String(value)] as [string, string]);
    answers.set(caller, key, { body: bytes, headers, route: routeOf(ctx) } satisfies CachedRead, bytes.length + headers.reduce((n, [name, value]) => n + name.length + value.length, 0));
  };
}
