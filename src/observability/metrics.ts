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
