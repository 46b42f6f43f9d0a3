import type { Caller } from '../auth/caller.js';
import type { AppContext } from '../http/context.js';
import { ownBytes, type ReadCache } from '../read-cache/store.js';
import { MAX_CACHED_QUERY } from './cacheable.js';

/** A clean answer as Apollo made it, and the operation it ran (for the request log and metrics). */
interface KeptAnswer {
  body: Buffer;
  type: string;
  operation: { name: string | null; type: string };
}

/**
 * The read cache in the GraphQL request path (one place: /graphql's middleware, after
 * authentication and the request's checks): clean answers to documents made only of fields
 * declared cacheable (src/graphql/cacheable.ts), served again without running Apollo while the
 * snapshot the caller's token lookup read is unchanged (store.ts says why that is exact).
 *
 * Keyed by the request exactly as it came: its method, what it sends and accepts (Content-Type,
 * Accept: a type Apollo refuses is never a hit), and its body or query string as text, so that
 * two requests share an answer only if they are the same bytes (nothing is rebuilt from parsed
 * values, which may not survive a round trip: `1e400` parses as Infinity); and the caller's scopes
 * (the store adds them). Only 200 answers without errors are kept: an error carries its request's
 * id, and a FORBIDDEN one depends on the scopes.
 */
export class GraphQLReadCache {
  constructor(private readonly store: ReadCache) {}

  /**
   * The key of a request's answer, or null when it may not be cached. `document` is what the gate
   * admitted (src/graphql/gate.ts): its text, and whether its every field is cacheable.
   */
  keyOf(ctx: AppContext, caller: Caller | null, document: { source: string; cacheable: boolean } | null, raw: string | undefined): string | null {
    if (!caller || (ctx.method !== 'POST' && ctx.method !== 'GET') || !document || raw === undefined) return null;
    // A router asking a subgraph for Apollo's inline trace gets the timing of this very run in the answer.
    if (ctx.get('apollo-federation-include-trace')) return null;
    if (!document.cacheable || document.source.length > MAX_CACHED_QUERY) return null;
    // Also without a snapshot: the store stood aside when the token was looked up (ReadCache.wantsSnapshot).
    if (!this.store.inUse(caller)) {
      ctx.state.readCache = 'aside';
      return null;
    }
    return `graphql\n${ctx.method}\n${ctx.get('Content-Type')}\n${ctx.get('Accept')}\n${raw}`;
  }

  /** Answers the request from the store; false when there is nothing for its snapshot. */
  serve(ctx: AppContext, caller: Caller, key: string): boolean {
    const answer = this.store.get<KeptAnswer>(caller, key);
    ctx.state.readCache = answer ? 'hit' : 'miss';
    if (!answer) return false;
    ctx.state.graphql = answer.operation;
    ctx.status = 200;
    ctx.type = answer.type;
    ctx.body = answer.body;
    return true;
  }

  /** Keeps Apollo's answer when it is a clean one (200, data and no errors). */
  keep(ctx: AppContext, caller: Caller, key: string): void {
    const body: unknown = ctx.body;
    const operation = ctx.state.graphql;
    // Inside JSON strings quotes are escaped, so `"errors":` can only be a key: Apollo's errors, or
    // an alias named errors (not cached either, which is only a missed chance).
    if (ctx.status !== 200 || typeof body !== 'string' || !operation || !body.startsWith('{"data":') || body.includes('"errors":')) return;
    const bytes = ownBytes(body);
    ctx.body = bytes;
    this.store.set(caller, key, { body: bytes, type: String(ctx.response.get('Content-Type')), operation } satisfies KeptAnswer, bytes.length);
  }
}
