import type { IncomingMessage, Server } from 'node:http';
import { isIPv6 } from 'node:net';
import type { Duplex } from 'node:stream';
import { GraphQLError } from 'graphql';
import type { Context, ServerOptions } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { authenticate, clientOf } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { AppError } from '../errors.js';
import { answerOnSocket } from '../http/errors.js';
import { requestIdFrom } from '../http/request-id.js';
import type { Logger } from '../observability/log.js';
import type { ServiceContainer as Services } from '../graphql/context.js';
import { CLOSE, closeName, closeReasonOf, MAX_SUBSCRIPTIONS_PER_CONNECTION, type CloseReason, type Connection, type Hub } from './hub.js';
import type { Gate } from '../graphql/gate.js';
import { formatResult, subscribeFresh, subscriptionArgs, subscriptionContext } from './operation.js';
import type { RealtimeContext } from './realtime.graphql.js';

/**
 * GraphQL subscriptions over WebSocket (docs/graphql.md#subscriptions): the graphql-transport-ws protocol of the
 * graphql-ws library, on upgrades of /graphql, on the HTTP server Koa serves (Koa's middleware
 * never sees an upgrade, so the checks it would make are made here):
 *
 * - the upgrade: only /graphql; a browser's Origin must be the service's own or one of
 *   CORS_ORIGINS (403 otherwise); the socket then waits for its connection_init, as one of at most
 *   SUBSCRIPTIONS_WAITING_PER_ADDRESS from its client's address and SUBSCRIPTIONS_WAITING in all
 *   (1013 past either), for at most SUBSCRIPTIONS_INIT_TIMEOUT_MS (4408);
 * - `connection_init`: its payload's `Authorization` (or `authorization`, or
 *   `headers.Authorization`) is checked as a request's header is (4401 otherwise); only then does
 *   the connection take one of SUBSCRIPTIONS_MAX places (4429 past it), so that sockets that never
 *   authenticate cannot keep those who do out; it is then known to the hub, which closes it with
 *   4403 when its token or user ends;
 * - each `subscribe`: at most 100 per connection, then the GraphQL gate (src/graphql/gate.ts), as
 *   every HTTP request; errors formatted as over HTTP, with the connection's request id.
 */

/** The path upgrades are served on: the one GraphQL is served on over HTTP. */
const PATH = '/graphql';
/**
 * How long a refused socket, counted nowhere, may take to answer its close frame before it is cut
 * off (ws itself would wait 30 s for a peer that does not answer).
 */
const REFUSED_GRACE_MS = 1_000;

/** What this side knows of a socket: from its upgrade on, and once its connection_init is accepted. */
interface SocketState {
  /** Its upgrade's X-Request-Id, else a new one. */
  requestId: string;
  /** Its client's address, as the waiting sockets are counted (addressKey). */
  address: string;
  /** Whether it is counted among the sockets waiting for their connection_init. */
  waiting: boolean;
  /** Whether it holds one of SUBSCRIPTIONS_MAX places (its token was accepted). */
  admitted: boolean;
  /** Why this side closed it (the peer's close frame may say otherwise, or nothing). */
  closedFor?: string;
  /** Once authenticated: the caller, its subscriptions' access to the hub, and how the hub forgets it. */
  caller?: Caller;
  realtime?: RealtimeContext;
  forget?: () => void;
}

export interface WebSocketEndpoint {
  /**
   * The graceful stop of subscriptions: every connection closed (1001; the hub's SSE streams end
   * too), no more upgrades; sockets still open after `ms` are cut off.
   */
  close(ms: number): Promise<void>;
}

/** The bearer value of a connection_init payload: `Authorization`, `authorization` or `headers.Authorization`. */
export function authorizationOfParams(params: unknown): string | undefined {
  if (typeof params !== 'object' || params === null) return undefined;
  const record = params as Record<string, unknown>;
  const headers = typeof record.headers === 'object' && record.headers !== null ? (record.headers as Record<string, unknown>) : {};
  const value = record.Authorization ?? record.authorization ?? headers.Authorization ?? headers.authorization;
  return typeof value === 'string' ? value : undefined;
}

/** Whether a browser page of `origin` may open a socket: the service's own origin, or one CORS_ORIGINS allows. */
function originAllowed(req: IncomingMessage, origins: Config['corsOrigins']): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true; // not a browser: no page to guard against
  if (origins === '*' || (origins !== null && origins.includes(origin))) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/**
 * The key a client's sockets are counted under: an IPv4 address itself (an IPv4-mapped IPv6 one
 * too), an IPv6 address by its /64, the block one subscriber line is given (its other addresses
 * are the client's for the asking). Hand-written: expanding `::` is all it takes, and no
 * dependency of the service parses addresses.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  // The zone goes, and an embedded IPv4 address is the last 32 bits, beyond the /64.
  const bare = address.replace(/%.*$/, '').replace(/:\d+\.\d+\.\d+\.\d+$/, ':0:0');
  const groups = (text: string | undefined) => (text ? text.split(':') : []);
  const [head, tail] = bare.split('::');
  const parts =
    tail === undefined ? groups(head) : [...groups(head), ...Array<string>(8 - groups(head).length - groups(tail).length).fill('0'), ...groups(tail)];
  return `${parts
    .slice(0, 4)
    .map((part) => parseInt(part, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * The sockets waiting for their connection_init, counted by client address and in all: bounded,
 * so that sockets that never authenticate can neither fill memory nor keep a client of another
 * address from authenticating. (Counts in a map: no library fits better.)
 */
