import { SYSTEM_CALLER } from '../auth/caller.js';
import { auditEvents, type AuditEvent } from '../audit/audit.resource.js';
import type { Sql } from '../db/sql.js';
import { updateStatement } from '../resource/writes.js';
import { matchesSql } from './patterns.js';
import { webhooks } from './webhook.resource.js';

/**
 * Where each webhook's deliveries stand, in PostgreSQL (webhook_states, webhook_deliveries): the
 * statements of the dispatcher (src/webhooks/dispatcher.ts) and of a held endpoint
 * (src/webhooks/endpoint.ts). Every change of a state is made on condition that the lease it was
 * claimed with is still the one in the row: a holder whose lease ran out, or was taken away by a
 * replay or a re-enable, changes nothing.
 */

/** An endpoint as held: its webhook and the lease it was claimed with (`<instance>:<claim>`). */
export interface Lease {
  id: number;
  lease: string;
}

/** A claimed endpoint's state. */
export interface StateRow {
  id: number;
  position: number;
  attempt: number;
  nextAttemptAt: string | null;
}

/** A webhook's settings as a delivery needs them (the secrets sealed). */
export interface ConfigRow {
  id: number;
  url: string;
  events: string[];
  live: boolean;
  secret: Buffer;
  previous: Buffer[];
}

/** One attempt, as recorded in the history. */
export interface AttemptRecord {
  eventId: number;
  attempt: number;
  at: Date;
  status: number | null;
  durationMs: number;
  error: string | null;
  body: string | null;
}

/** Delivery attempts pruned per statement (short statements on a big table). */
const PRUNE_BATCH = 10_000;

const CLAIM = `update webhook_states s set lease_owner = ?, lease_until = now() + ?::integer * interval '1 millisecond'
  from (select c.webhook_id from webhook_states c join webhooks w on w.id = c.webhook_id
         where w.active and w.deleted_at is null and (c.lease_until is null or c.lease_until < now())
         order by c.webhook_id limit ? for update of c skip locked) free
 where s.webhook_id = free.webhook_id
 returning s.webhook_id as id, s.position, s.attempt, s.next_attempt_at as "nextAttemptAt"`;

/** The endpoints and their leases, as two arrays (unnest pairs them). */
const HELD = `(webhook_id, lease_owner) in (select * from unnest(?::bigint[], ?::text[]))`;
const RENEW = `update webhook_states set lease_until = now() + ?::integer * interval '1 millisecond' where ${HELD} returning webhook_id as id`;
const RELEASE = `update webhook_states set lease_owner = null, lease_until = null where ${HELD}`;

const CONFIGS = `select w.id, w.url, w.events, w.active and w.deleted_at is null as live, w.secret_cipher as secret,
    array(select o.secret_cipher from webhook_secrets o where o.webhook_id = w.id and o.signs_until > now() order by o.signs_until desc) as previous
  from webhooks w where w.id = any(?::bigint[])`;

const EVENTS = `select ${auditEvents.columns} from audit_events t
  where t.id > ? and t.id <= ? and ${matchesSql('?::text[]', 't')} order by t.id limit ?`;

const RECORD = `with d as (insert into webhook_deliveries (webhook_id, event_id, attempt, at, status, duration_ms, error, response_body)
    values (?::bigint, ?::bigint, ?::integer, ?::timestamptz, ?::integer, ?::integer, ?::text, ?::text))`;
/** The attempt recorded and the position moved past the event: one statement. */
const DELIVERED = `${RECORD}
  update webhook_states set position = ?::bigint, attempt = 0, next_attempt_at = null, failing_since = null
   where webhook_id = ?::bigint and lease_owner = ? returning webhook_id`;
const FAILED = `${RECORD}
  update webhook_states set attempt = attempt + 1, failing_since = coalesce(failing_since, ?::timestamptz)
   where webhook_id = ?::bigint and lease_owner = ? returning attempt, failing_since as "failingSince"`;
const SCHEDULE = `update webhook_states set next_attempt_at = ?::timestamptz where webhook_id = ?::bigint and lease_owner = ?`;
const ADVANCE = `update webhook_states set position = greatest(position, ?::bigint) where webhook_id = ?::bigint and lease_owner = ? and attempt = 0`;

