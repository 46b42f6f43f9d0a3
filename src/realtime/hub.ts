import { liveTokenExpiries } from '../auth/authenticate.js';
import { AppError } from '../errors.js';
import type { Sql } from '../db/sql.js';
import type { Logger } from '../observability/log.js';
import type { RealtimeMetrics } from '../observability/metrics.js';
import { eventsAfter, type ChangeEvent, type EventSource } from './events.js';

/**
 * The subscriptions of one instance (docs/graphql.md#subscriptions): each subscription is an event stream over the
 * instance's one event source, filtered, with a bounded queue; each connection (WebSocket or SSE)
 * is known by its token and user, so that a revocation, an expiry or a deleted user closes it.
 */

/** A subscription this far behind (events queued, not yet sent) closes its connection (4408). */
export const MAX_BEHIND = 1_000;
/** How many events a resume (`after`) may replay before it must re-read instead. */
export const MAX_REPLAY = 1_000;
/** How many audit events (of every kind) a resume may look through. */
export const MAX_REPLAY_SPAN = 100_000;
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100;
/** What may end or change a live token (its creation or a restore cannot touch an open connection's). */
const TOKEN_ENDING: ReadonlySet<string> = new Set(['update', 'patch', 'revoke', 'delete']);
/** The longest delay a Node timer takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Why a connection was closed, as WebSocket close codes (SSE ends its stream with the reason). */
export const CLOSE = {
  unauthorized: { code: 4401, reason: 'Unauthorized', graphql: 'UNAUTHENTICATED' },
  forbidden: { code: 4403, reason: 'Forbidden: the token was revoked, expired or deleted', graphql: 'FORBIDDEN' },
  slow: { code: 4408, reason: `Too slow: ${MAX_BEHIND} events behind`, graphql: 'TOO_SLOW' },
  tooMany: { code: 4429, reason: 'Too many connections', graphql: 'TOO_MANY_REQUESTS' },
  // Sockets waiting for their connection_init (WebSocket only): 1013 (Try Again Later), which
  // graphql-ws clients retry, as the wait of the others is over within moments.
  waitingFromAddress: { code: 1013, reason: 'Try again later: too many connections from this address wait for connection_init', graphql: 'TOO_MANY_REQUESTS' },
  waiting: { code: 1013, reason: 'Try again later: too many connections wait for connection_init', graphql: 'TOO_MANY_REQUESTS' },
  going: { code: 1001, reason: 'Going away: the service is stopping', graphql: 'SHUTTING_DOWN' },
} as const;
export type CloseReason = keyof typeof CLOSE;

/** A close reason as the metrics and the log name it (`tooMany` → `too_many`). */
export const closeName = (reason: CloseReason | 'client' | 'init_timeout') => reason.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * The reason of a WebSocket close: ours (by code and text: graphql-ws closes a socket whose
 * connection_init does not come in time with 4408 too), its init timeout, or else the client's doing.
 */
export function closeReasonOf(code: number, text: string): string {
  const ours = (Object.keys(CLOSE) as CloseReason[]).find((reason) => CLOSE[reason].code === code && CLOSE[reason].reason === text);
  return closeName(ours ?? (code === 4408 ? 'init_timeout' : 'client'));
}

/** What a stream is fed, and how a resume finds the same events in the audit log. */
export interface StreamFilter {
  matches(event: ChangeEvent): boolean;
  /** The same condition in SQL, on the audit row `a` (with its parameters). */
  sql: { where: string; params: unknown[] };
}

/** A connection subscriptions run on, as the hub sees it. */
export interface Connection {
  tokenId: number;
  userId: number;
  transport: 'ws' | 'sse';
  close(reason: CloseReason): void;
}

/** A subscription's events, in order, with a bounded queue. */
class EventStream implements AsyncIterableIterator<ChangeEvent> {
  private readonly queue: ChangeEvent[] = [];
  /** How many of the queued events (the first ones) came from a replay. */
  private replayed = 0;
  private waiting: ((result: IteratorResult<ChangeEvent>) => void) | null = null;
  private done = false;

  constructor(
    private readonly onOverflow: () => void,
    private readonly onEnd: () => void,
  ) {}

  /** Queues events; past MAX_BEHIND live ones (a replay not counted), the stream ends and says so. */
  push(events: readonly ChangeEvent[], options: { replay?: boolean } = {}): void {
    for (const event of events) {
      if (this.done) return;
      if (this.waiting) {
        const resolve = this.waiting;
        this.waiting = null;
        resolve({ value: event, done: false });
      } else {
        this.queue.push(event);
        if (options.replay) this.replayed++;
        if (this.queue.length - this.replayed > MAX_BEHIND) {
          this.end();
          this.onOverflow();
          return;
        }
      }
    }
  }