class WaitingSockets {
  private readonly byAddress = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly perAddress: number,
    private readonly max: number,
  ) {}

  /** Counts a socket from `address` in, or says why not. */
  enter(address: string): CloseReason | null {
    const mine = this.byAddress.get(address) ?? 0;
    if (mine >= this.perAddress) return 'waitingFromAddress';
    if (this.total >= this.max) return 'waiting';
    this.byAddress.set(address, mine + 1);
    this.total++;
    return null;
  }

  leave(address: string): void {
    const mine = (this.byAddress.get(address) ?? 1) - 1;
    if (mine > 0) this.byAddress.set(address, mine);
    else this.byAddress.delete(address);
    this.total--;
  }
}

/** The bounds of sockets not yet authenticated (src/config.ts). */
export interface WaitingLimits {
  perAddress: number;
  max: number;
  /** How long a socket may wait before its connection_init. */
  initTimeoutMs: number;
}

/** What the WebSocket endpoint works with (src/server.ts). */
interface WebSocketDeps {
  gate: Gate;
  db: Database;
  services: Services;
  hub: Hub;
  log: Logger;
  corsOrigins: Config['corsOrigins'];
  waiting: WaitingLimits;
}

/** A connection_init payload (graphql-ws): where the token is (authorizationOfParams). */
type InitPayload = Record<string, unknown> | undefined;
type SocketContext = Context<InitPayload, Extra>;

/**
 * The server's sockets as this side knows them: each one's state from its upgrade on, and the
 * count of those waiting for their connection_init.
 */
class Sockets {
  private readonly states = new WeakMap<WebSocket, SocketState>();
  private readonly waiting: WaitingSockets;

  constructor(limits: WaitingLimits) {
    this.waiting = new WaitingSockets(limits.perAddress, limits.max);
  }

  /** Counts an upgraded socket among those waiting (or says why not), and keeps its state. */
  enter(socket: WebSocket, state: SocketState): CloseReason | null {
    const refused = this.waiting.enter(state.address);
    if (refused) return refused;
    state.waiting = true;
    this.states.set(socket, state);
    return null;
  }

  /** A socket's state: set at its upgrade, before graphql-ws sees the socket. */
  stateOf(socket: WebSocket): SocketState | undefined {
    return this.states.get(socket);
  }

  /** The socket no longer waits for its connection_init (authenticated, or closed). */
  stopWaiting(state: SocketState): void {
    if (!state.waiting) return;
    state.waiting = false;
    this.waiting.leave(state.address);
  }
}

function closeWith(socket: WebSocket, state: SocketState, reason: CloseReason): void {
  state.closedFor ??= closeName(reason);
  socket.close(CLOSE[reason].code, CLOSE[reason].reason);
}

/** Closes a socket that is counted nowhere: one that does not answer its close frame is cut off. */
function refuse(socket: WebSocket, state: SocketState, reason: CloseReason): void {
  closeWith(socket, state, reason);
  setTimeout(() => socket.terminate(), REFUSED_GRACE_MS).unref();
}

/**
 * Connection admission at the upgrade: only /graphql, from an allowed Origin (HTTP errors before
 * the upgrade), then one of the places waiting for a connection_init (1013 past them); the close
 * of an admitted socket is logged and gives its place back.
 */
function admitUpgrades(server: Server, wss: WebSocketServer, sockets: Sockets, deps: WebSocketDeps): void {
  const { hub, log } = deps;
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const given = typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : undefined;
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== PATH) return answerOnSocket(socket, AppError.notFound(`WebSocket upgrades are served on ${PATH} only`), given);
    if (!originAllowed(req, deps.corsOrigins)) {
      return answerOnSocket(socket, new AppError('FORBIDDEN', 'this Origin may not open a socket here (CORS_ORIGINS lists those that may)'), given);
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const state: SocketState = { requestId: requestIdFrom(given), address: addressKey(req.socket.remoteAddress ?? ''), waiting: false, admitted: false };
      const { requestId } = state;
      const refused = sockets.enter(ws, state);
      if (refused) {
        const reason = closeName(refused);
        log.info('subscription connection refused', { transport: 'ws', requestId, reason });
        hub.dismissed('ws', reason);
        return refuse(ws, state, refused);
      }
      const opened = Date.now();
      ws.once('close', (code, text) => {
        // The reason this side closed for, else what the close frame says (the client's doing).
        const reason = state.closedFor ?? closeReasonOf(code, String(text));
        sockets.stopWaiting(state);
        state.forget?.();
        if (state.admitted) hub.release('ws', reason);
        else hub.dismissed('ws', reason);
        const tokenId = state.caller?.tokenId;
        log.info('subscription connection closed', {
          transport: 'ws',
          requestId,
          ...(tokenId ? { tokenId } : {}),
          code,
          reason,
          seconds: Math.round((Date.now() - opened) / 1000),
        });
      });
      wss.emit('connection', ws, req);
    });
  });
}

