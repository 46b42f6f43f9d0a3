import { createClient as createSseClient, type Client as SseClient } from 'graphql-sse';
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import WebSocket, { type ClientOptions } from 'ws';
import type { TestService } from './service.js';
import { waitFor } from './wait.js';

/**
 * Subscription clients against a running service, as frontends use them: graphql-ws over a real
 * WebSocket, graphql-sse over real HTTP; and a collector of what a subscription receives.
 */

/** How a WebSocket client's connection ended. */
export interface Closed {
  code: number;
  reason: string;
}

export interface WsConnection {
  client: WsClient;
  /** Resolves when the socket closes, with its close code. */
  closed: Promise<Closed>;
  /** Resolves when the server acknowledged connection_init (rejects if it closed first). */
  opened: Promise<void>;
}

export const wsUrl = (url: string) => `${url.replace(/^http/, 'ws')}/graphql`;

/**
 * A graphql-ws client that connects at once and never retries (a test wants to see each close);
 * `socket`: more options of its WebSocket (`localAddress`, to connect from another loopback address).
 */
export function wsConnect(
  url: string,
  connectionParams: Record<string, unknown> | null,
  headers: Record<string, string> = {},
  socket: ClientOptions = {},
): WsConnection {
  let closedResolve!: (closed: Closed) => void;
  const closed = new Promise<Closed>((resolve) => (closedResolve = resolve));
  let openedResolve!: () => void;
  let openedReject!: (err: Error) => void;
  const opened = new Promise<void>((resolve, reject) => {
    openedResolve = resolve;
    openedReject = reject;
  });
  opened.catch(() => {});
  class HeaderSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { ...socket, headers });
    }
  }
  const client = createWsClient({
    url: wsUrl(url),
    webSocketImpl: HeaderSocket,
    connectionParams: connectionParams ?? undefined,
    lazy: false,
    retryAttempts: 0,
    shouldRetry: () => false,
    onNonLazyError: () => {},
    on: {
      connected: () => openedResolve(),
      closed: (event) => {
        const { code, reason } = event as { code: number; reason: string };
        closedResolve({ code, reason: String(reason) });
        openedReject(new Error(`closed with ${code}`));
      },
    },
  });
  return { client, closed, opened };
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A graphql-sse client (distinct connections mode) with a token. */
export function sseConnect(url: string, token: string | null): SseClient {
  return createSseClient({
    url: `${url}/graphql`,
    headers: token === null ? {} : bearer(token),
    retryAttempts: 0,
  });
}

/**
 * The newest audit event's id (0 for none): a subscription made with `after:` it streams every
 * change committed from now on, however long it takes to start (it replays what it missed), so a
 * test needs no pause between subscribing and writing.
 */
export async function newestEventId(service: Pick<TestService, 'sql'>): Promise<string> {
  const [row] = await service.sql<{ id: string }>('select coalesce(max(id), 0)::text as id from audit_events');
  return row.id;
}

/** How many subscriptions of `operation` run on a service now (its /metrics gauge); `url`: the service's own. */
export async function runningSubscriptions(service: { url: string }, operation: string): Promise<number> {
  const metrics = await (await fetch(`${service.url}/metrics`)).text();
  return Number(new RegExp(`^realtime_subscriptions\\{operation="${operation}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0);
}

/**
 * Waits until `count` subscriptions of `operation` run on a service. For a subscription without
 * `after` (the docs' snippets): from then on it receives every event the service hands over (its
 * connection started the event source before the subscription was made).
 */
export const untilSubscriptions = (service: { url: string }, operation: string, count = 1) =>
  waitFor(`${count} ${operation} subscription(s) running`, async () => (await runningSubscriptions(service, operation)) === count);

/** What one subscription received, and ways to wait for it. */
export interface Collected {
  /** Each `next` payload: { data, errors }. */
  results: any[];
  /** When each result arrived (Date.now()), beside `results`. */
  receivedAt: number[];
  /** The error the subscription ended with (graphql-ws: an `error` message or a close), if any. */
  error: unknown;
  /** Resolves when the subscription ended (complete, error or close). */
  ended: Promise<void>;
  /** Resolves once `count` results arrived (rejects after `ms`, 10 s by default, naming what came). */
  atLeast(count: number, ms?: number): Promise<any[]>;
  stop(): void;
}

/** Subscribes with a client of either kind and collects what comes. */
export function collect(client: WsClient | SseClient, query: string, variables: Record<string, unknown> = {}): Collected {
  const results: any[] = [];
  const receivedAt: number[] = [];
  let error: unknown;
  let endedResolve!: () => void;
  const ended = new Promise<void>((resolve) => (endedResolve = resolve));
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  const stop = (client as WsClient).subscribe(
    { query, variables },
    {
      next: (value) => {
        results.push(value);
        receivedAt.push(Date.now());
        wake();
      },
      error: (err) => {
        error = err;
        endedResolve();
        wake();
      },
      complete: () => {
        endedResolve();
        wake();
      },
    },
  );
  const collected: Collected = {
    results,
    receivedAt,
    get error() {
      return error;
    },
    ended,
    async atLeast(count, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (results.length < count) {
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(
            `expected ${count} results within ${ms} ms, got ${results.length}: ${JSON.stringify(results)}${error ? ` (ended with ${JSON.stringify(error)})` : ''}`,
          );
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return results;
    },
    stop,
  };
  return collected;
}
