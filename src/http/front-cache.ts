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
 * a directory path, with one Host header, at most one Authorization header, no body and (with CORS
 * on) no Origin. Every other request, and every one whose answer is not cached for its caller's
 * scopes and directory version, goes to the app as it came, with its request id and its bearer
 * lookup (under way or done, failed included) handed over, so that it is not sent twice. A hit is
 * exact for the same reason as in the app: the lookup read the directory version (read-cache.ts).
 */
export function answerCachedReadsFirst(deps: FrontCacheDeps, app: RequestListener): RequestListener {
  const { db, answers, basePath, cors, log, outage, metrics } = deps;

  const eligible = (req: IncomingMessage, path: string): boolean => {
    if (req.method !== 'GET') return false;
    if (basePath && !path.startsWith(`${basePath}/`)) return false;
    if (!isDirectoryRead(path.slice(basePath.length))) return false;
    const { headers } = req;
    // No body (as Koa's ctx.request.length and the body reader see it).
    if (~~(headers['content-length'] ?? 0) || headers['transfer-encoding'] !== undefined) return false;
    if (cors && headers.origin !== undefined) return false;
    const distinct = req.headersDistinct;
    return distinct.host?.length === 1 && (distinct.authorization?.length ?? 0) <= 1;
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
    const toApp = () => {
      handOver(req, { requestId, caller: lookup });
      app(req, res);
    };
    lookup
      .then((caller: Caller) => {
        const cached = answers.get<CachedRead>(caller, restReadKey(url));
        if (!cached) return toApp();
        answerFrom(cached, res, requestId);
        outage.succeeded();
        metrics?.answered('GET', cached.route ?? 'unmatched', 200, started, 'hit');
        logAnswered(log, { requestId, method: 'GET', route: cached.route, path, status: 200, started, readCache: 'hit' });
      }, toApp) // refused (401) or failed (503): the app answers, awaiting the same lookup
      .catch((err: Error) => {
        // A bug here: the app answers the request if nothing has been written yet.
        log.error('answering from the read cache failed', { requestId, error: err?.name, message: err?.message, stack: err?.stack });
        if (res.headersSent) res.destroy();
        else toApp();
      });
  };
}