/**
 * A connection_init: its token authenticated as a request's (4401 otherwise), then one of
 * SUBSCRIPTIONS_MAX places (4429 past it), then known to the hub. False: refused (the socket is
 * closing with its own code already).
 */
async function acceptInit(ctx: SocketContext, sockets: Sockets, deps: WebSocketDeps): Promise<boolean> {
  const { db, hub, log } = deps;
  const { socket, request } = ctx.extra;
  const state = sockets.stateOf(socket)!;
  const { requestId } = state;
  let caller: Caller;
  try {
    caller = await authenticate(db, { authorization: authorizationOfParams(ctx.connectionParams), client: clientOf(request.headers), requestId });
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'UNAUTHORIZED') throw err;
    closeWith(socket, state, 'unauthorized');
    return false; // graphql-ws would close with 4403; the socket is closing with 4401 already
  }
  if (socket.readyState !== socket.OPEN) return false;
  // Authenticated: no longer waiting, and now it counts against SUBSCRIPTIONS_MAX.
  sockets.stopWaiting(state);
  if (!hub.admit('ws')) {
    log.info('subscription connection refused', { transport: 'ws', requestId, tokenId: caller.tokenId, reason: 'too_many' });
    refuse(socket, state, 'tooMany');
    return false;
  }
  state.admitted = true;
  const connection: Connection = {
    tokenId: caller.tokenId,
    userId: caller.userId,
    transport: 'ws',
    close: (why: CloseReason) => closeWith(socket, state, why),
  };
  state.caller = caller;
  state.realtime = { stream: (operation, filter, after) => hub.stream(operation, filter, after, () => connection.close('slow')) };
  const forget = await hub.addConnection(connection);
  // Closed meanwhile: its close handler found nothing to forget yet.
  if (socket.readyState !== socket.OPEN) {
    forget();
    return false;
  }
  state.forget = forget;
  log.info('subscription connection opened', { transport: 'ws', requestId, tokenId: caller.tokenId, userId: caller.userId });
  return true;
}

/**
 * graphql-ws's server options: the connection_init's wait and acceptance, each subscribe through
 * the gate (at most MAX_SUBSCRIPTIONS_PER_CONNECTION at once), results and errors formatted by it.
 */
function graphqlWsOptions(sockets: Sockets, deps: WebSocketDeps): ServerOptions<InitPayload, Extra> {
  const { gate } = deps;
  const requestIdOf = (ctx: SocketContext) => sockets.stateOf(ctx.extra.socket)?.requestId ?? '';
  return {
    schema: gate.schema,
    // graphql-ws closes a socket whose connection_init does not come within this time (4408):
    // a socket not yet authenticated holds one of the waiting places only this long.
    connectionInitWaitTimeout: deps.waiting.initTimeoutMs,
    onConnect: (ctx) => acceptInit(ctx, sockets, deps),
    onSubscribe: (ctx, _id, payload) => {
      const state = sockets.stateOf(ctx.extra.socket)!; // acknowledged: authenticated
      if (Object.keys(ctx.subscriptions).length > MAX_SUBSCRIPTIONS_PER_CONNECTION) {
        return [
          new GraphQLError(`at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions run on one connection: complete one first`, {
            extensions: { code: 'TOO_MANY_REQUESTS' },
          }),
        ];
      }
      // Refusals go out through onError, formatted.
      const verdict = gate.admit(payload, state.caller!, 'ws', state.requestId);
      if (verdict.kind !== 'admitted') return [...verdict.errors];
      return subscriptionArgs(gate.schema, verdict, subscriptionContext(deps, state.caller!, state.requestId, state.realtime!));
    },
    subscribe: (args) => subscribeFresh(args),
    onNext: (ctx, _id, _payload, _args, result) => formatResult(gate, result, requestIdOf(ctx)) ?? undefined,
    onError: (ctx, _id, _payload, errors) => gate.format(errors, requestIdOf(ctx)),
  };
}

export function attachWebSockets(server: Server, deps: WebSocketDeps): WebSocketEndpoint {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const sockets = new Sockets(deps.waiting);
  admitUpgrades(server, wss, sockets, deps);
  // Keep-alive: a ping every 12 s; a socket that does not answer with a pong in 12 s more is ended.
  const graphqlWs = useServer(graphqlWsOptions(sockets, deps), wss, 12_000);
  return {
    async close(ms) {
      deps.hub.closeAll(); // subscriptions' connections, SSE streams too: 1001 / SHUTTING_DOWN
      // The sockets not yet authenticated: 1001 too. A peer that does not answer the closing
      // handshake within `ms` is cut off.
      const disposed = graphqlWs.dispose();
      const timer = new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
      await Promise.race([disposed, timer]);
      for (const client of wss.clients) client.terminate();
    },
  };
}
