import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { GraphQLError, type GraphQLSchema } from 'graphql';
import type { Context } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { authenticate, clientOf } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { AppError } from '../errors.js';
import { answerOnSocket } from '../http/errors.js';
import { requestIdFrom } from '../http/request-id.js';
import type { Logger } from '../observability/log.js';
import type { Services } from '../services.js';
import { CLOSE, closeName, closeReasonOf, MAX_SUBSCRIPTIONS_PER_CONNECTION, type CloseReason, type Connection, type Hub } from './hub.js';
import { formatErrors, formatResult, prepareSubscription, subscribeFresh, subscriptionContext } from './operation.js';
import type { RealtimeContext } from './realtime.graphql.js';

/**
 * GraphQL subscriptions over WebSocket (docs/graphql.md#subscriptions): the graphql-transport-ws protocol of the
 * graphql-ws library, on upgrades of /graphql, on the HTTP server Koa serves (Koa's middleware
 * never sees an upgrade, so the checks it would make are made here):
 *
 * - the upgrade: only /graphql; a browser's Origin must be the service's own or one of
 *   CORS_ORIGINS (403 otherwise); past SUBSCRIPTIONS_MAX open connections the socket is closed
 *   with 4429;
 * - `connection_init`: its payload's `Authorization` (or `authorization`, or
 *   `headers.Authorization`) is checked as a request's header is (4401 otherwise); the connection
 *   is then known to the hub, which closes it with 4403 when its token or user ends;
 * - each `subscribe`: at most 100 per connection, and the limits HTTP requests have
 *   (src/realtime/operation.ts); errors formatted as over HTTP, with the connection's request id.
 */

/** The path upgrades are served on: the one GraphQL is served on over HTTP. */
const PATH = '/graphql';

/** What this side knows of a socket: from its upgrade on, and once its connection_init is accepted. */
interface SocketState {
  /** Its upgrade's X-Request-Id, else a new one. */
  requestId: string;
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

export function attachWebSockets(
  server: Server,
  deps: { schema: GraphQLSchema; db: Database; services: Services; hub: Hub; log: Logger; corsOrigins: Config['corsOrigins'] },
): WebSocketEndpoint {
  const { schema, db, hub, log } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const states = new WeakMap<WebSocket, SocketState>();
  const closeWith = (socket: WebSocket, state: SocketState, reason: CloseReason) => {
    state.closedFor ??= closeName(reason);
    socket.close(CLOSE[reason].code, CLOSE[reason].reason);
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const given = typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : undefined;
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== PATH) return answerOnSocket(socket, AppError.notFound(`WebSocket upgrades are served on ${PATH} only`), given);
    if (!originAllowed(req, deps.corsOrigins)) {
      return answerOnSocket(socket, new AppError('FORBIDDEN', 'this Origin may not open a socket here (CORS_ORIGINS lists those that may)'), given);
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const state: SocketState = { requestId: requestIdFrom(given) };
      const { requestId } = state;
      if (!hub.admit('ws')) {
        log.info('subscription connection refused', { transport: 'ws', requestId, reason: 'too_many' });
        return closeWith(ws, state, 'tooMany');
      }
      states.set(ws, state);
      const opened = Date.now();
      ws.once('close', (code, text) => {
        // The reason this side closed for, else what the close frame says (the client's doing).
        const reason = state.closedFor ?? closeReasonOf(code, String(text));
        state.forget?.();
        hub.release('ws', reason);
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

  const server$ = useServer<Record<string, unknown> | undefined, { socket: WebSocket; request: IncomingMessage }>(
    {
      schema,
      // graphql-ws closes a socket whose connection_init does not come within this time (4408):
      // a socket not yet authenticated holds one of SUBSCRIPTIONS_MAX places only this long.
      connectionInitWaitTimeout: 3_000,
      onConnect: async (ctx: Context<Record<string, unknown> | undefined, { socket: WebSocket; request: IncomingMessage }>) => {
        const { socket, request } = ctx.extra;
        const state = states.get(socket)!; // set at the upgrade, before graphql-ws sees the socket
        const { requestId } = state;
        let caller: Caller;
        try {
          caller = await authenticate(db, authorizationOfParams(ctx.connectionParams), clientOf(request.headers), requestId, {});
        } catch (err) {
          if (!(err instanceof AppError) || err.code !== 'UNAUTHORIZED') throw err;
          closeWith(socket, state, 'unauthorized');
          return false; // graphql-ws would close with 4403; the socket is closing with 4401 already
        }
        if (socket.readyState !== socket.OPEN) return false;
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
      },
      onSubscribe: (ctx, _id, payload) => {
        const state = states.get(ctx.extra.socket)!; // acknowledged: authenticated
        if (Object.keys(ctx.subscriptions).length > MAX_SUBSCRIPTIONS_PER_CONNECTION) {
          return [
            new GraphQLError(`at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions run on one connection: complete one first`, {
              extensions: { code: 'TOO_MANY_REQUESTS' },
            }),
          ];
        }
        // Errors go out through onError, formatted.
        return prepareSubscription(schema, payload, subscriptionContext(deps, state.caller!, state.requestId, state.realtime!));
      },
      subscribe: (args) => subscribeFresh(args),
      onNext: (ctx, _id, _payload, _args, result) => formatResult(result, states.get(ctx.extra.socket)?.requestId ?? '') ?? undefined,
      onError: (ctx, _id, _payload, errors) => formatErrors(errors, states.get(ctx.extra.socket)?.requestId ?? ''),
    },
    wss,
    // Keep-alive: a ping every 12 s; a socket that does not answer with a pong in 12 s more is ended.
    12_000,
  );

  return {
    async close(ms) {
      hub.closeAll(); // subscriptions' connections, SSE streams too: 1001 / SHUTTING_DOWN
      // The sockets not yet authenticated: 1001 too. A peer that does not answer the closing
      // handshake within `ms` is cut off.
      const disposed = server$.dispose();
      const timer = new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
      await Promise.race([disposed, timer]);
      for (const client of wss.clients) client.terminate();
    },
  };
}
