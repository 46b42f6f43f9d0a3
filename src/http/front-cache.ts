import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { authenticate, clientOf } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import type { ReadCache } from '../db/read-cache.js';
import type { Metrics } from '../observability/metrics.js';
import type { DatabaseOutage } from '../observability/outage.js';
import type { Logger } from '../shared/log.js';
import { graphqlAnswerKey, MAX_QUERY_CHARS, type CachedAnswer } from '../graphql/response-cache.js';
import { handOver, logAnswered, requestIdFrom } from './middleware.js';
import { isDirectoryRead, restReadKey, type CachedRead } from './rest-cache.js';

export interface FrontCacheDeps {
  db: Pick<Database, 'orm' | 'keyring'>;
  answers: ReadCache;
  /** Whether a GraphQL query text's answers are kept: only such a POST waits for its bearer lookup here. */
  graphqlCacheable: (query: string) => boolean;
  basePath: string;
  /** CORS is on (CORS_ORIGINS): a request with an Origin goes to the app, the others get `Vary: Origin`. */
  cors: boolean;
  log: Logger;
  outage: DatabaseOutage;
  metrics: Metrics | null;
}

/** What a request is known by from its arrival: its id, when it came (hrtime), its path. */
interface Arrival {
  requestId: string;
  started: bigint;
  path: string;
}

/** An answer kept for the request, and what its log line and metrics say of it. */
interface KeptAnswer {
  headers: readonly [string, string][];
  body: Buffer;
  route: string | null;
  operation?: { name: string | null; type: string };
}

/** The largest GraphQL POST body read ahead of the app (cached query texts are at most 16 KiB). */
const MAX_EARLY_BODY = 32 * 1024;

/** The media types of a GraphQL POST read ahead of the app: JSON in UTF-8, as the app's body reader reads it. */
const JSON_TYPE = /^application\/json(?: *; *charset="?utf-8"?)?$/i;

/**
 * The whole body of a request that declared `length` bytes, read without ending the stream (read
 * with an exact size, the stream does not emit 'end' yet), so that it can be put back (unshift)
 * for the app's body reader: null if the request was aborted first.
 */
function readDeclaredBody(req: IncomingMessage, length: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const finish = (body: Buffer | null) => {
      req.removeListener('readable', onReadable);
      req.removeListener('error', onGone);
      req.removeListener('close', onGone);
      resolve(body);
    };
    const onReadable = () => {
      const body = req.read(length) as Buffer | null; // null until all of it has arrived
      if (body !== null) finish(body.length === length ? body : null);
    };
    const onGone = () => finish(null);
    req.on('readable', onReadable);
    req.on('error', onGone);
    req.on('close', onGone);
  });
}

/**
 * Read-cache hits (src/db/read-cache.ts) answered ahead of the Koa app: REST directory reads
 * (rest-cache.ts) and GraphQL POSTs of directory queries (graphql/response-cache.ts). The same
 * answer, headers, request log line and metrics as the app's, without the app's middleware chain
 * and routers, which cost more CPU than the rest of such a request together (a `GET /user/{id}`
 * or a `user(id)` query answered from the cache is the one statement of the bearer lookup).
 *
 * Only a request the app would take to its read cache unchanged is answered here: one Host header,
 * one Authorization header at most (exactly one for GraphQL), with CORS on no Origin, and either
 * a GET of a directory path without body headers (the body reader looks at a `Content-Length: 0`
 * too: its Content-Encoding is checked) or a POST to /graphql of a JSON body in UTF-8 of at most
 * 32 KiB, declared by Content-Length, not encoded. These mirror the app's checks before its cache
 * (app.ts: requireOneHost, requireCaller, jsonBody, the CORS middleware; graphql/server.ts:
 * callerFor); a check added there must be added here. Every other request, and every one whose
 * answer is not cached for its caller's scopes and directory version, goes to the app with what
 * was found out about it handed over (request id, arrival time, the bearer lookup under way or
 * done, failed included: middleware.ts, EarlyRequest), so that the lookup is not sent twice, and
 * a GraphQL body read here put back into the request stream for the app to read as it would have.
 * A hit is exact for the same reason as in the app: the lookup read the directory version, after
 * the whole request had arrived (read-cache.ts).
 *
 * A GraphQL POST waits here for its bearer lookup only when its query text is one whose answers
 * are kept; any other (mutations among them) goes to the app as soon as its body is in, before the
 * client can leave. One that leaves during that lookup finds its body gone from the destroyed
 * request stream, and the app logs a 400 "cut short" for it, where it would have run the read and
 * written an answer no one received.
 */
