import type { Next } from 'koa';
import { ownBytes, type ReadCache } from '../read-cache/store.js';
import type { AppContext } from './context.js';

/** A REST answer as kept: the body's bytes and the headers its route set (Content-Type, X-Total-Count, Link). */
interface KeptRead {
  body: Buffer;
  headers: [string, string][];
}

/**
 * The read cache of a REST route declared `cacheable` (src/http/routes.ts): clean answers (200)
 * served again while the snapshot its caller's token lookup read is unchanged (store.ts says why
 * that is exact). Keyed by the request URL as sent (the Link header is built from it) and the
 * caller's scopes (the store adds them). Runs where the route's own handler would, after
 * authentication and the body, so that every answer, kept or not, passes the same checks.
 */
export function cachedRead(store: ReadCache) {
  return async function readCache(ctx: AppContext, next: Next): Promise<void> {
    const { caller } = ctx.state;
    if (ctx.method !== 'GET') return next();
    // Also without a snapshot: the store stood aside when the token was looked up (ReadCache.wantsSnapshot).
    if (!store.inUse(caller)) {
      ctx.state.readCache = 'aside';
      return next();
    }
    const key = `rest ${ctx.originalUrl}`;
    const hit = store.get<KeptRead>(caller, key);
    ctx.state.readCache = hit ? 'hit' : 'miss';
    if (hit) {
      for (const [name, value] of hit.headers) ctx.set(name, value);
      ctx.status = 200;
      ctx.body = hit.body;
      return;
    }
    const before = new Set(Object.keys(ctx.response.headers));
    await next();
    const body: unknown = ctx.body;
    if (ctx.status !== 200 || body === null || typeof body !== 'object' || Buffer.isBuffer(body)) return;
    // Koa would write JSON.stringify(body): written here once, and kept.
    const bytes = ownBytes(JSON.stringify(body));
    ctx.body = bytes;
    const headers = Object.entries(ctx.response.headers)
      .filter(([name]) => !before.has(name) && name !== 'content-length')
      .map(([name, value]) => [name, String(value)] as [string, string]);
    store.set(caller, key, { body: bytes, headers } satisfies KeptRead, bytes.length + headers.reduce((n, [name, value]) => n + name.length + value.length, 0));
  };
}