  next(): Promise<IteratorResult<ChangeEvent>> {
    if (this.queue.length) {
      if (this.replayed) this.replayed--;
      return Promise.resolve({ value: this.queue.shift()!, done: false });
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.waiting = resolve));
  }

  return(): Promise<IteratorResult<ChangeEvent>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  private end(): void {
    if (this.done) return;
    this.done = true;
    this.queue.length = 0;
    this.waiting?.({ value: undefined, done: true });
    this.waiting = null;
    this.onEnd();
  }
}

export class Hub {
  private readonly connections = new Set<Connection>();
  /** Expiry timers of connections' tokens. */
  private readonly expiries = new Map<Connection, NodeJS.Timeout>();
  /** The hub's own listener (token checks), there while it has connections; null otherwise. */
  private stopListening: (() => void) | null = null;
  /** Open connections whose token was accepted. */
  private open = 0;

  constructor(
    private readonly source: EventSource,
    private readonly sql: Sql,
    private readonly log: Logger,
    readonly maxConnections: number,
    private readonly metrics: RealtimeMetrics | null,
  ) {}

  /**
   * Counts a new connection once its token is accepted (a socket still waiting for its
   * connection_init holds one of the few places src/realtime/ws.ts keeps for those), or says no
   * when SUBSCRIPTIONS_MAX are open (4429 / 429; the refused connection is `dismissed`).
   */
  admit(transport: Connection['transport']): boolean {
    if (this.open >= this.maxConnections) return false;
    this.open++;
    this.metrics?.connected(transport, 1);
    return true;
  }

  /** A connection admitted is gone, for `reason` (client: the client went, or a close code's name). */
  release(transport: Connection['transport'], reason: string): void {
    this.open--;
    this.metrics?.connected(transport, -1);
    this.metrics?.closed(transport, reason);
  }

  /** A connection never admitted (refused, or closed before its token was accepted) is gone, for `reason`. */
  dismissed(transport: Connection['transport'], reason: string): void {
    this.metrics?.closed(transport, reason);
  }

  get connectionCount(): number {
    return this.open;
  }

  /**
   * Registers a connection whose token was just checked; closes it (4403) when its token expires
   * (an expiry changed meanwhile is followed: a token event checks the token again). Returns how
   * to forget it.
   */
  async addConnection(connection: Connection): Promise<() => void> {
    this.connections.add(connection);
    this.stopListening ??= this.source.listen((events) => void this.watchTokens(events));
    // A revocation committed between the token check and the source reading for this connection
    // would reach no one: the token is checked again once the source reads.
    await this.source.reading();
    await this.checkTokens([connection]);
    return () => {
      this.connections.delete(connection);
      clearTimeout(this.expiries.get(connection));
      this.expiries.delete(connection);
      if (!this.connections.size) {
        this.stopListening?.();
        this.stopListening = null;
      }
    };
  }

  /**
   * A subscription's events: with `after`, first every later matching event from the audit log (at
   * most MAX_REPLAY, else BAD_USER_INPUT), then the live ones, with no gap and no duplicate: the
   * live events are taken from before the replay is read, and those the replay holds are dropped.
   */
  async stream(operation: string, filter: StreamFilter, after: number | null, onOverflow: () => void): Promise<AsyncIterableIterator<ChangeEvent>> {
    let stop = () => {};
    const stream = new EventStream(onOverflow, () => {
      stop();
      this.metrics?.subscribed(operation, -1);
    });
    this.metrics?.subscribed(operation, 1);
    // The source hands events over in id order, each id a safe cursor. While the replay is read,
    // live events are held; then those the replay covers (up to where the source stood) dropped.
    let replaying = after !== null;
    const held: ChangeEvent[] = [];
    stop = this.source.listen((events) => {
      const mine = events.filter((e) => filter.matches(e) && (after === null || e.eventID > after));
      if (!mine.length) return;
      if (replaying) held.push(...mine);
      else {
        this.metrics?.sent(mine.length);
        stream.push(mine);
      }
    });
    if (after !== null) {
      try {
        await this.source.reading();
        const upTo = this.source.handedOver();
        const [{ newest }] = await this.sql.rows<{ newest: number | null }>('select max(id) as newest from audit_events');
        const logged = Number(newest ?? 0);
        if (after > logged) throw AppError.invalid([{ field: 'after', message: 'no event has this id yet: pass an eventID this service sent' }]);
        // The limits count what the audit log holds after `after` now, not what the source has
        // handed over yet: else the same `after` would be refused or replayed depending on how
        // far the source had read. How far back a replay may start is bounded, so that a narrow
        // filter cannot make it scan the whole log.
        if (logged - after > MAX_REPLAY_SPAN)
          throw AppError.invalid([
            { field: 'after', message: `more than ${MAX_REPLAY_SPAN} changes happened after it: read the records again, then subscribe without after` },
          ]);
        const later = await eventsAfter(this.sql, after, logged, MAX_REPLAY + 1, filter.sql.where, filter.sql.params);
        if (later.length > MAX_REPLAY) {
          throw AppError.invalid([
            {
              field: 'after',
              message: `more than ${MAX_REPLAY} events happened after it: read the records again, then subscribe without after (or with a later eventID)`,
            },
          ]);
        }
        // Replayed: those up to where the source stood (every id below it a safe cursor); the
        // later ones come from the source, in id order, past any gap it still waits for.
        const replay = later.filter((e) => e.eventID <= upTo);
        const live = held.filter((e) => e.eventID > upTo);
        replaying = false;
        this.metrics?.sent(replay.length + live.length);
        // The replay does not count against MAX_BEHIND: a consumer is slow only once live.
        stream.push(replay, { replay: true });
        stream.push(live);
      } catch (err) {
        await stream.return();
        throw err;
      }
    }
    return stream;
  }

