import { randomBytes } from 'node:crypto';
import type { Webhook } from 'standardwebhooks';
import type { WebhookConfig } from '../config.js';
import type { Sql } from '../db/sql.js';
import type { Logger } from '../observability/log.js';
import type { DatabaseOutage } from '../db/outage.js';
import type { WebhookMetrics } from './metrics.js';
import type { ChangeEvent, EventSource } from '../realtime/events.js';
import type { Keyring } from '../db/keyring.js';
import { deliveryClient } from './client.js';
import { Endpoint, type EndpointContext } from './endpoint.js';
import { yielding } from './yielding.js';
import { matches } from './patterns.js';
import { signersOf } from './signing.js';
import { deliveryStates, type ConfigRow } from './states.js';

/**
 * Delivers committed changes to webhooks (docs/rest.md#webhooks, Guarantees), on every instance
 * (and every worker) alike, with PostgreSQL as the only shared state. Each webhook has a row in
 * webhook_states (src/webhooks/states.ts). Every WEBHOOK_POLL_MS an instance renews the leases of
 * the endpoints it holds, takes their settings afresh, and claims the rows of active webhooks that
 * no one holds (or whose holder's lease ran out) with `FOR UPDATE SKIP LOCKED`: one instance holds
 * an endpoint at a time. Each held endpoint delivers on its own (src/webhooks/endpoint.ts), woken
 * by the events it matches. A stopped instance lets its endpoints go at once, a killed one when its
 * leases run out (WEBHOOK_LEASE_MS).
 */
export interface Dispatcher {
  /** Lets every held endpoint go (after the attempts under way), then closes the client. */
  stop(): Promise<void>;
}

export interface DispatcherDeps {
  /** Its own small pool (src/db/database.ts, backgroundSql): never behind requests. */
  sql: Sql;
  keyring: Keyring;
  events: EventSource;
  log: Logger;
  /** The database's outage lines (src/db/outage.ts): a poll the database could not serve is told there, not in a line of its own. */
  outage: DatabaseOutage;
  metrics: WebhookMetrics | null;
  config: WebhookConfig;
}

/** Endpoints claimed per statement. */
const CLAIM_BATCH = 100;
/** Retention runs every this many polls (and at the first). */
const PRUNE_EVERY_POLLS = 60;

/**
 * Renews what is held (dropping what was lost) and takes the webhooks' settings afresh (dropping
 * the disabled and deleted); moves past the events passed over.
 */
async function keepHeld(
  held: ReadonlyMap<number, Endpoint>,
  states: DeliveryStates,
  leaseMs: number,
  context: EndpointContext,
  renewing: boolean,
): Promise<void> {
  const holding = [...held.values()];
  if (!holding.length) return;
  const renewed = renewing ? await states.renew(leaseMs, holding) : new Set(holding.map((e) => e.id));
  for (const endpoint of holding) if (!renewed.has(endpoint.id)) endpoint.drop();
  const kept = holding.filter((e) => renewed.has(e.id));
  const gone: Endpoint[] = [];
  for (const row of kept.length ? await states.configs(kept.map((e) => e.id)) : []) {
    const endpoint = held.get(row.id);
    const signers = row.live ? context.signers(row) : null;
    if (endpoint && signers) endpoint.configure(row, signers);
    else if (endpoint) {
      endpoint.drop();
      gone.push(endpoint);
    }
  }
  await states.release(gone);
  for (const endpoint of held.values()) {
    // Events passed over need not be read again after a restart (while nothing is failing or pending).
    const to = endpoint.scanned;
    if (to > endpoint.position && endpoint.pending.length === 0 && endpoint.failures === 0) {
      await states.advance(endpoint, to);
      endpoint.position = Math.max(endpoint.position, to);
    }
  }
}

type DeliveryStates = ReturnType<typeof deliveryStates>;

