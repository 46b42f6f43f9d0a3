import type { Sql } from '../db/sql.js';
import type { Logger } from '../observability/log.js';
import type { DatabaseOutage } from '../db/outage.js';

/**
 * Committed changes, as the audit log records them (docs/graphql.md#subscriptions): one event per audit row, handed to
 * the instance's listeners (the subscriptions hub) after its transaction committed, in id order.
 *
 * Every write appends its audit rows in its own transaction, so the audit log is the event log:
 * while anyone on this instance listens, it is read every POLL_MS after the last id read, in one
 * statement, through the pool (the same way on PostgreSQL, behind a pooler in transaction mode, and
 * on the embedded database; no session of its own, no LISTEN). Writes pay nothing for it: NOTIFY was
 * tried first, and PostgreSQL serialises the commits of notifying transactions.
 *
 * Ids are taken when a row is inserted, not when its transaction commits: a transaction still in
 * flight leaves a gap below ids already read. Events are handed over only up to the first open
 * gap, so that every event id handed over is a safe cursor (`after`: everything below it has been
 * handed over, or will never exist). A gap closes when its row shows up, or when none of the
 * transactions that were in flight just after it was found is in flight any more (the statement
 * that reads also reads `pg_current_snapshot()`): its transaction rolled back.
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
/** Rows read at most per statement (a long backlog is read in several). */
const BATCH = 1_000;
/** Events read but held behind an open gap, at most (past it, new rows wait in the log). */
const MAX_HELD = 10_000;

const EVENT_COLUMNS = `a.id as "eventID", a.action, a.resource, a.record_id as "recordID", a.at, a.actor_token_id as "actorTokenID", a.changes,
  case when a.resource = 'token' then (select t.user_id from tokens t where t.id = a.record_id) end as "userID"`;

/** Events with `after` < id <= `upTo`, in id order, at most `limit` (a condition on `a` narrows them). */
export const eventsAfter = (sql: Sql, after: number, upTo: number, limit: number, where = 'true', params: unknown[] = []) =>
  sql.rows<ChangeEvent>(`select ${EVENT_COLUMNS} from audit_events a where a.id > ? and a.id <= ? and (${where}) order by a.id limit ?`, [
    after,
    upTo,
    ...params,
    limit,
  ]);

/**
 * The events after `after` (at most `limit`) and those among `gaps` that are there now, with the
 * statement's snapshot (on every row; on one row of nulls when there is no event): two index range
 * reads (one `where … or …` would make PostgreSQL scan the whole index).
 */
const readLog = (sql: Sql, after: number, limit: number, gaps: readonly number[]) =>
  sql.rows<ChangeEvent & { snapshot: string }>(
    `select pg_current_snapshot()::text as snapshot, e.* from (select 1) one left join lateral (
       (select ${EVENT_COLUMNS} from audit_events a where a.id > ? order by a.id limit ?)
       union all (select ${EVENT_COLUMNS} from audit_events a where a.id = any(?::bigint[]) and a.id <= ?)
     ) e on true order by e."eventID"`,
    [after, limit, `{${gaps.join(',')}}`, after],
  );

/** The transactions in flight in a `pg_current_snapshot()` text (`xmin:xmax:xip,…`). */
const inFlight = (snapshot: string): Set<string> => new Set((snapshot.split(':')[2] ?? '').split(',').filter(Boolean));

export interface EventSource {
  listen(listener: EventListener): () => void;
  /**
   * Resolves once the source reads for its listeners: what commits from then on reaches them
   * (a connection checks its token again after this, so that no revocation falls in between).
   */
  reading(): Promise<void>;
  /** The newest id handed over (everything below it has been, or will never exist). */
  handedOver(): number;
  /**
   * The newest id up to which every event has committed or never will (0 until the first read):
   * how far a durable cursor may move without ever passing an event that commits later (webhook
   * deliveries, src/webhooks/dispatcher.ts). The event at it need not exist (a rolled-back id).
   */
  horizon(): number;
  close(): Promise<void>;
}

/**
 * `outage`: the database's outage lines (src/db/outage.ts), where a read the database
 * could not serve is told, as the instance's outage rather than in a line of its own.
 */
