import { randomBytes } from 'node:crypto';
import type { Webhook } from 'standardwebhooks';
import { SYSTEM_CALLER } from '../auth/bootstrap.js';
import { auditEvents, type AuditEvent } from '../audit/audit.resource.js';
import type { WebhookConfig } from '../config.js';
import type { Sql } from '../db/sql.js';
import type { Logger } from '../observability/log.js';
import type { WebhookMetrics } from '../observability/metrics.js';
import type { ChangeEvent, EventSource } from '../realtime/events.js';
import { updateStatement } from '../resource/writes.js';
import type { Keyring } from '../tokens/secrets.js';
import { deliveryClient, type Attempt } from './client.js';
import { checkDestination, RefusedDestination } from './destination.js';
import { matches, matchesSql } from './patterns.js';
import { nextAttempt } from './schedule.js';
import { signedHeaders, signersOf } from './signing.js';
import { webhooks } from './webhook.resource.js';

/**
 * Delivers committed changes to webhooks (docs/rest.md#webhooks, Guarantees), on every instance
 * (and every worker) alike, with PostgreSQL as the only shared state:
 *
 * - **Who delivers to an endpoint.** Each webhook has a row in webhook_states. An instance claims
 *   the rows of active webhooks that no one holds (or whose holder's lease ran out) with
 *   `FOR UPDATE SKIP LOCKED`, holding each by a lease (`lease_owner`, `lease_until`) that it renews
 *   every WEBHOOK_POLL_MS while it runs. One instance holds an endpoint at a time; a stopped
 *   instance lets its endpoints go at once, a killed one when its leases run out (WEBHOOK_LEASE_MS).
 * - **In order, at least once.** The holder delivers the endpoint's matching events one at a time
 *   in id order, and only up to the event source's horizon (src/realtime/events.ts: every id up to
 *   it has committed or never will), so that an event committing late below an id already
 *   delivered cannot be passed over. After a 2xx, one statement records the attempt and moves the
 *   position past the event, on condition that the lease is still this instance's; only then does
 *   the next event go. A holder killed mid-delivery leaves the position before the in-flight
 *   event, which the next holder delivers again (same webhook-id).
 * - **Failures.** Any other answer, a timeout, a connection error or a refused address is recorded
 *   and retried after the schedule's next delay (src/webhooks/schedule.ts) until WEBHOOK_RETRY_HOURS
 *   after the event's first failure; then, or at once on 410 Gone, the webhook is disabled
 *   (`active: false` with `disabledReason`, an audited write of the service, a `warn` line). Its
 *   position stays before the event: setting `active` back to true resumes with it.
 */

export interface Dispatcher {
  /** Lets every held endpoint go (after the attempts under way), then closes the client. */
  stop(): Promise<void>;
}

export interface DispatcherDeps {
  sql: Sql;
  keyring: Keyring;
  events: EventSource;
  log: Logger;
  metrics: WebhookMetrics | null;
  config: WebhookConfig;
}

/** Events read ahead per endpoint, per statement. */
const READ_AHEAD = 100;
/** Endpoints claimed per statement. */
const CLAIM_BATCH = 100;
/** Retention runs every this many polls (and at the first). */
const PRUNE_EVERY_POLLS = 60;
/** Delivery attempts pruned per statement (short statements on a big table). */
const PRUNE_BATCH = 10_000;

const USER_AGENT = 'user-token-service-webhooks/1';

/** An endpoint this instance holds. */
interface Held {
  id: number;
  /**
   * The lease it holds it by (`lease_owner`): the instance's id and the claim's number, so that a
   * holder whose lease was taken away (a replay, a re-enable) and claimed again by this same
   * instance can tell its old claim from the new one.
   */
  lease: string;
  url: URL;
  patterns: string[];
  signers: Webhook[];
  /** The newest event id done (delivered, or passed over as not matching), as stored. */
  position: number;
  /** How far events have been read (≥ position): matching ones among them are in `pending`. */
  scanned: number;
  pending: AuditEvent[];
  /** Failed attempts at the next event. */
  failures: number;
  nextAttemptAt: number | null;
  dropped: boolean;
  wake: (() => void) | null;
  running: Promise<void> | null;
}