const pairs = (held: readonly Lease[]) => [held.map((l) => l.id), held.map((l) => l.lease)];
const recordParams = (h: Lease, r: AttemptRecord) => [h.id, r.eventId, r.attempt, r.at.toISOString(), r.status, r.durationMs, r.error, r.body];

export function deliveryStates(sql: Sql) {
  return {
    /** Takes up to `batch` active webhooks no one holds (or whose holder's lease ran out). */
    claim: (lease: string, leaseMs: number, batch: number) => sql.rows<StateRow>(CLAIM, [lease, leaseMs, batch]),

    /** Renews the leases held; answers the endpoints still held (the others were lost). */
    async renew(leaseMs: number, held: readonly Lease[]): Promise<Set<number>> {
      return new Set((await sql.rows<{ id: number }>(RENEW, [leaseMs, ...pairs(held)])).map((r) => r.id));
    },

    /** Lets endpoints go: free for the next claim, this instance's or another's. */
    async release(held: readonly Lease[]): Promise<void> {
      if (held.length) await sql.rows(RELEASE, pairs(held));
    },

    configs: (ids: readonly number[]) => sql.rows<ConfigRow>(CONFIGS, [`{${ids.join(',')}}`]),

    /** The events after `after`, up to `upTo`, that the patterns match, in id order (as GET /audit/ answers them). */
    events: (after: number, upTo: number, patterns: readonly string[], limit: number) => sql.rows<AuditEvent>(EVENTS, [after, upTo, patterns, limit]),

    /** A 2xx: the attempt recorded, the position moved to the event; false when the lease was lost. */
    async delivered(h: Lease, record: AttemptRecord): Promise<boolean> {
      return (await sql.rows(DELIVERED, [...recordParams(h, record), record.eventId, h.id, h.lease])).length > 0;
    },

    /** A failure: the attempt recorded and counted; the event's failed attempts and first failure, or null when the lease was lost. */
    async failed(h: Lease, record: AttemptRecord): Promise<{ attempt: number; failingSince: string } | null> {
      const [row] = await sql.rows<{ attempt: number; failingSince: string }>(FAILED, [...recordParams(h, record), record.at.toISOString(), h.id, h.lease]);
      return row ?? null;
    },

    scheduleNext: (h: Lease, at: Date) => sql.rows(SCHEDULE, [at.toISOString(), h.id, h.lease]),

    /** Events passed over (none matched) need not be read again after a restart. */
    advance: (h: Lease, to: number) => sql.rows(ADVANCE, [to, h.id, h.lease]),

    /**
     * Disables the webhook (410, or retries exhausted): `active: false` and why, as an audited
     * write of the service, and the endpoint let go; its position stays before the event. False
     * when the lease was lost meanwhile.
     */
    disable: (h: Lease, reason: string) =>
      sql.transaction(async (tx) => {
        const [mine] = await tx.rows('select webhook_id from webhook_states where webhook_id = ? and lease_owner = ? for update', [h.id, h.lease]);
        if (!mine) return false;
        const statement = updateStatement(webhooks, h.id, { active: false, disabledReason: reason.slice(0, 255) }, 'patch', { caller: SYSTEM_CALLER });
        await tx.rows(statement.text, statement.params);
        await tx.rows(RELEASE, pairs([h]));
        return true;
      }),

    /** Retention: delivery attempts older than `logDays`, and previous secrets past their 24 hours. */
    async prune(logDays: number): Promise<void> {
      for (;;) {
        const removed = await sql.rows(
          `delete from webhook_deliveries where id = any(array(select id from webhook_deliveries where at < now() - ?::integer * interval '1 day' limit ${PRUNE_BATCH})) returning 1 as gone`,
          [logDays],
        );
        if (removed.length < PRUNE_BATCH) break;
      }
      await sql.rows('delete from webhook_secrets where signs_until <= now()');
    },
  };
}

export type DeliveryStates = ReturnType<typeof deliveryStates>;
