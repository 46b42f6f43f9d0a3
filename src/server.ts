import { TokenHints } from './auth/checked-sql.js';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createApp } from './app.js';
import { Slots } from './shared/slots.js';
import { ensureFirstToken } from './tokens/bootstrap.js';
import type { Config } from './config.js';
import { openDatabase, type Database } from './db/database.js';
import type { StatementListener } from './db/sql.js';
import { createGate } from './graphql/gate.js';
import { createGraphQL, type GraphQLEndpoint } from './graphql/server.js';
import { answerOnSocket, clientErrorAnswer, CONNECT_REFUSED, MAX_HEADER_BYTES } from './http/errors.js';
import { createLogger, type Logger } from './observability/log.js';
import { createMetrics, type Metrics } from './http/metrics.js';
import { createReadCache } from './read-cache/store.js';
import { openEventSource, type EventSource } from './realtime/events.js';
import { Hub } from './realtime/hub.js';
import { sseEndpoint } from './realtime/sse.js';
import { attachWebSockets } from './realtime/ws.js';
import type { AnyModule, Stoppable } from './module/module.js';
import { checkLiveCounts, databaseSchemaOf, startModules } from './module/registry.js';
import { MODULES } from './modules.js';
import { createServices, serviceSchema, serviceSubgraphSchema, type Services } from './services.js';

/** No work beside the requests (a start stopped before it got there). */
const NO_WORK: Stoppable = { stop: async () => {} };

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

/** How often a service started with MIGRATE=false looks whether the migrations have run. */
const MIGRATION_POLL_MS = 2_000;

/** Resolves once the database has no pending migration (or `gaveUp` says to stop waiting). */
async function untilMigrated(db: Database, log: Logger, gaveUp: () => boolean): Promise<void> {
  let told = false;
  while (!(await db.ready()) && !gaveUp()) {
    if (!told) log.warn('waiting for the migrations (MIGRATE=false): run npm run migrate', {});
    told = true;
    await new Promise((resolve) => setTimeout(resolve, MIGRATION_POLL_MS));
  }
}

/** Methods whose requests change nothing (RFC 9110 §9.2.1): pipelined ones may run side by side. */
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The requests of one connection, in the order they came. HTTP/1.1 lets a client send requests
 * before the answers to earlier ones (pipelining), and Node hands them all over at once; RFC 9112
 * §9.3.2 allows processing them in parallel only when they are safe. So a request waits for every
 * earlier request of its connection to be answered when it or one of those is unsafe (a GET sent
 * after a PATCH reads what the PATCH wrote); safe ones after safe ones run at once.
 */
class Connection {
  /**
   * Answers still being made (not a Set: src/shared/slots.ts says why), and whether an unsafe
   * request is among them. Each is an Answer, whose promise is made only when something waits for
   * it (a request behind an unsafe one, a refused request's error answer): most answers are awaited
   * by nothing, and a promise and its resolver a request were a measurable share of a read's cost.
   */
  private readonly pending = new Slots<Answer>();
  private unsafe = 0;

  /** `closed`: what else is to be done when the answer is out (the server's count): one listener for both. */
  admit(req: IncomingMessage, res: ServerResponse, run: () => void, closed: (() => void) | null): void {
    const safe = SAFE.has(req.method ?? '');
    const before = safe && this.unsafe === 0 ? null : this.pending.values();
    const answer = new Answer();
    const slot = this.pending.add(answer);
    if (!safe) this.unsafe += 1;
    // emitted once answered, or once the connection drops
    res.once('close', () => {
      closed?.();
      this.pending.release(slot);
      if (!safe) this.unsafe -= 1;
      answer.settle();
    });
    if (before === null || before.length === 0) run();
    else void Promise.all(before.map((earlier) => earlier.out())).then(run);
  }

  /** Resolves when every answer under way on the connection is out. */
  idle(): Promise<void> {
    return Promise.all(this.pending.values().map((answer) => answer.out())).then(() => undefined);
  }
}

