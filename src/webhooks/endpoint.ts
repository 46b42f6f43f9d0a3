import type { Webhook } from 'standardwebhooks';
import type { AuditEvent } from '../audit/audit.resource.js';
import type { WebhookConfig } from '../config.js';
import type { Logger } from '../observability/log.js';
import type { WebhookMetrics } from './metrics.js';
import type { DeliveryClient, Attempt } from './client.js';
import { checkDestination, RefusedDestination } from './destination.js';
import { nextAttempt } from './schedule.js';
import { signedHeaders } from './signing.js';
import type { ConfigRow, DeliveryStates, Lease, StateRow } from './states.js';
import type { Yielding } from './yielding.js';

/**
 * One endpoint while this instance holds it (src/webhooks/dispatcher.ts claims it): its loop
 * delivers the webhook's matching events one at a time, in id order, and only up to the event
 * source's horizon (every id up to it has committed or never will), so that an event committing
 * late below an id already delivered is never passed over. After a 2xx the attempt is recorded and
 * the position moved past the event in one statement, on condition of the lease; only then does
 * the next event go, so a holder killed mid-delivery leaves the position before the in-flight event.
 * Failures are recorded and retried on the schedule (src/webhooks/schedule.ts) until the window
 * ends; then, or at once on 410 Gone, the webhook is disabled.
 */

/** Events read ahead per statement. */
const READ_AHEAD = 100;
const USER_AGENT = 'user-token-service-webhooks/1';

/** What an endpoint works with, shared by every endpoint of the instance. */
export interface EndpointContext {
  states: DeliveryStates;
  client: DeliveryClient;
  /** The event source's horizon. */
  horizon(): number;
  log: Logger;
  metrics: WebhookMetrics | null;
  config: WebhookConfig;
  /** The signers of a webhook's secrets, or null (logged) when one cannot be opened with this instance's keys. */
  signers(row: ConfigRow): Webhook[] | null;
  /** Told when the endpoint stops being held (dropped, disabled, deleted, lease lost). */
  dropped(endpoint: Endpoint): void;
  /** Waited on before each delivery: deliveries give way to a busy instance's requests. */
  yielding: Yielding;
}

/** What an attempt's outcome is called in the metrics. */
function resultOf(attempt: Attempt): string {
  if (attempt.status !== null) return `${Math.floor(attempt.status / 100)}xx`;
  if (attempt.error === 'timeout') return 'timeout';
  return attempt.error?.startsWith('refused') ? 'refused' : 'error';
}

export class Endpoint implements Lease {
  readonly id: number;
  url: URL;
  patterns: string[];
  private signers: Webhook[];
  /** The newest event id done (delivered, or passed over as not matching), as stored. */
  position: number;
  /** How far events have been read (≥ position): matching ones among them are in `pending`. */
  scanned: number;
  pending: AuditEvent[] = [];
  /** Failed attempts at the next event. */
  failures: number;
  private nextAttemptAt: number | null;
  dropped = false;
  private waking: (() => void) | null = null;
  readonly running: Promise<void>;

  constructor(
    state: StateRow,
    readonly lease: string,
    row: ConfigRow,
    signers: Webhook[],
    private readonly ctx: EndpointContext,
  ) {
    this.id = state.id;
    this.url = new URL(row.url);
    this.patterns = row.events;
    this.signers = signers;
    this.position = this.scanned = state.position;
    this.failures = state.attempt;
    this.nextAttemptAt = state.nextAttemptAt ? Date.parse(state.nextAttemptAt) : null;
    this.running = this.run().catch((err: Error) => {
      // The database away, say: let it go; it is claimed again.
      ctx.log.error('webhook delivery stopped', { webhook: this.id, error: err?.name, message: err?.message });
      this.drop();
      return ctx.states.release([this]).catch(() => {});
    });
  }

  /** Ends a pause (a matching event, a change of its webhook, a stop). */
  wake(): void {
    this.waking?.();
  }

  /** Whether it waits for something to do (events wake only those). */
  get waiting(): boolean {
    return this.waking !== null;
  }

  drop(): void {
    if (this.dropped) return;
    this.dropped = true;
    this.wake();
    this.ctx.dropped(this);
  }

  /** Takes the webhook's settings (url, events, secrets); a changed `events` reads the events after the position again. */
  configure(row: ConfigRow, signers: Webhook[]): void {
    const patternsChanged = this.patterns.join(' ') !== row.events.join(' ');
    this.url = new URL(row.url);
    this.patterns = row.events;
    this.signers = signers;
    if (patternsChanged) {
      this.pending = [];
      this.scanned = this.position;
    }
  }