export function answerCachedReadsFirst(deps: FrontCacheDeps, app: RequestListener): RequestListener {
  const { db, answers, graphqlCacheable, basePath, cors, log, outage, metrics } = deps;

  /** One Host, at most one Authorization (exactly one when `bearer`), and no Origin when CORS is on. */
  const plainHeaders = (req: IncomingMessage, bearer: boolean): boolean => {
    if (cors && req.headers.origin !== undefined) return false;
    // Counted in the raw headers: req.headersDistinct would build an object for every request.
    let hosts = 0;
    let authorizations = 0;
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i];
      if (name.length === 4 && name.toLowerCase() === 'host') hosts += 1;
      else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations += 1;
    }
    return hosts === 1 && (bearer ? authorizations === 1 : authorizations <= 1);
  };

  /** A GET the app would take to its REST read cache as it is (see above). */
  const restRead = (req: IncomingMessage, path: string): boolean => {
    if (req.method !== 'GET') return false;
    if (basePath && !path.startsWith(`${basePath}/`)) return false;
    // The app trims trailing slashes before it routes (trimTrailingSlash).
    if (!isDirectoryRead(path.slice(basePath.length).replace(/\/+$/, ''))) return false;
    const { headers } = req;
    if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) return false;
    return plainHeaders(req, false);
  };

  /** The declared length of a GraphQL POST whose body may be read here, or 0 (see above). */
  const declaredGraphqlLength = (req: IncomingMessage, url: string): number => {
    if (req.method !== 'POST' || url !== '/graphql') return 0;
    const { headers } = req;
    const declared = headers['content-length'];
    if (declared === undefined || !/^\d{1,5}$/.test(declared) || headers['transfer-encoding'] !== undefined || headers['content-encoding'] !== undefined) return 0;
    if (!JSON_TYPE.test(headers['content-type'] ?? '')) return 0;
    const length = Number(declared);
    return length > 0 && length <= MAX_EARLY_BODY && plainHeaders(req, true) ? length : 0;
  };

  /** Writes a kept answer as the app does: its request id, Vary with CORS on, the kept headers. */
  const answer = (res: ServerResponse, requestId: string, headers: readonly [string, string][], body: Buffer): void => {
    res.statusCode = 200;
    res.setHeader('X-Request-Id', requestId);
    if (cors) res.setHeader('Vary', 'Origin');
    for (const [name, value] of headers) res.setHeader(name, value);
    res.setHeader('Content-Length', body.length);
    res.end(body);
  };

  /**
   * Looks the request's answer up under the caller its bearer lookup finds (`find`), answers a hit
   * and notes it in the log and metrics as the app would, and hands anything else to the app, once.
   */
  const serveOrHandOver = (
    req: IncomingMessage,
    res: ServerResponse,
    arrival: Arrival,
    beforeApp: () => void,
    find: (caller: Caller) => KeptAnswer | undefined,
  ): void => {
    const { requestId, started, path } = arrival;
    const lookup = authenticate(db, req.headers.authorization || undefined, clientOf(req.headers), requestId);
    let handedOver = false;
    const toApp = () => {
      if (handedOver) return;
      handedOver = true;
      beforeApp();
      handOver(req, { requestId, started, caller: lookup });
      app(req, res);
    };
    lookup
      .then((caller: Caller) => {
        let hit: ReturnType<typeof find>;
        try {
          hit = find(caller);
        } catch (err) {
          // A key that cannot be made (variables nested past JSON.stringify's stack): the app refuses it.
          log.debug('no early answer', { requestId, error: (err as Error)?.name });
          hit = undefined;
        }
        if (!hit) return toApp();
        try {
          answer(res, requestId, hit.headers, hit.body);
        } catch (err) {
          // A bug: the app answers, unless part of this answer is out already.
          log.error('answering from the read cache failed', { requestId, error: (err as Error)?.name, message: (err as Error)?.message, stack: (err as Error)?.stack });
          if (res.headersSent) res.destroy();
          else toApp();
          return;
        }
        outage.succeeded();
        const method = req.method ?? 'GET';
        metrics?.answered(method, hit.route ?? 'unmatched', 200, started, 'hit', hit.operation);
        logAnswered(log, { requestId, method, route: hit.route, path, status: 200, started, operation: hit.operation, readCache: 'hit' });
      }, toApp) // refused (401) or failed (503): the app answers, awaiting the same lookup
      .catch((err: Error) => {
        // A bug: logged, and the request is still answered by the app if nothing has gone out.
        log.error('request failed ahead of the app', { requestId, error: err?.name, message: err?.message, stack: err?.stack });
        if (!handedOver && !res.headersSent) toApp();
      });
  };

  return function answerOrHandOver(req, res) {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const rest = restRead(req, path);
    const length = rest ? 0 : declaredGraphqlLength(req, url);
    if (!rest && !length) return app(req, res);
    const arrival: Arrival = { requestId: requestIdFrom(req.headers['x-request-id'] as string | undefined), started: process.hrtime.bigint(), path };
    if (rest) {
      serveOrHandOver(req, res, arrival, () => {}, (caller) => answers.get<CachedRead>(caller, restReadKey(url)));
      return;
    }
    void readDeclaredBody(req, length).then((body) => {
      if (!body) {
        // The client left before its body was in: the app answers as it would have (the lookup's
        // 401 or 503 first, else a 400 "cut short"), its body reader finding the stream closed.
        handOver(req, arrival);
        return app(req, res);
      }
      let params: Record<string, unknown> | null = null;
      try {
        const parsed: unknown = JSON.parse(body.toString('utf8'));
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) params = parsed as Record<string, unknown>;
      } catch {
        // not JSON: the app says so
      }
      const query = params?.query;
      if (!params || typeof query !== 'string' || query.length > MAX_QUERY_CHARS || !graphqlCacheable(query)) {
        // Never served from the cache: to the app at once, its body put back.
        req.unshift(body);
        handOver(req, arrival);
        return app(req, res);
      }
      const contentType = req.headers['content-type'] ?? '';
      const accept = req.headers.accept ?? '';
      serveOrHandOver(req, res, arrival, () => req.unshift(body), (caller) => {
        const cached = answers.get<CachedAnswer>(caller, graphqlAnswerKey('POST', contentType, accept, params));
        return cached && { headers: [['Content-Type', cached.type]], body: cached.body, route: '/graphql', operation: cached.operation };
      });
    });
  };
}