/** What `out()` answers for an answer already out. */
const OUT = Promise.resolve();

/** One answer under way: settled once it is out; a promise of that only for whoever asks. */
class Answer {
  private resolve: (() => void) | null = null;
  private promise: Promise<void> | null = null;

  settle(): void {
    if (this.resolve) this.resolve();
    else this.promise = OUT;
  }

  /** Resolves once the answer is out. */
  out(): Promise<void> {
    return (this.promise ??= new Promise<void>((resolve) => (this.resolve = resolve)));
  }
}

/**
 * Opens the database, runs the migrations, makes sure a first token exists, and serves HTTP.
 * `stop()` is the graceful stop: no new connections, idle ones closed, in-flight requests get
 * `shutdownTimeoutMs` to finish (each answer closing its connection), then the pool (and the
 * embedded database) close.
 */
export interface StartOptions {
  onStatement?: StatementListener;
  /** Whether a stop was asked for while starting (a signal): a start waiting for its migrations gives up. */
  stopRequested?: () => boolean;
  /** The modules to serve: src/modules.ts's MODULES, unless a test adds one of its own. */
  modules?: readonly AnyModule[];
  /** The clock of the read cache's one-second windows (milliseconds; performance.now by default): tests step it by hand. */
  readCacheClock?: () => number;
}

/**
 * The answers a server makes: each request admitted on its connection in the order HTTP/1.1
 * allows (class Connection), counted until answered; once stopping, every answer closes its
 * connection (those being prepared included): a keep-alive client cannot hold the process open by
 * sending more requests, and the stop ends when the last answer is out rather than when idle
 * connections time out.
 */
class Answers {
  private stopping = false;
  /** The answers under way (not a Set: src/shared/slots.ts says why). */
  private readonly unanswered = new Slots<ServerResponse>();
  private readonly connections = new WeakMap<Socket, Connection>();
  /** Set while a stop waits for the answers under way. */
  private lastAnswered: (() => void) | null = null;

  /** `isStream`: an event stream (SSE) is no answer a stop waits for: it ends with the subscriptions. */
  constructor(private readonly isStream: (res: ServerResponse) => boolean) {}

  private static closeAfter(res: ServerResponse): void {
    res.shouldKeepAlive = false; // Node then writes "Connection: close" and ends the socket after it
  }

  private pending(): boolean {
    return this.unanswered.values().some((r) => !this.isStream(r));
  }

  admit(req: IncomingMessage, res: ServerResponse, listener: RequestListener): void {
    const slot = this.stopping ? null : this.unanswered.add(res);
    if (slot === null) Answers.closeAfter(res);
    let connection = this.connections.get(req.socket);
    if (!connection) this.connections.set(req.socket, (connection = new Connection()));
    connection.admit(req, res, () => void listener(req, res), slot === null ? null : () => this.answered(slot));
  }

  private answered(slot: number): void {
    this.unanswered.release(slot);
    if (this.lastAnswered && !this.pending()) this.lastAnswered();
  }

  /** The socket's connection, when a request came on it. */
  connectionOf(socket: Socket): Connection | undefined {
    return this.connections.get(socket);
  }

  /** From now on every answer closes its connection; resolves once no answer but event streams is under way. */
  stop(): Promise<void> {
    this.stopping = true;
    for (const res of this.unanswered.values()) Answers.closeAfter(res);
    return new Promise<void>((resolve) => {
      this.lastAnswered = resolve;
      if (!this.pending()) resolve();
    });
  }
}

/** What serves HTTP: the server, its answers, GraphQL (over HTTP and SSE), the WebSockets, and the event source they stream from. */
interface Http {
  server: Server;
  answers: Answers;
  graphql: GraphQLEndpoint;
  webSockets: ReturnType<typeof attachWebSockets>;
  events: EventSource;
  metrics: Metrics | null;
  /** /readyz answers 503 from now on (the drain before a stop). */
  drain(): void;
}

