import pg from 'pg';
import type { Sql } from '../db/sql.js';
import type { Logger } from '../observability/log.js';

/**
 * Committed changes, as the audit log records them (SPEC §9, §10): one event per audit row, each
 * after its transaction committed, in commit order. One source per instance, whose listeners (the
 * subscriptions hub) fan them out:
 *
 * - On PostgreSQL, a dedicated connection LISTENs on `uts_events` (DATABASE_DIRECT_URL when set,
 *   else DATABASE_URL: not through a pooler in transaction mode). A trigger notifies the ids of
 *   every statement's audit rows (Migration20261204000000_audit_notify); PostgreSQL sends a
 *   notification only at commit, in commit order. The rows are then read by id, in one statement.
 *   A lost connection is reopened with backoff, and the events committed meanwhile are read from
 *   the audit log after the last one seen.
 * - Behind a pooler without a direct URL, and on the embedded database, the audit log is read after
 *   the last id seen every POLL_MS; an id skipped (its transaction still in flight) is looked for
 *   again until it shows up or GAP_WAIT_MS have passed (a rolled-back one never will).
 */

/** The fields of an audit row an event carries. */
export interface ChangeEvent {
  eventID: number;
  action: string;
  /** user, token, application, role, application_link or role_link. */
  resource: string;
  /** The record (for a link: the user). */
  recordID: number;
  at: string;
  actorTokenID: number | null;
  changes: Record<string, { before?: unknown; after?: unknown }>;
  /** For a token: its user (read with the event). */
  userID?: number;
}

export type EventListener = (events: readonly ChangeEvent[]) => void;

const CHANNEL = 'uts_events';
const POLL_MS = 250;
const MAX_BACKOFF_MS = 5_000;

const EVENT_COLUMNS = `a.id as "eventID", a.action, a.resource, a.record_id as "recordID", a.at, a.actor_token_id as "actorTokenID", a.changes,
  case when a.resource = 'token' then (select t.user_id from tokens t where t.id = a.record_id) end as "userID"`;

/** Reads events by id, in id order. */
export const eventsByIds = (sql: Sql, ids: readonly number[]) =>
  sql.rows<ChangeEvent>(`select ${EVENT_COLUMNS} from audit_events a where a.id = any(?::bigint[]) order by a.id`, [`{${ids.join(',')}}`]);

/** Events after `after`, in id order, at most `limit` (a condition on `a` narrows them). */
export const eventsAfter = (sql: Sql, after: number, limit: number, where = 'true', params: unknown[] = []) =>
  sql.rows<ChangeEvent>(`select ${EVENT_COLUMNS} from audit_events a where a.id > ? and (${where}) order by a.id limit ?`, [after, ...params, limit]);

export interface EventSource {
  listen(listener: EventListener): () => void;
  /** The id of the newest event seen (replays start below it). */
  lastSeen(): number;
  close(): Promise<void>;
}

/** How long an id missing between seen ones is looked for again (its transaction may still commit). */
const GAP_WAIT_MS = 30_000;

export async function openEventSource(options: { sql: Sql; listenUrl: string | null; log: Logger }): Promise<EventSource> {
  const { sql, log } = options;
  const listeners = new Set<EventListener>();
  /** The newest event id seen; null until the audit log could be read (MIGRATE=false: not yet migrated). */
  let last: number | null = null;
  /**
   * Ids below the newest seen that were not there when read: an id is taken when a row is
   * inserted, so a transaction still in flight (or rolled back) leaves one. Reading by id alone
   * would skip such an event once it commits; it is looked for again until GAP_WAIT_MS.
   */
  const gaps = new Map<number, number>();
  let closed = false;
  const emit = (events: ChangeEvent[]) => {
    if (!events.length) return;
    for (const event of events) gaps.delete(event.eventID);
    last = Math.max(last ?? 0, events.at(-1)!.eventID);
    for (const listener of listeners) listener(events);
  };
  // Reads one batch at a time, in order: notifications are handled in the order they came.
  let reading: Promise<void> = Promise.resolve();
  const enqueue = (read: () => Promise<ChangeEvent[]>) => {
    reading = reading.then(read).then(emit, (err: Error) => log.warn('events could not be read', { error: err?.name }));
  };
  const start = async (): Promise<boolean> => {
    if (last !== null) return true;
    try {
      last = Number((await sql.rows<{ id: number | null }>('select max(id) as id from audit_events'))[0]?.id ?? 0);
      return true;
    } catch {
      return false; // not migrated yet: tried again on the next poll or reconnect
    }
  };
  /**
   * The events after the last seen, and (polling) those of earlier gaps that have committed
   * meanwhile. A listener needs no gaps: what commits after its LISTEN is notified.
   */
  const catchUp = async (): Promise<ChangeEvent[]> => {
    const polling = !options.listenUrl;
    if (!(await start())) return [];
    const now = Date.now();
    for (const [id, since] of gaps) if (now - since > GAP_WAIT_MS) gaps.delete(id);
    if (gaps.size) emit(await eventsByIds(sql, [...gaps.keys()]));
    for (;;) {
      const from = last!;
      const events = await eventsAfter(sql, from, 1_000);
      let expected = from + 1;
      for (const event of events) {
        if (polling) for (; expected < event.eventID; expected++) gaps.set(expected, now);
        expected = event.eventID + 1;
      }
      emit(events);
      if (events.length < 1_000) return [];
    }
  };

  /** Ids notified and not yet read, and whether a read of them is queued. */
  const notified: number[] = [];
  let readScheduled = false;
  let client: pg.Client | null = null;
  let timer: NodeJS.Timeout | undefined;
  if (options.listenUrl) {
    let backoff = 100;
    const retry = () => {
      if (closed) return;
      setTimeout(() => void connect(), backoff).unref();
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    };
    const connect = async (): Promise<void> => {
      if (closed) return;
      const next = new pg.Client({ connectionString: options.listenUrl! });
      next.on('error', () => {}); // followed by 'end'
      next.on('notification', (message) => {
        if (message.channel !== CHANNEL || !message.payload) return;
        for (const id of message.payload.split(',')) notified.push(Number(id));
        if (readScheduled) return;
        // Notifications that come while a read is under way are read together, in one statement
        // (by id: the events of one record are in commit order by id, as a later write to a
        // record waits for the earlier one's commit before it takes its id).
        readScheduled = true;
        enqueue(async () => {
          readScheduled = false;
          const ids = notified.splice(0);
          // With no one listening (no subscription, no connection to watch), the events are not
          // read: only how far they go is noted.
          if (listeners.size) return eventsByIds(sql, ids);
          last = Math.max(last ?? 0, ...ids);
          return [];
        });
      });
      try {
        await next.connect();
        await next.query(`listen ${CHANNEL}`);
      } catch {
        await next.end().catch(() => {});
        return retry();
      }
      next.on('end', () => {
        client = null;
        if (closed) return;
        log.warn('event listener lost its connection; reconnecting', {});
        retry();
      });
      client = next;
      backoff = 100;
      // What committed while no one listened (nothing on the first start: it starts from now).
      enqueue(catchUp);
    };
    await start();
    await connect();
  } else {
    await start();
    const poll = () => {
      if (closed) return;
      enqueue(catchUp);
      void reading.finally(() => {
        if (!closed) timer = setTimeout(poll, POLL_MS);
      });
    };
    timer = setTimeout(poll, POLL_MS);
  }

  return {
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    lastSeen: () => last ?? 0,
    async close() {
      closed = true;
      clearTimeout(timer);
      await reading.catch(() => {});
      await client?.end().catch(() => {});
    },
  };
}