export function startDispatcher(deps: DispatcherDeps): Dispatcher {
  const { keyring, events, log, config } = deps;
  const owner = `${process.pid}-${randomBytes(6).toString('hex')}`;
  const states = deliveryStates(deps.sql);
  const client = deliveryClient({ timeoutMs: config.timeoutMs, allowPrivate: config.allowPrivate });
  const held = new Map<number, Endpoint>();
  let claims = 0;
  let polls = 0;
  /** When the leases held were last renewed (0: at the first poll). */
  let renewedAt = 0;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<void> | null = null;
  let soon = false;
  let warned = false;
  /** Listening to the event source only while holding endpoints (an instance holding none reads nothing every 100 ms). */
  let unlisten: (() => void) | null = null;

  const context: EndpointContext = {
    states,
    client,
    horizon: () => events.horizon(),
    log,
    metrics: deps.metrics,
    config,
    yielding: yielding(config.yieldMs),
    signers(row: ConfigRow): Webhook[] | null {
      try {
        return signersOf([row.secret, ...row.previous].map((sealed) => keyring.open('webhookSecret', sealed)));
      } catch (err) {
        // Sealed under a key this instance does not hold: let go rather than held without delivering.
        log.error('a webhook secret cannot be opened with this instance’s keys', { webhook: row.id, error: (err as Error)?.name });
        return null;
      }
    },
    dropped: (endpoint) => {
      if (held.get(endpoint.id) === endpoint) held.delete(endpoint.id);
    },
  };

  /** Claims free endpoints and starts delivering to them. */
  const claim = async () => {
    const lease = `${owner}:${++claims}`;
    const claimed = await states.claim(lease, config.leaseMs, CLAIM_BATCH);
    if (!claimed.length) return;
    const rows = new Map((await states.configs(claimed.map((c) => c.id))).map((r) => [r.id, r]));
    for (const state of claimed) {
      // A holder still here lost its lease between the renewal and this claim (a replay, a
      // re-enable): the claim's state is the truth, the old holder stops.
      held.get(state.id)?.drop();
      const row = rows.get(state.id);
      const signers = row?.live && !stopping ? context.signers(row) : null;
      if (!row || !signers) {
        await states.release([{ id: state.id, lease }]);
        continue;
      }
      held.set(state.id, new Endpoint(state, lease, row, signers, context));
      unlisten ??= events.listen(onEvents);
    }
  };

  const poll = async () => {
    // Leases are renewed a third of their length before they run out, not at every poll: a renewal
    // is a write, and a write every poll moves the database's snapshot (which the read cache keys
    // answers by) as often. Losing a lease meanwhile (a replay, a re-enable) is found out at the
    // latest here, and before that by the delivery's own statement, which is conditional on it.
    const renewing = Date.now() - renewedAt >= config.leaseMs / 3;
    if (renewing) renewedAt = Date.now();
    await keepHeld(held, states, config.leaseMs, context, renewing);
    await claim();
    if (polls++ % PRUNE_EVERY_POLLS === 0) await states.prune(config.logDays);
    if (held.size === 0 && unlisten) {
      unlisten();
      unlisten = null;
    }
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
        // Tried again on the next poll. The database away (or shutting down) is the instance's
        // outage, one pair of lines however many parts notice it; anything else (not migrated yet,
        // with MIGRATE=false) is this poller's, told once until a poll succeeds.
        if (!deps.outage.pollFailed('webhooks', err) && !warned) log.warn('webhook deliveries could not be polled; retrying', { error: err?.name });
        warned = true;
      })
      .then(() => {
        polling = null;
        schedule(soon ? 0 : config.pollMs);
      });
  }

  /** Events wake the endpoints they match; a change of a webhook polls at once (a new one claimed, a changed one taken afresh). */
  function onEvents(batch: readonly ChangeEvent[]) {
    let webhookChanged = false;
    for (const event of batch) {
      if (event.resource === 'webhook') webhookChanged = true;
      for (const endpoint of held.values()) if (endpoint.waiting && matches(endpoint.patterns, event.resource, event.action)) endpoint.wake();
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
      await polling;
      unlisten?.();
      unlisten = null;
      const holding = [...held.values()];
      for (const endpoint of holding) endpoint.drop();
      // Attempts under way end within WEBHOOK_TIMEOUT_MS (their outcome recorded).
      await Promise.all(holding.map((e) => e.running));
      await states.release(holding).catch((err: Error) => log.warn('webhooks could not be let go; their leases run out', { error: err?.name }));
      await client.close();
    },
  };
}