interface StateRow {
  id: number;
  position: number;
  attempt: number;
  nextAttemptAt: string | null;
}

interface ConfigRow {
  id: number;
  url: string;
  events: string[];
  live: boolean;
  secret: Buffer;
  previous: Buffer[];
}

const CLAIM = `update webhook_states s set lease_owner = ?, lease_until = now() + ?::integer * interval '1 millisecond'
  from (select c.webhook_id from webhook_states c join webhooks w on w.id = c.webhook_id
         where w.active and w.deleted_at is null and (c.lease_until is null or c.lease_until < now())
         order by c.webhook_id limit ? for update of c skip locked) free
 where s.webhook_id = free.webhook_id
 returning s.webhook_id as id, s.position, s.attempt, s.next_attempt_at as "nextAttemptAt"`;

/** The endpoints and their leases, as two arrays (unnest pairs them). */
const HELD_PAIRS = `(webhook_id, lease_owner) in (select * from unnest(?::bigint[], ?::text[]))`;

const RENEW = `update webhook_states set lease_until = now() + ?::integer * interval '1 millisecond'
  where ${HELD_PAIRS} returning webhook_id as id`;

const CONFIGS = `select w.id, w.url, w.events, w.active and w.deleted_at is null as live, w.secret_cipher as secret,
    array(select o.secret_cipher from webhook_secrets o where o.webhook_id = w.id and o.signs_until > now() order by o.signs_until desc) as previous
  from webhooks w where w.id = any(?::bigint[])`;

const EVENTS = `select ${auditEvents.columns} from audit_events t
  where t.id > ? and t.id <= ? and ${matchesSql('?::text[]', 't')} order by t.id limit ?`;

/** The attempt recorded and, for a 2xx, the position moved past the event: one statement, on condition of the lease. */
const RECORD = `with d as (insert into webhook_deliveries (webhook_id, event_id, attempt, at, status, duration_ms, error, response_body)
    values (?::bigint, ?::bigint, ?::integer, ?::timestamptz, ?::integer, ?::integer, ?::text, ?::text))`;
const DELIVERED = `${RECORD}
  update webhook_states set position = ?::bigint, attempt = 0, next_attempt_at = null, failing_since = null
   where webhook_id = ?::bigint and lease_owner = ? returning webhook_id`;
const FAILED = `${RECORD}
  update webhook_states set attempt = attempt + 1, failing_since = coalesce(failing_since, ?::timestamptz)
   where webhook_id = ?::bigint and lease_owner = ? returning attempt, failing_since as "failingSince"`;
const SCHEDULE = `update webhook_states set next_attempt_at = ?::timestamptz where webhook_id = ?::bigint and lease_owner = ?`;
const ADVANCE = `update webhook_states set position = greatest(position, ?::bigint) where webhook_id = ?::bigint and lease_owner = ? and attempt = 0`;
const RELEASE = `update webhook_states set lease_owner = null, lease_until = null where ${HELD_PAIRS}`;

/** What an attempt's outcome is called in the metrics. */
function resultOf(attempt: Attempt): string {
  if (attempt.status !== null) return `${Math.floor(attempt.status / 100)}xx`;
  if (attempt.error === 'timeout') return 'timeout';
  return attempt.error?.startsWith('refused') ? 'refused' : 'error';
}

/** Text as a column of at most `max` characters takes it. */
const clip = (text: string | null, max: number) => (text === null ? null : text.length > max ? text.slice(0, max) : text);