/**
 * Builds what serves HTTP on the database and the services: the read cache, metrics, the event
 * source and its hub (docs/graphql.md#subscriptions: one for the instance, served over SSE by the
 * GraphQL endpoint and over WebSocket on the same server), GraphQL, the Koa app, and the HTTP server.
 */
async function buildHttp(config: Config, log: Logger, db: Database, services: Services, modules: readonly AnyModule[], options: StartOptions): Promise<Http> {
  const readCache = createReadCache(config.readCacheMb, config.readCacheAsideWrites, options.readCacheClock);
  // What the instance's token checks found, for reads to check their token in their own first statement (REST and GraphQL alike).
  const tokenHints = new TokenHints(db);
  const metrics = config.metrics ? createMetrics(db) : null;
  const events = openEventSource({ sql: db.sql, log, outage: db.outage });
  try {
    const hub = new Hub(events, db.sql, log, config.subscriptionsMax, metrics?.realtime ?? null);
    // One GraphQL gate for HTTP, WebSocket and SSE: the same checks and words on each, on the schema
    // /graphql serves (the subgraph's with GRAPHQL_FEDERATION: subscriptions are in it too).
    const gate = await createGate({
      schema: config.graphqlFederation ? await serviceSubgraphSchema(modules) : await serviceSchema(modules),
      introspection: config.graphqlIntrospection,
      log,
      metrics: metrics?.trustedDocuments ?? null,
      trustedDocuments: { path: config.graphqlTrustedDocuments, mode: config.graphqlTrustedDocumentsMode },
    });
    const sse = sseEndpoint({ gate, db, services, hub, log });
    const graphql = await createGraphQL({
      db,
      services,
      log,
      introspection: config.graphqlIntrospection,
      federation: config.graphqlFederation,
      gate,
      readCache,
      tokenHints,
      sse,
    });
    let draining = false;
    const listener: RequestListener = createApp({ config, db, services, modules, log, metrics, graphql, readCache, tokenHints, stopping: () => draining });
    // 64 KiB of headers (Node's default is 16): room for a list filter at its limits (1000 values in
    // `in`) in the query string. requireHostHeader: false: a request without Host reaches the app,
    // which answers the JSON 400.
    const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false });
    const webSockets = attachWebSockets(server, {
      gate,
      db,
      services,
      hub,
      log,
      corsOrigins: config.corsOrigins,
      waiting: { perAddress: config.subscriptionsWaitingPerAddress, max: config.subscriptionsWaiting, initTimeoutMs: config.subscriptionsInitTimeoutMs },
    });
    const answers = new Answers((res) => sse.isStream(res));
    serveOn(server, answers, listener);
    return { server, answers, graphql, webSockets, events, metrics, drain: () => (draining = true) };
  } catch (err) {
    await events.close();
    throw err;
  }
}

/** The server's handling of connections: requests, requests Node's parser refuses, CONNECT, half-closed connections. */
function serveOn(server: Server, answers: Answers, listener: RequestListener): void {
  // A client may half-close its side of the connection once its request is sent (a FIN): its
  // answers are still written, then the connection ends. Node's HTTP server ends a connection as
  // soon as it reads the FIN unless this server field is on; it has no option of the constructor
  // for it (the field is Node's own, public though not in its documentation; a test guards it).
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => answers.admit(req, res, listener));
  // A request Node's parser refuses (a header with control characters, headers over 64 KiB, bytes
  // past a request's Content-Length that are no request) still gets the JSON error body, after
  // the answers to the requests before it on the connection: the connection then closes (the
  // parser cannot know where a next request would start).
  server.on('clientError', (err: Error & { code?: string }, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    const connection = answers.connectionOf(socket);
    void (connection ? connection.idle() : Promise.resolve()).then(() => answerOnSocket(socket, clientErrorAnswer(err)));
  });
  // CONNECT (a proxy's method) reaches Node's 'connect' event, not Koa: this service is no proxy.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const given = req.headers['x-request-id'];
    answerOnSocket(socket, CONNECT_REFUSED, typeof given === 'string' ? given : undefined);
  });
  server.keepAliveTimeout = 5_000;
}

