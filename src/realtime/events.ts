import type { Sql } from '../db/sql.js';
import type { Logger } from '../observability/log.js';

/**
 * Committed changes, as the audit log records them (SPEC §10): one event per audit row, handed to
 * the instance's listeners (the subscriptions hub) after its transaction committed.
 *
 * Every write appends its audit rows in its own transaction, so the audit log is the event log:
 * while anyone on this instance listens, it is read every POLL_MS after the last id seen, in one
 * statement, through the pool (the same way on PostgreSQL, behind a pooler in transaction mode, and
 * on the embedded database; no session of its own, no LISTEN). Writes pay nothing for it: NOTIFY was
 * tried first, and PostgreSQL serialises the commits of notifying transactions (measured: about a
 * fifth of REST write throughput at 32 connections, before any subscriber).
 *
 * Ids are taken when a row is inserted, not when its transaction commits: a transaction still in
 * flight leaves a gap below ids already seen. Each gap is looked for again on every read until
 * its row shows up or GAP_WAIT_MS have passed (a rolled-back insert never fills its gap; the
 * service's write transactions end well within that time). A record's events are handed over in
 * commit order: a write to a record waits for the earlier one's commit (row lock) before it takes
 * its id, so its ids grow with commit order.
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

/** How often the audit log is read while someone listens. */
export const POLL_MS = 100;
/** How long an id missing below seen ones is looked for (its transaction may still commit). */
const GAP_WAIT_MS = 60_000;
/** Rows read at most per statement (a long backlog is read in several). */
const BATCH = 1_000;

const EVENT_COLUMNS = `a.id as "eventID", a.action, a.resource, a.record_id as "recordID", a.at, a.actor_token_id as "actorTokenID", a.changes,
  case when a.resource = 'token' then (select t.user_id from tokens t where t.id = a.record_id) end as "userID"`;

/** Events after `after`, in id order, at most `limit` (a condition on `a` narrows them). */
export const eventsAfter = (sql: Sql, after: number, limit: number, where = 'true', params: unknown[] = []) =>
  sql.rows<ChangeEvent>(`select ${EVENT_COLUMNS} from audit_events a where a.id > ? and (${where}) order by a.id limit ?`, [after, ...params, limit]);

/**
 * The events after `after` (at most BATCH) and those among `gaps` that are there now, in id order:
 * two index range reads (one `where … or …` would make PostgreSQL scan the whole index).
 */
const eventsAfterOrIn = (sql: Sql, after: number, gaps: readonly number[]) =>
  gaps.length === 0
    ? eventsAfter(sql, after, BATCH)
    : sql.rows<ChangeEvent>(
        `select * from ((select ${EVENT_COLUMNS} from audit_events a where a.id > ? order by a.id limit ?)
          union all (select ${EVENT_COLUMNS} from audit_events a where a.id = any(?::bigint[]) and a.id <= ?)) e order by "eventID"`,
        [after, BATCH, `{${gaps.join(',')}}`, after],
      );

export interface EventSource {
  listen(listener: EventListener): () => void;
  /**
   * Resolves once the source reads for its listeners: what commits from then on reaches them
   * (a connection checks its token again after this, so that no revocation falls in between).
   */
  reading(): Promise<void>;
  close(): Promise<void>;
}

export function openEventSource(options: { sql: Sql; log: Logger }): EventSource {
  const { sql, log } = options;
  const listeners = new Set<EventListener>();
  /** The newest id seen; null while no one listens (a first listener starts from the log's end). */
  let last: number | null = null;
  /** Ids below `last` not seen yet, with when they were first missed. */
  const gaps = new Map<number, number>();
  let timer: NodeJS.Timeout | undefined;
  let reading: Promise<void> | null = null;
  /** Who waits for the source to have its starting point. */
  const started: (() => void)[] = [];
  let closed = false;
  let warned = false;

  /** Where a first listener starts: the end of the log, its recent ids missing counted as gaps (in flight now). */
  const start = async () => {
    const rows = await sql.rows<{ id: number }>('select id from audit_events where id > (select coalesce(max(id), 0) - ? from audit_events) order by id', [BATCH]);
    const max = rows.at(-1)?.id ?? 0;
    const present = new Set(rows.map((r) => Number(r.id)));
    const now = Date.now();
    for (let id = Math.max(1, max - BATCH + 1); id < max; id++) if (!present.has(id)) gaps.set(id, now);
    last = Number(max);
    for (const resolve of started.splice(0)) resolve();
  };

  const read = async () => {
    if (last === null) await start();
    for (;;) {
      const now = Date.now();
      for (const [id, since] of gaps) if (now - since > GAP_WAIT_MS) gaps.delete(id);
      const from = last!;
      const events = await eventsAfterOrIn(sql, from, [...gaps.keys()]);
      if (!events.length || !listeners.size) return;
      let expected = from + 1;
      for (const event of events) {
        gaps.delete(event.eventID);
        if (event.eventID <= from) continue;
        for (; expected < event.eventID; expected++) gaps.set(expected, now);
        expected = event.eventID + 1;
      }
      last = Math.max(from, events.at(-1)!.eventID);
      for (const listener of listeners) listener(events);
      if (events.filter((e) => e.eventID > from).length < BATCH) return;
    }
  };

  const poll = () => {
    timer = undefined;
    if (closed || !listeners.size) return;
    reading = read()
      .then(() => (warned = false))
      .catch((err: Error) => {
        // Not migrated yet (MIGRATE=false), or the database away: tried again on the next poll.
        if (!warned) log.warn('events could not be read; retrying', { error: err?.name });
        warned = true;
      })
      .then(() => {
        reading = null;
        if (!closed && listeners.size) timer = setTimeout(poll, POLL_MS);
      });
  };

  return {
    listen(listener) {
      listeners.add(listener);
      if (listeners.size === 1 && !timer && !reading) poll();
      return () => {
        listeners.delete(listener);
        if (listeners.size) return;
        // No one listens: no reads. The next listener starts from the log's end again.
        clearTimeout(timer);
        timer = undefined;
        last = null;
        gaps.clear();
      };
    },
    reading: () => (last !== null || !listeners.size ? Promise.resolve() : new Promise<void>((resolve) => started.push(resolve))),
    async close() {
      for (const resolve of started.splice(0)) resolve();
      closed = true;
      clearTimeout(timer);
      await reading;
    },
  };
}