export function openEventSource(options: { sql: Sql; log: Logger; outage: DatabaseOutage }): EventSource {
  const { sql, log, outage } = options;
  const listeners = new Set<EventListener>();
  /** The newest id read; null while no one listens (a first listener starts from the log's end). */
  let last: number | null = null;
  /** The newest id handed over. */
  let handed = 0;
  /**
   * Ids below `last` not read yet, with the transactions in flight at the read after the one that
   * found each (null until then: a transaction takes its id a moment before its transaction id,
   * so the snapshot of the read that finds a gap may not show it yet).
   */
  const gaps = new Map<number, Set<string> | null>();
  /** Events read above the first open gap, in id order, waiting for it. */
  let held: ChangeEvent[] = [];
  /** Bumped when the last listener leaves: a read begun before is dropped. */
  let generation = 0;
  let timer: NodeJS.Timeout | undefined;
  let reading: Promise<void> | null = null;
  let closed = false;
  let warned = false;
  const started: (() => void)[] = [];

  const reset = () => {
    generation++;
    last = null;
    handed = 0;
    gaps.clear();
    held = [];
  };

  /**
   * Where a first listener starts: the end of the log. Ids missing among the recent ones are gaps
   * whose transactions are those in flight now.
   */
  const start = async (): Promise<boolean> => {
    const at = generation;
    const rows = await sql.rows<{ id: number | null; snapshot: string }>(
      `select pg_current_snapshot()::text as snapshot, r.id from (select 1) one left join lateral (
         select id from audit_events where id > (select coalesce(max(id), 0) - ? from audit_events)
       ) r on true order by r.id`,
      [BATCH],
    );
    if (at !== generation) return false;
    const ids = rows.filter((r) => r.id !== null).map((r) => Number(r.id));
    const max = ids.at(-1) ?? 0;
    const present = new Set(ids);
    for (let id = Math.max(1, max - BATCH + 1); id < max; id++) if (!present.has(id)) gaps.set(id, null);
    last = handed = max;
    for (const resolve of started.splice(0)) resolve();
    return true;
  };

  const read = async () => {
    if (last === null && !(await start())) return;
    const at = generation;
    for (;;) {
      const from = last!;
      const rows = await readLog(sql, from, held.length >= MAX_HELD ? 0 : BATCH, [...gaps.keys()]);
      if (at !== generation) return;
      const flying = inFlight(rows[0].snapshot);
      const events = rows.filter((r) => r.eventID !== null).map(({ snapshot: _, ...event }) => event as ChangeEvent);
      const filled = new Set<number>();
      let expected = from + 1;
      for (const event of events) {
        if (event.eventID <= from) {
          filled.add(event.eventID);
          continue;
        }
        for (; expected < event.eventID; expected++) gaps.set(expected, null);
        expected = event.eventID + 1;
      }
      // A gap no row filled, none of whose transactions is still in flight, never will be.
      for (const [id, when] of gaps) {
        if (filled.has(id)) gaps.delete(id);
        else if (when === null) gaps.set(id, flying);
        else if (![...when].some((xid) => flying.has(xid))) gaps.delete(id);
      }
      last = Math.max(from, events.at(-1)?.eventID ?? from);
      if (events.length) held = [...held, ...events].sort((a, b) => a.eventID - b.eventID);
      const upTo = gaps.size ? Math.min(...gaps.keys()) - 1 : last;
      const ready = held.filter((e) => e.eventID <= upTo);
      if (ready.length) {
        held = held.slice(ready.length);
        handed = ready.at(-1)!.eventID;
        for (const listener of listeners) {
          try {
            listener(ready);
          } catch (err) {
            log.error('an event listener failed', { error: (err as Error)?.name });
          }
        }
      }
      if (!gaps.size) handed = Math.max(handed, last);
      if (events.filter((e) => e.eventID > from).length < BATCH || held.length >= MAX_HELD) return;
    }
  };

  const poll = () => {
    timer = undefined;
    if (closed || !listeners.size) return;
    reading = read()
      .then(() => (warned = false))
      .catch((err: Error) => {
        // Tried again on the next poll. The database away is the instance's outage (one pair of
        // lines, src/db/outage.ts); anything else (not migrated yet, with MIGRATE=false)
        // is this source's, told once until a read succeeds.
        if (!outage.pollFailed('events', err) && !warned) log.warn('events could not be read; retrying', { error: err?.name });
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
        reset(); // a read under way is dropped; the poll after it starts again if someone listens by then
      };
    },
    reading: () => (closed || last !== null || !listeners.size ? Promise.resolve() : new Promise<void>((resolve) => started.push(resolve))),
    handedOver: () => handed,
    horizon: () => (last === null ? 0 : gaps.size ? Math.min(...gaps.keys()) - 1 : last),
    async close() {
      closed = true;
      clearTimeout(timer);
      for (const resolve of started.splice(0)) resolve();
      await reading;
    },
  };
}
