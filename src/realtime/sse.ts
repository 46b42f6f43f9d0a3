import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { GraphQLError, type ExecutionResult } from 'graphql';
import { createHandler } from 'graphql-sse';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import { AppError } from '../errors.js';
import type { GraphQLContext } from '../graphql/context.js';
import type { Gate, Verdict } from '../graphql/gate.js';
import type { AppContext } from '../http/context.js';
import type { Logger } from '../observability/log.js';
import type { ServiceContainer as Services } from '../graphql/context.js';
import { CLOSE, closeName, type CloseReason, type Connection, type Hub } from './hub.js';
import { EventResults, formatResult, subscribeFresh, subscriptionArgs, subscriptionContext } from './operation.js';
import type { RealtimeContext } from './realtime.graphql.js';

/**
 * GraphQL subscriptions over Server-Sent Events (docs/graphql.md#subscriptions): the graphql-sse protocol in its
 * "distinct connections" mode, `POST /graphql` with `Accept: text/event-stream`, one subscription
 * per response. The GraphQL endpoint (src/graphql/server.ts) has read the body, authenticated the
 * request as any other (401 before anything else) and had the gate (src/graphql/gate.ts) judge
 * it; this runs the subscription. A stream ends
 * with an error result (`next` with `errors`, then `complete`) when the token is revoked, expired
 * or deleted (FORBIDDEN), when it falls too far behind (TOO_SLOW) or when the service stops
 * (SHUTTING_DOWN).
 */

interface StreamContext extends GraphQLContext {
  realtime: RealtimeContext;
  /** The gate's verdict on the request (null: it named nothing to run). */
  verdict: Verdict | null;
  /** The response's results, once the subscription runs. */
  attach(results: EventResults): void;
  /** Resolves once the response can take more (its socket's buffer has drained). */
  ready(): Promise<void>;
}

export interface SseEndpoint {
  /** Whether a request asks for an event stream (graphql-sse's distinct connections mode). */
  wants(ctx: AppContext): boolean;
  /** Runs a subscription for an authenticated request, as the gate judged it (null: the request names nothing to run). */
  serve(ctx: AppContext, caller: Caller, verdict: Verdict | null): Promise<void>;
  /** Whether a response is an event stream (a graceful stop ends them after the other requests). */
  isStream(res: ServerResponse): boolean;
}

/** How long a stream ended by the service (revoked, too slow, stopping) may take to reach its client. */
const END_GRACE_MS = 5_000;

const errorResult = (reason: CloseReason): ExecutionResult => ({
  errors: [new GraphQLError(CLOSE[reason].reason, { extensions: { code: CLOSE[reason].graphql } })],
});

/** The types a POST /graphql may be answered in, in the order preferred when the client has none. */
const ANSWER_TYPES = ['application/json', 'application/graphql-response+json', 'text/event-stream'];
/** An Accept header that can choose text/event-stream: it names it, or a range with a wildcard (text/*, or the any-type range). */
const MAY_CHOOSE_STREAM = /event-stream|\*/i;

