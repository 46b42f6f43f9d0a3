/**
 * What the subscriptions count (src/realtime/): connections by transport, subscriptions by
 * operation, events, closes by reason. Prometheus keeps them (src/http/metrics.ts, which serves
 * GET /metrics).
 */
export interface RealtimeMetrics {
  connected(transport: 'ws' | 'sse', delta: number): void;
  subscribed(operation: string, delta: number): void;
  sent(count: number): void;
  closed(transport: 'ws' | 'sse', reason: string): void;
}

/** Where webhook endpoints stand, read from the database when /metrics is asked (src/webhooks/standing.ts). */
export interface WebhookStanding {
  /** Per active webhook: seconds between the newest matching event and the last one delivered (0 when caught up). */
  lags: readonly { webhook: number; seconds: number }[];
  /** Live webhooks the service (or an operator) disabled. */
  disabled: number;
}

/** What webhook deliveries count: attempts by result, events done by outcome; and where endpoints stand. */
export interface WebhookMetrics {
  /** An attempt: `2xx`, `3xx`, `4xx`, `5xx` (the status's class), `timeout`, `error` (no answer) or `refused` (address). */
  attempt(result: string): void;
  /** An event done with, for one endpoint: `delivered` (2xx), `gone` (410: disabled), `gave_up` (retries exhausted: disabled). */
  delivered(outcome: 'delivered' | 'gone' | 'gave_up'): void;
  /** Where the gauges read the endpoints' lag and the disabled count. */
  readStanding(read: () => Promise<WebhookStanding>): void;
}
