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

/**
 * Operations outside the list of trusted documents (src/graphql/gate.ts), by transport and
 * outcome: `logged` (run, in log mode), `refused` (enforce mode; an unknown id in either),
 * `explorer` (a full text from a token holding `*`, run in enforce mode). Prometheus keeps them
 * (src/http/metrics.ts).
 */
export interface TrustedDocumentMetrics {
  outside(transport: 'post' | 'get' | 'ws' | 'sse', outcome: 'logged' | 'refused' | 'explorer'): void;
}