  /** Waits until `ms` pass or the endpoint is woken. */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(wait);
        this.waking = null;
        resolve();
      };
      const wait = setTimeout(done, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
      this.waking = done;
    });
  }

  /** The loop: the next matching event up to the horizon, one at a time, until it is dropped or the instance stops. */
  private async run(): Promise<void> {
    while (!this.dropped) {
      if (this.nextAttemptAt !== null && this.nextAttemptAt > Date.now()) {
        await this.pause(this.nextAttemptAt - Date.now());
      } else if (this.pending.length > 0) {
        // A busy instance's requests first (src/webhooks/yielding.ts); the event may have changed meanwhile.
        await this.ctx.yielding.turn();
        if (!this.dropped && this.pending.length > 0) await this.deliver(this.pending[0]);
      } else if (!(await this.read())) {
        await this.pause(this.ctx.config.pollMs);
      }
    }
  }

  /** Reads the next matching events up to the horizon; false when there are none (yet). */
  private async read(): Promise<boolean> {
    const horizon = this.ctx.horizon();
    // Past the position in any case: a change of `events` during a delivery sets `scanned` back.
    const from = Math.max(this.scanned, this.position);
    if (horizon <= from) return false;
    const found = await this.ctx.states.events(from, horizon, this.patterns, READ_AHEAD);
    // The webhook's settings as they are now, read after the events: a change committed before an
    // event (a rotation, a new url) applies to it.
    if (found.length && !(await this.refresh())) return true;
    this.pending = found;
    this.scanned = found.length === READ_AHEAD ? found[found.length - 1].id : horizon;
    return found.length > 0;
  }

  /** The webhook's settings afresh; false when it was let go (disabled, deleted, unreadable secret) or its `events` changed. */
  private async refresh(): Promise<boolean> {
    const [row] = await this.ctx.states.configs([this.id]);
    const signers = row?.live ? this.ctx.signers(row) : null;
    if (!row || !signers) {
      this.drop();
      await this.ctx.states.release([this]);
      return false;
    }
    const patterns = this.patterns.join(' ');
    this.configure(row, signers);
    return patterns === row.events.join(' ');
  }

  /** One attempt at an event: signed, sent, recorded, and what follows from it. */
  private async deliver(event: AuditEvent): Promise<void> {
    const { config, client, states, metrics } = this.ctx;
    const at = new Date();
    const started = performance.now();
    const body = JSON.stringify({ type: `${event.resource}.${event.action}`, timestamp: event.at, data: event });
    let attempt: Attempt;
    try {
      // Checked at every delivery (a name's DNS answer included, kept a few seconds: RECHECK_ANSWER_MS;
      // a new connection goes only to addresses its own fresh lookup checked: src/webhooks/client.ts).
      if (!config.allowPrivate) await checkDestination(this.url, config.timeoutMs);
      const headers = { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...signedHeaders(this.signers, event.id, at, body) };
      attempt = await client.post(this.url, headers, body);
    } catch (err) {
      const refused = err instanceof RefusedDestination;
      attempt = { status: null, body: null, error: refused ? `refused: ${err.message}` : ((err as NodeJS.ErrnoException).code ?? 'DNS lookup failed') };
    }
    const ok = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
    const error = ok ? null : (attempt.error ?? `HTTP ${attempt.status}`).slice(0, 255);
    const record = {
      eventId: event.id,
      attempt: this.failures + 1,
      at,
      status: attempt.status,
      durationMs: Math.round(performance.now() - started),
      error,
      body: attempt.body,
    };
    metrics?.attempt(resultOf(attempt));
    if (ok) {
      // Lost: another instance took the endpoint over (this one's lease ran out).
      if (!(await states.delivered(this, record))) return this.drop();
      metrics?.delivered('delivered');
      this.pending.shift();
      this.position = event.id;
      this.failures = 0;
      this.nextAttemptAt = null;
      return;
    }
    const failed = await states.failed(this, record);
    if (!failed) return this.drop();
    this.failures = failed.attempt;
    if (attempt.status === 410) {
      metrics?.delivered('gone');
      return this.disable(`the endpoint answered 410 Gone to event ${event.id}`);
    }
    const next = nextAttempt({ schedule: config.retrySchedule, retryMs: config.retryMs }, failed.attempt, Date.parse(failed.failingSince), Date.now());
    if (next === null) {
      metrics?.delivered('gave_up');
      const hours = Math.round((config.retryMs / 3_600_000) * 100) / 100;
      this.ctx.log.warn('webhook delivery given up', { webhook: this.id, eventID: event.id, attempts: failed.attempt, hours, last: error });
      return this.disable(`gave up on event ${event.id} after ${failed.attempt} attempts over ${hours} h (last: ${error})`);
    }
    await states.scheduleNext(this, new Date(next));
    this.nextAttemptAt = next;
  }

  private async disable(reason: string): Promise<void> {
    const done = await this.ctx.states.disable(this, reason);
    this.drop();
    if (done) this.ctx.log.warn('webhook disabled', { webhook: this.id, reason });
  }
}