/** Listens on HOST:PORT; answers the service's URL. */
async function listen(server: Server, config: Pick<Config, 'host' | 'port'>): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${port}`;
}

/**
 * The graceful stop. Draining first: /readyz says 503 so that a balancer takes the instance out,
 * while every request, new connections' too, is still served; then no new connections, idle ones
 * closed, the requests under way answered (each closing its connection), then the subscriptions
 * end (1001 on WebSocket, SHUTTING_DOWN on SSE), which lets their connections close too; then the
 * modules' work beside the requests, the event source, GraphQL and the pool.
 */
async function stopGracefully(config: Config, log: Logger, db: Database, http: Http, work: Stoppable): Promise<void> {
  if (config.shutdownDrainMs > 0) {
    http.drain();
    log.info('draining', { ms: config.shutdownDrainMs });
    await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
  }
  const { server } = http;
  const requestsDone = http.answers.stop();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const started = Date.now();
  await settlesWithin(requestsDone, config.shutdownTimeoutMs);
  await http.webSockets.close(Math.max(1_000, config.shutdownTimeoutMs - (Date.now() - started)));
  await settlesWithin(closed, Math.max(0, config.shutdownTimeoutMs - (Date.now() - started)));
  server.closeAllConnections();
  // The modules' work (webhooks: deliveries under way end, within WEBHOOK_TIMEOUT_MS, and the
  // endpoints are let go for other instances), before the event source it reads.
  await work.stop();
  await http.events.close();
  await http.graphql.stop();
  // A pool whose connections hang (a network gone silent) must not hold the stop forever.
  const dbClosed = db.close().catch((err: Error) => log.warn('database close failed', { error: err?.name }));
  if (!(await settlesWithin(dbClosed, DB_CLOSE_TIMEOUT_MS))) log.warn('database close timed out', { timeoutMs: DB_CLOSE_TIMEOUT_MS });
  log.info('stopped');
}

export async function startService(config: Config, log: Logger = createLogger(config.logLevel), options: StartOptions = {}): Promise<RunningService> {
  const modules = options.modules ?? MODULES;
  const db = await openDatabase(config, { schema: databaseSchemaOf(modules), onStatement: options.onStatement, log });
  let http: Http | undefined;
  try {
    if (config.migrate) {
      const ran = await db.migrate((note) => log.info(note));
      if (ran.length) log.info('migrations applied', { migrations: ran });
      await checkLiveCounts(db.sql, modules);
    }
    const services = createServices(db.keyring, { config, modules });
    http = await buildHttp(config, log, db, services, modules, options);
    const url = await listen(http.server, config);
    log.info('listening', { url, database: db.kind });
    // Only once the service listens: a start that fails before (the port taken, say) creates no
    // token, so the next start still makes and prints the first one.
    // MIGRATE=false: the migrations are a step of their own (`npm run migrate`); until it has run,
    // the service listens and /readyz answers 503.
    if (!config.migrate) {
      await untilMigrated(db, log, () => options.stopRequested?.() ?? false);
      if (!options.stopRequested?.()) await checkLiveCounts(db.sql, modules);
    }
    // Once, however many instances start together: under the startup lock.
    const firstToken = options.stopRequested?.() ? null : await db.exclusive(() => ensureFirstToken(db.sql, services, config.bootstrapToken));
    const running = http;
    // The modules' work beside the requests (webhooks: the deliveries), once the database is migrated.
    const work = options.stopRequested?.()
      ? NO_WORK
      : await startModules(modules, services, { config, db, events: running.events, log, metrics: running.metrics?.registry ?? null });
    let stopped: Promise<void> | undefined; // set by the first stop()
    return { url, db, log, firstToken, stop: () => (stopped ??= stopGracefully(config, log, db, running, work)) };
  } catch (err) {
    http?.server.close();
    await http?.events.close();
    await db.close();
    throw err;
  }
}
