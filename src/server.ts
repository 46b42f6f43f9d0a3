import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReadCache } from './db/read-cache.js';
import { createApp } from './app.js';
import { answerClientError, answerConnect, MAX_HEADER_BYTES } from './http/errors.js';
import { ensureFirstToken } from './auth/bootstrap.js';
import type { Config } from './config.js';
import type { QueryListener } from '../mikro-orm.config.js';
import { openDatabase, type Database } from './db/database.js';
import { createGraphQL } from './graphql/server.js';
import { createServices } from './services.js';
import { createLogger, type Logger } from './shared/log.js';

/** How long a stop waits for the database pool (and the embedded database) to close. */
const DB_CLOSE_TIMEOUT_MS = 5_000;

/** Whether `work` settles within `ms` (false: the time ran out first; `work` goes on). */
const settlesWithin = (work: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([work.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);

export interface RunningService {
  url: string;
  db: Database;
  log: Logger;
  /** The first access token, when this start created one (no BOOTSTRAP_TOKEN, no token yet). */
  firstToken: string | null;
  stop(): Promise<void>;
}

/**
 * Opens the database, runs the migrations, makes sure a first token exists, and serves HTTP.
 * `stop()` is the graceful stop: no new connections, idle ones closed, in-flight requests get
 * `shutdownTimeoutMs` to finish (each answer closing its connection), then the pool (and the
 * embedded database) close.
 */
export async function startService(
  config: Config,
  log: Logger = createLogger(config.logLevel),
  options: { onQuery?: QueryListener } = {},
): Promise<RunningService> {
  const db = await openDatabase(config, { onQuery: options.onQuery });
  let server: Server | undefined;
  try {
    const ran = await db.migrate((count) => log.info('plain tokens encrypted', { count }));
    if (ran.length) log.info('migrations applied', { migrations: ran });
    const services = createServices(db.orm, db.keyring);
    const readCache = createReadCache(config.readCacheMb);
    const graphql = await createGraphQL({ db, services, log, introspection: config.graphqlIntrospection, readCache });
    const listener = createApp({ config, db, services, log, graphql, readCache });
    // 64 KiB of headers (Node's default is 16): room for a list filter at its limits (1000 values in
    // `in`) in the query string. Koa 3: the callback is attached once every middleware is in place.
    // requireHostHeader: false: a request without Host reaches the app, which answers the JSON 400.
    server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false });
    // Once stopping, every answer closes its connection (those being prepared included): a
    // keep-alive client cannot hold the process open by sending more requests, and the stop ends
    // when the last answer is out rather than when idle connections time out.
    let stopped: Promise<void> | undefined; // set by the first stop()
    const unanswered = new Set<ServerResponse>();
    const closeAfterAnswer = (res: ServerResponse) => {
      res.shouldKeepAlive = false; // Node then writes "Connection: close" and ends the socket after it
    };
    server.on('request', (_req, res) => {
      if (stopped) return closeAfterAnswer(res);
      unanswered.add(res);
      res.once('close', () => unanswered.delete(res)); // emitted once answered, or once the connection drops
    });
    server.on('request', listener);
    server.on('clientError', answerClientError);
    server.on('connect', answerConnect);
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(config.port, config.host, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `http://${host}:${port}`;
    log.info('listening', { url, database: db.kind });
    // Only once the service listens: a start that fails before (the port taken, say) creates no
    // token, so the next start still makes and prints the first one.
    const firstToken = await ensureFirstToken(db.orm, services, config.bootstrapToken);
    const listening = server;
    return {
      url,
      db,
      log,
      firstToken,
      stop: () =>
        (stopped ??= (async () => {
          for (const res of unanswered) closeAfterAnswer(res);
          const closed = new Promise<void>((resolve) => listening.close(() => resolve()));
          listening.closeIdleConnections();
          await settlesWithin(closed, config.shutdownTimeoutMs);
          listening.closeAllConnections();
          await graphql.stop();
          // A pool whose connections hang (a network gone silent) must not hold the stop forever.
          const dbClosed = db.close().catch((err: Error) => log.warn('database close failed', { error: err?.name }));
          if (!(await settlesWithin(dbClosed, DB_CLOSE_TIMEOUT_MS))) log.warn('database close timed out', { timeoutMs: DB_CLOSE_TIMEOUT_MS });
          log.info('stopped');
        })()),
    };
  } catch (err) {
    server?.close();
    await db.close();
    throw err;
  }
}
