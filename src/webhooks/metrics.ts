import { Counter, Gauge, type Registry } from 'prom-client';

/** Where webhook endpoints stand, read from the database when /metrics is asked (src/webhooks/standing.ts). */
export interface WebhookStanding {
  /** Per active webhook: seconds between the newest matching event and the last one delivered (0 when caught up). */
  lags: readonly { webhook: number; seconds: number }[];
  /** Live webhooks the service (or an operator) disabled. */
  disabled: number;
}

/** What webhook deliveries count: attempts by result, events done by outcome. */
export interface WebhookMetrics {
  /** An attempt: `2xx`, `3xx`, `4xx`, `5xx` (the status's class), `timeout`, `error` (no answer) or `refused` (address). */
  attempt(result: string): void;
  /** An event done with, for one endpoint: `delivered` (2xx), `gone` (410: disabled), `gave_up` (retries exhausted: disabled). */
  delivered(outcome: 'delivered' | 'gone' | 'gave_up'): void;
}

/**
 * The webhooks' metrics in the registry of GET /metrics (docs/operations.md#metrics): attempts by
 * result, events done by outcome, and two gauges of where the endpoints stand, read through
 * `readStanding` once per scrape.
 */
export function webhookMetrics(registry: Registry, readStanding: () => Promise<WebhookStanding>): WebhookMetrics {
  const attempts = new Counter({
    name: 'webhook_attempts_total',
    help: 'Webhook delivery attempts, by result: 2xx, 3xx, 4xx, 5xx (the answer’s status class), timeout, error (no answer) or refused (a private address)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const deliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Events done with per webhook, by outcome: delivered (2xx), gone (410: the webhook was disabled) or gave_up (retries exhausted: disabled)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  // Series that exist from the start, so that a dashboard sees zeros rather than nothing.
  for (const outcome of ['delivered', 'gone', 'gave_up']) deliveries.inc({ outcome }, 0);
  let standing: Promise<WebhookStanding | null> | null = null;
  /** One read of the database per scrape, shared by both gauges. */
  const standingOnce = () => {
    standing ??= readStanding()
      .catch(() => null)
      .finally(() => setTimeout(() => (standing = null), 0));
    return standing;
  };
  // Every worker reads the same database: the group's value is any one's (max), not their sum.
  new Gauge({
    name: 'webhook_lag_seconds',
    help: 'Per active webhook: seconds between the newest event it matches and the last one delivered to it (0 when caught up)',
    labelNames: ['webhook'] as const,
    aggregator: 'max',
    registers: [registry],
    async collect() {
      const now = await standingOnce();
      this.reset();
      for (const { webhook, seconds } of now?.lags ?? []) this.set({ webhook: String(webhook) }, seconds);
    },
  });
  new Gauge({
    name: 'webhook_endpoints_disabled',
    help: 'Live webhooks that are disabled (given up on, 410 Gone, or set so)',
    aggregator: 'max',
    registers: [registry],
    async collect() {
      const now = await standingOnce();
      if (now) this.set(now.disabled);
    },
  });
  return {
    attempt: (result) => attempts.inc({ result }),
    delivered: (outcome) => deliveries.inc({ outcome }),
  };
}
