import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { authenticate, clientOf } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import type { ReadCache } from '../db/read-cache.js';
import type { Metrics } from '../observability/metrics.js';
import type { DatabaseOutage } from '../observability/outage.js';
import type { Logger } from '../shared/log.js';
import { handOver, logAnswered, requestIdFrom } from './middleware.js';
import { isDirectoryRead, restReadKey, type CachedRead } from './rest-cache.js';

export interface FrontCacheDeps {
  db: Pick<Database, 'orm' | 'keyring'>;
  answers: ReadCache;
  basePath: string;
  /** CORS is on (CORS_ORIGINS): a request with an Origin goes to the app, the others get `Vary: Origin`. */
  cors: boolean;
  log: Logger;
  outage: DatabaseOutage;
  metrics: Metrics | null;
}

/**
 * The REST read cache's hits (rest-cache.ts), answered ahead of the Koa app: the same answer,
 * headers, request log line and metrics, without the app's middleware chain and routers, which
 * cost more CPU than the rest of such a request together (a `GET /user/{id}` answered from the
 * cache is the one statement of the bearer lookup).
 *
 * Only a request the app would send down to its read cache unchanged is answered here: a GET of
 * a directory path, with one Host header, at most one Authorization header, no body headers at all
 * (the body reader looks at a `Content-Length: 0` too: its Content-Encoding is checked) and, with
 * CORS on, no Origin. These mirror the app's checks before its cache (app.ts: requireOneHost,
 * requireCaller, jsonBody, the CORS middleware); a check added there must be added here. Every
 * other request, and every one whose answer is not cached for its caller's scopes and directory
 * version, goes to the app as it came, with what was found out about it handed over (request id,
 * arrival time, the bearer lookup under way or done, failed included: middleware.ts, EarlyRequest),
 * so that the lookup is not sent twice. A hit is exact for the same reason as in the app: the
 * lookup read the directory version (read-cache.ts).
 */
export function answerCachedReadsFirst(deps: FrontCacheDeps, app: RequestListener): RequestListener {
  const { db, answers, basePath, cors, log, outage, metrics } = deps;

  /** Whether the app would take this request to its read cache as it is (see above). */
  const eligible = (req: IncomingMessage, path: string): boolean => {
    if (req.method !== 'GET') return false;
    if (basePath && !path.startsWith(`${basePath}/`)) return false;
    // The app trims trailing slashes before it routes (trimTrailingSlash).
    if (!isDirectoryRead(path.slice(basePath.length).replace(/\/+$/, ''))) return false;
    const { headers } = req;
    if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) return false;
    if (cors && headers.origin !== undefined) return false;
    // Counted in the raw headers: req.headersDistinct would build an object for every request.
    let hosts = 0;
    let authorizations = 0;
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i];
      if (name.length === 4 && name.toLowerCase() === 'host') hosts += 1;
      else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations += 1;
    }
    return hosts === 1 && authorizations <= 1;
  };

  const answerFrom = (cached: CachedRead, res: ServerResponse, requestId: string): void => {
    res.statusCode = 200;
    res.setHeader('X-Request-Id', requestId);
    if (cors) res.setHeader('Vary', 'Origin');
    for (const [name, value] of cached.headers) res.setHeader(name, value);
    res.setHeader('Content-Length', cached.body.length);
    res.end(cached.body);
  };

  return function answerCachedReadFirst(req, res) {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (!eligible(req, path)) return app(req, res);
    const started = process.hrtime.bigint();
    const requestId = requestIdFrom(req.headers['x-request-id'] as string | undefined);
    const lookup = authenticate(db, req.headers.authorization || undefined, clientOf(req.headers), requestId);
    let handedOver = false;
    const toApp = () => {
      if (handedOver) return;
      handedOver = true;
      handOver(req, { requestId, started, caller: lookup });
      app(req, res);
    };
    lookup
      .then((caller: Caller) => {
        const cached = answers.get<CachedRead>(caller, restReadKey(url));
        if (!cached) return toApp();
        try {
          answerFrom(cached, res, requestId);
        } catch (err) {
          // A bug: the app answers, unless part of this answer is out already.
          log.error('answering from the read cache failed', { requestId, error: (err as Error)?.name, message: (err as Error)?.message, stack: (err as Error)?.stack });
          if (res.headersSent) res.destroy();
          else toApp();
          return;
        }
        outage.succeeded();
        metrics?.answered('GET', cached.route ?? 'unmatched', 200, started, 'hit');
        logAnswered(log, { requestId, method: 'GET', route: cached.route, path, status: 200, started, readCache: 'hit' });
      }, toApp) // refused (401) or failed (503): the app answers, awaiting the same lookup
      .catch((err: Error) => log.error('request failed ahead of the app', { requestId, error: err?.name, message: err?.message, stack: err?.stack }));
  };
}