export function sseEndpoint(deps: { gate: Gate; db: Database; services: Services; hub: Hub; log: Logger }): SseEndpoint {
  const { gate, hub, log } = deps;
  const { schema } = gate;
  const streams = new WeakSet<ServerResponse>();
  const handler = createHandler<IncomingMessage, StreamContext, StreamContext & Record<PropertyKey, unknown>>({
    schema,
    // No "single connection mode": its reservations (PUT, then a stream per reservation token)
    // would be streams this side neither authenticates nor counts. Every stream is a distinct
    // connection, made by a request authenticated with its bearer token.
    authenticate: () => null,
    // The gate has validated the document, with the service's limits.
    validate: () => [],
    // graphql-sse has checked the request's parameters (a query string, objects for variables and
    // extensions) in its own words; the gate judged the rest.
    onSubscribe: (req) => {
      const { verdict } = req.context;
      if (verdict?.kind === 'admitted')
        return { ...subscriptionArgs(schema, verdict, req.context), contextValue: req.context as StreamContext & Record<PropertyKey, unknown> };
      const errors = verdict?.errors ?? [new GraphQLError('query must be a string holding the operation', { extensions: { code: 'BAD_REQUEST' } })];
      const body = JSON.stringify({ errors: gate.format(errors, req.context.requestId) });
      return [body, { status: 400, statusText: 'Bad Request', headers: { 'content-type': 'application/json; charset=utf-8' } }];
    },
    subscribe: (args) => {
      const context = args.contextValue as StreamContext;
      return subscribeFresh(args, { started: (results) => context.attach(results), ready: () => context.ready() });
    },
    onNext: (ctx, _req, result) => formatResult(gate, result as ExecutionResult, ctx.requestId) ?? undefined,
  });

  return {
    // The Accept header decides, as Koa's negotiation reads it (text/*, */* with the JSON types at a
    // lower q, …). Only a header naming the type or a wildcard range can choose it: any other (most
    // requests: application/json, or none) is not negotiated, which cost a GraphQL request ~5 µs.
    wants: (ctx) => ctx.method === 'POST' && MAY_CHOOSE_STREAM.test(ctx.get('Accept')) && ctx.accepts(...ANSWER_TYPES) === 'text/event-stream',
    isStream: (res) => streams.has(res),
    async serve(ctx, caller, verdict) {
      // Refused by the gate: answered at once, taking no place (graphql-sse would first ask for a
      // query text, which a request naming a document by its id does not send).
      if (verdict?.kind === 'refused') {
        ctx.status = 400;
        ctx.type = 'application/json; charset=utf-8';
        ctx.body = JSON.stringify({ errors: gate.format(verdict.errors, ctx.state.requestId) });
        return;
      }
      // The request has been authenticated (401 before anything else): a stream without a token
      // never takes a place.
      if (!hub.admit('sse')) {
        hub.dismissed('sse', closeName('tooMany'));
        throw new AppError('TOO_MANY_REQUESTS', `this instance holds its most subscription connections (${hub.maxConnections}); try again later`);
      }
      const res = ctx.res;
      let closedWith: CloseReason | null = null;
      let results: EventResults | null = null;
      let forget: (() => void) | null = null;
      let released = false;
      // From here on, a response that closes (the client gone, even while this is still preparing
      // the stream) gives its place back, once.
      const release = () => {
        if (released) return;
        released = true;
        forget?.();
        void results?.return();
        const reason = closeName(closedWith ?? 'client');
        hub.release('sse', reason);
        log.info('subscription stream closed', { transport: 'sse', requestId: ctx.state.requestId, tokenId: caller.tokenId, reason });
      };
      res.once('close', release);
      const connection: Connection = {
        tokenId: caller.tokenId,
        userId: caller.userId,
        transport: 'sse',
        close(reason) {
          closedWith ??= reason;
          results?.end(errorResult(reason));
          // A client that no longer reads would hold the response open: it gets a few seconds to take the end.
          setTimeout(() => res.destroy(), END_GRACE_MS).unref();
        },
      };
      const realtime: RealtimeContext = { stream: (operation, filter, after) => hub.stream(operation, filter, after, () => connection.close('slow')) };
      const context: StreamContext = {
        ...subscriptionContext(deps, caller, ctx.state.requestId, realtime),
        verdict,
        attach(attached) {
          results = attached;
          if (closedWith) attached.end(errorResult(closedWith));
          if (released) void attached.return();
        },
        ready: () => (res.writableNeedDrain ? once(res, 'drain').then(() => undefined) : Promise.resolve()),
      };
      try {
        const forgetConnection = await hub.addConnection(connection);
        forget = forgetConnection;
        if (released) return forgetConnection();
        const [body, init] = await handler({
          url: ctx.url,
          method: 'POST',
          // Distinct connections mode is chosen by an Accept of exactly text/event-stream; the
          // request's may list more types (this endpoint has already chosen the stream).
          headers: { get: (key: string) => (key.toLowerCase() === 'accept' ? 'text/event-stream' : ctx.get(key) || null) },
          // Read and parsed already (an object); graphql-sse wants the query text, which for an id the gate has found.
          body:
            verdict?.kind === 'admitted'
              ? { ...(ctx.request.body as Record<string, unknown>), query: verdict.source }
              : (ctx.request.body as Record<string, unknown>),
          raw: ctx.req,
          context,
        });
        if (released) {
          if (body && typeof body !== 'string') await body.return?.(undefined);
          return;
        }
        ctx.status = init.status;
        for (const [name, value] of Object.entries(init.headers ?? {})) ctx.set(name, value);
        if (!body || typeof body === 'string') {
          ctx.body = body ?? '';
          release();
          return;
        }
        streams.add(res);
        ctx.set('X-Accel-Buffering', 'no'); // a proxy (nginx) passes events on as they come
        ctx.body = Readable.from(body, { objectMode: false });
        log.info('subscription stream opened', { transport: 'sse', requestId: ctx.state.requestId, tokenId: caller.tokenId, userId: caller.userId });
      } catch (err) {
        release();
        throw err;
      }
    },
  };
}