export function startDispatcher(deps: DispatcherDeps): Dispatcher {
  const { sql, keyring, events, log, metrics, config } = deps;
  const owner = `${process.pid}-${randomBytes(6).toString('hex')}`;
  let claims = 0;
  const client = deliveryClient({ timeoutMs: config.timeoutMs, allowPrivate: config.allowPrivate });
  const held = new Map<number, Held>();
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | null = null;
  let polls = 0;
  let soon = false;
  let warned = false;
  /**
   * Listening to the event source while this instance holds endpoints (its horizon moves only
   * while someone listens; an instance holding none reads nothing every 100 ms).
   */
  let unlisten: (() => void) | null = null;

  /** Waits until `ms` pass, the endpoint is woken (a matching event, a change of its webhook), or the dispatcher stops. */
  const pause = (h: Held, ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(wait);
        h.wake = null;
        resolve();
      };
      const wait = setTimeout(done, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
      h.wake = done;
    });

  const drop = (h: Held) => {
    h.dropped = true;
    held.delete(h.id);
    h.wake?.();
  };

  /** Endpoints and their leases as RENEW and RELEASE take them. */
  const pairs = (leases: readonly { id: number; lease: string }[]) => [leases.map((l) => l.id), leases.map((l) => l.lease)];

  /** Lets endpoints go (they are free for the next claim, this instance's or another's). */
  const release = async (leases: readonly { id: number; lease: string }[]) => {
    if (leases.length) await sql.rows(RELEASE, pairs(leases));
  };

  /** The secrets that sign an endpoint's deliveries: its own, then previous ones still within their 24 hours. */
  const signersFrom = (row: ConfigRow) => signersOf([row.secret, ...row.previous].map((sealed) => keyring.open('webhookSecret', sealed)));

  /**
   * The signers, or null (logged) when a secret cannot be opened: sealed under a key this instance
   * does not hold. Such an endpoint is let go rather than held without delivering.
   */
  const readableSigners = (row: ConfigRow): Webhook[] | null => {
    try {
      return signersFrom(row);
    } catch (err) {
      log.error('a webhook secret cannot be opened with this instance’s keys', { webhook: row.id, error: (err as Error)?.name });
      return null;
    }
  };

  /** Takes a webhook's configuration (url, events, secrets); a changed `events` reads the events after its position again. */
  const configure = (h: Held, row: ConfigRow, signers: Webhook[]) => {
    const patternsChanged = h.patterns.join(' ') !== row.events.join(' ');
    h.url = new URL(row.url);
    h.patterns = row.events;
    h.signers = signers;
    if (patternsChanged) {
      h.pending = [];
      h.scanned = h.position;
    }
  };

  /**
   * Disables the webhook (410, or retries exhausted): `active: false` and why, as an audited write
   * of the service, and the endpoint let go; its position stays before the event.
   */
  const disable = async (h: Held, reason: string) => {
    const done = await sql.transaction(async (tx) => {
      const [mine] = await tx.rows('select webhook_id from webhook_states where webhook_id = ? and lease_owner = ? for update', [h.id, h.lease]);
      if (!mine) return false;
      const statement = updateStatement(webhooks, h.id, { active: false, disabledReason: clip(reason, 255) }, 'patch', { caller: SYSTEM_CALLER });
      await tx.rows(statement.text, statement.params);
      await tx.rows(RELEASE, pairs([h]));
      return true;
    });
    drop(h);
    if (done) log.warn('webhook disabled', { webhook: h.id, reason });
  };

  /** One attempt at the endpoint's next event, recorded with what follows from it. */
  const deliverOne = async (h: Held, event: AuditEvent) => {
    const attemptNumber = h.failures + 1;
    const startedAt = new Date();
    const started = performance.now();
    const body = JSON.stringify({ type: `${event.resource}.${event.action}`, timestamp: event.at, data: event });
    let attempt: Attempt;
    try {
      // Checked at every delivery (a name's DNS answers included; the connection itself goes only
      // to addresses its own lookup checked: src/webhooks/client.ts).
      if (!config.allowPrivate) await checkDestination(h.url, config.timeoutMs);
      const headers = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...signedHeaders(h.signers, event.id, startedAt, body),
      };
      attempt = await client.post(h.url, headers, body);
    } catch (err) {
      const refused = err instanceof RefusedDestination;
      attempt = { status: null, body: null, error: refused ? `refused: ${err.message}` : ((err as NodeJS.ErrnoException).code ?? 'DNS lookup failed') };
    }
    const durationMs = Math.round(performance.now() - started);
    const ok = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
    const error = ok ? null : clip(attempt.error ?? (attempt.status !== null ? `HTTP ${attempt.status}` : 'failed'), 255);
    const record = [h.id, event.id, attemptNumber, startedAt.toISOString(), attempt.status, durationMs, error, attempt.body];
    metrics?.attempt(resultOf(attempt));
    if (ok) {
      const [kept] = await sql.rows(DELIVERED, [...record, event.id, h.id, h.lease]);
      if (!kept) return drop(h); // another instance took the endpoint over (this one's lease ran out)
      metrics?.delivered('delivered');
      h.pending.shift();
      h.position = event.id;
      h.failures = 0;
      h.nextAttemptAt = null;
      return;
    }
    const [failed] = await sql.rows<{ attempt: number; failingSince: string }>(FAILED, [...record, startedAt.toISOString(), h.id, h.lease]);
    if (!failed) return drop(h);
    h.failures = failed.attempt;
    if (attempt.status === 410) {
      metrics?.delivered('gone');
      return disable(h, `the endpoint answered 410 Gone to event ${event.id}`);
    }
    const next = nextAttempt({ schedule: config.retrySchedule, retryMs: config.retryMs }, failed.attempt, Date.parse(failed.failingSince), Date.now());
    if (next === null) {
      metrics?.delivered('gave_up');
      const hours = Math.round((config.retryMs / 3_600_000) * 100) / 100;
      log.warn('webhook delivery given up', { webhook: h.id, eventID: event.id, attempts: failed.attempt, hours, last: error });
      return disable(h, `gave up on event ${event.id} after ${failed.attempt} attempts over ${hours} h (last: ${error})`);
    }
    await sql.rows(SCHEDULE, [new Date(next).toISOString(), h.id, h.lease]);
    h.nextAttemptAt = next;
  };

  /**
   * Takes the webhook's settings afresh; false when the endpoint was let go (disabled, deleted, a
   * secret it cannot open) or its `events` changed (what was read must be read again).
   */
  const refresh = async (h: Held): Promise<boolean> => {
    const [row] = await configsOf([h.id]);
    const signers = row?.live ? readableSigners(row) : null;
    if (!row || !signers) {
      drop(h);
      await release([h]);
      return false;
    }
    const patterns = h.patterns.join(' ');
    configure(h, row, signers);
    return patterns === row.events.join(' ');
  };

  /** The endpoint's loop while this instance holds it: its next matching event up to the horizon, one at a time. */
  const run = async (h: Held) => {
    while (!h.dropped && !stopping) {
      if (h.nextAttemptAt !== null && h.nextAttemptAt > Date.now()) {
        await pause(h, h.nextAttemptAt - Date.now());
        continue;
      }
      if (h.pending.length === 0) {
        const horizon = events.horizon();
        // Past the position in any case: a change of `events` during a delivery sets `scanned` back.
        const from = Math.max(h.scanned, h.position);
        if (horizon > from) {
          const found = await sql.rows<AuditEvent>(EVENTS, [from, horizon, h.patterns, READ_AHEAD]);
          // The webhook's settings as they are now, read after the events: a change committed
          // before an event (a rotation, a new url) applies to it.
          if (found.length && !(await refresh(h))) continue;
          h.pending = found;
          h.scanned = found.length === READ_AHEAD ? found[found.length - 1].id : horizon;
        }
        if (h.pending.length === 0) {
          await pause(h, config.pollMs);
          continue;
        }
      }
      await deliverOne(h, h.pending[0]);
    }
  };

  const hold = (state: StateRow, lease: string, row: ConfigRow, signers: Webhook[]) => {
    const h: Held = {
      id: state.id,
      lease,
      url: new URL(row.url),
      patterns: row.events,
      signers,
      position: state.position,
      scanned: state.position,
      pending: [],
      failures: state.attempt,
      nextAttemptAt: state.nextAttemptAt ? Date.parse(state.nextAttemptAt) : null,
      dropped: false,
      wake: null,
      running: null,
    };
    held.set(h.id, h);
    unlisten ??= events.listen(onEvents);
    h.running = run(h).catch((err: Error) => {
      // The database away, a secret under a key this instance lacks: let it go; it is claimed again.
      log.error('webhook delivery stopped', { webhook: h.id, error: err?.name, message: err?.message });
      drop(h);
      return release([h]).catch(() => {});
    });
  };

  const configsOf = (ids: number[]) => sql.rows<ConfigRow>(CONFIGS, [`{${ids.join(',')}}`]);

  /**
   * One poll: renew the leases held (dropping what was lost), take the webhooks' configurations
   * afresh (dropping what was disabled or deleted), store how far endpoints with nothing to deliver
   * have read, claim free endpoints, and now and then prune the history.
   */
  const poll = async () => {
    const holding = [...held.values()];
    if (holding.length) {
      const renewed = new Set((await sql.rows<{ id: number }>(RENEW, [config.leaseMs, ...pairs(holding)])).map((r) => r.id));
      for (const h of holding) if (!renewed.has(h.id)) drop(h);
      const kept = holding.filter((h) => renewed.has(h.id)).map((h) => h.id);
      const gone: Held[] = [];
      for (const row of kept.length ? await configsOf(kept) : []) {
        const h = held.get(row.id);
        if (!h) continue;
        const signers = row.live ? readableSigners(row) : null;
        if (!signers) {
          drop(h);
          gone.push(h);
        } else configure(h, row, signers);
      }
      await release(gone);
      for (const h of held.values()) {
        // Passed-over events need not be read again after a restart (only when nothing is failing or pending).
        const to = h.scanned;
        if (to > h.position && h.pending.length === 0 && h.failures === 0) {
          await sql.rows(ADVANCE, [to, h.id, h.lease]);
          h.position = Math.max(h.position, to);
        }
      }
    }
    const lease = `${owner}:${++claims}`;
    const claimed = await sql.rows<StateRow>(CLAIM, [lease, config.leaseMs, CLAIM_BATCH]);
    if (claimed.length) {
      const rows = new Map((await configsOf(claimed.map((c) => c.id))).map((r) => [r.id, r]));
      for (const state of claimed) {
        // A holder still here lost its lease between the renewal and this claim (a replay, a
        // re-enable): the claim's state is the truth, the old holder stops.
        const stale = held.get(state.id);
        if (stale) drop(stale);
        const row = rows.get(state.id);
        const signers = row?.live && !stopping ? readableSigners(row) : null;
        if (row && signers) hold(state, lease, row, signers);
        else await release([{ id: state.id, lease }]);
      }
    }
    if (polls++ % PRUNE_EVERY_POLLS === 0) await prune();
    if (held.size === 0 && unlisten) {
      unlisten();
      unlisten = null;
    }
  };

  /** Retention: delivery attempts older than WEBHOOK_LOG_DAYS, and previous secrets past their 24 hours. */
  const prune = async () => {
    for (;;) {
      const removed = await sql.rows(
        `delete from webhook_deliveries where id = any(array(select id from webhook_deliveries where at < now() - ?::integer * interval '1 day' limit ${PRUNE_BATCH})) returning 1 as gone`,
        [config.logDays],
      );
      if (removed.length < PRUNE_BATCH) break;
    }
    await sql.rows('delete from webhook_secrets where signs_until <= now()');
  };

  const schedule = (ms: number) => {
    if (stopping || polling) return;
    clearTimeout(timer);
    timer = setTimeout(tick, ms);
  };

  function tick() {
    timer = undefined;
    soon = false;
    polling = poll()
      .then(() => (warned = false))
      .catch((err: Error) => {
        // Not migrated yet (MIGRATE=false), or the database away: tried again on the next poll.
        if (!warned) log.warn('webhook deliveries could not be polled; retrying', { error: err?.name });
        warned = true;
      })
      .then(() => {
        polling = null;
        schedule(soon ? 0 : config.pollMs);
      });
  }

  // Events wake the endpoints they match; a change of a webhook polls at once (a new one is
  // claimed, a disabled or changed one taken afresh).
  function onEvents(batch: readonly ChangeEvent[]) {
    let webhookChanged = false;
    for (const event of batch) {
      if (event.resource === 'webhook') webhookChanged = true;
      for (const h of held.values()) if (h.wake && matches(h.patterns, event.resource, event.action)) h.wake();
    }
    if (webhookChanged) {
      if (polling) soon = true;
      else schedule(0);
    }
  }
  tick();

  return {
    async stop() {
      stopping = true;
      clearTimeout(timer);
      unlisten?.();
      unlisten = null;
      await polling;
      const holding = [...held.values()];
      for (const h of holding) h.wake?.();
      // Attempts under way end within WEBHOOK_TIMEOUT_MS.
      await Promise.all(holding.map((h) => h.running));
      await release(holding).catch((err: Error) => log.warn('webhooks could not be let go; their leases run out', { error: err?.name }));
      await client.close();
    },
  };
}