  /**
   * Follows the tokens of open connections through the events: a connection's token changed in
   * any way but its expiry (its value, scope or user, a revocation, a deletion) closes it (4403) at
   * once, as the caller it was opened with is no longer what the token says; an expiry changed, or
   * its user deleted, is checked against the database, as a request's token is.
   */
  private async watchTokens(events: readonly ChangeEvent[]): Promise<void> {
    if (!this.connections.size) return;
    const changed = new Map<number, boolean>(); // token id → whether only its expiry changed
    for (const e of events) {
      if (e.resource !== 'token' || !TOKEN_ENDING.has(e.action)) continue;
      const expiryOnly = (e.action === 'update' || e.action === 'patch') && Object.keys(e.changes ?? {}).every((field) => field === 'expireAt');
      changed.set(e.recordID, (changed.get(e.recordID) ?? true) && expiryOnly);
    }
    const users = new Set(events.filter((e) => e.resource === 'user' && e.action === 'delete').map((e) => e.recordID));
    if (!changed.size && !users.size) return;
    const recheck: Connection[] = [];
    for (const connection of this.connections) {
      const expiryOnly = changed.get(connection.tokenId);
      if (expiryOnly === false) connection.close('forbidden');
      else if (expiryOnly === true || users.has(connection.userId)) recheck.push(connection);
    }
    if (recheck.length) await this.checkTokens(recheck);
  }

  /** Closes (4403) those of `affected` whose token is no longer live (the rule every request's token is checked by). */
  private async checkTokens(affected: readonly Connection[]): Promise<void> {
    if (!affected.length) return;
    try {
      const expiries = await liveTokenExpiries(
        this.sql,
        affected.map((c) => c.tokenId),
      );
      for (const connection of affected) {
        if (!expiries.has(connection.tokenId)) connection.close('forbidden');
        else if (this.connections.has(connection)) this.expireAt(connection, expiries.get(connection.tokenId)!);
      }
    } catch (err) {
      // The event that asked for the check is gone: checked again in a second, until it succeeds.
      this.log.warn('could not check the tokens of open connections; trying again', { error: (err as Error)?.name });
      setTimeout(() => void this.checkTokens(affected.filter((c) => this.connections.has(c))), 1_000).unref();
    }
  }

  /** (Re)sets when a connection's token expires (4403 then); null: never. */
  private expireAt(connection: Connection, at: number | null): void {
    clearTimeout(this.expiries.get(connection));
    this.expiries.delete(connection);
    if (at === null) return;
    // A timer holds at most ~24.8 days: a later expiry is looked at again then.
    const left = at - Date.now();
    const timer = setTimeout(
      () => (left > MAX_TIMER_MS ? this.expireAt(connection, at) : connection.close('forbidden')),
      Math.min(Math.max(left, 0), MAX_TIMER_MS),
    );
    timer.unref();
    this.expiries.set(connection, timer);
  }

  /** The graceful stop: every connection closed with 1001, and no more events. */
  closeAll(): void {
    for (const connection of [...this.connections]) connection.close('going');
    this.stopListening?.();
    this.stopListening = null;
  }
}
