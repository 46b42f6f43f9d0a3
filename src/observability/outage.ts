import type { Logger } from './log.js';

/**
 * One `warn` line when the database becomes unavailable and one when it is back (docs/operations.md), instead
 * of nothing above `info` during thousands of 503s, or one line per failed request. A request that
 * failed as UNAVAILABLE marks the start; the next API request that succeeds (it read the bearer
 * token from the database) marks the end.
 */
export class DatabaseOutage {
  private since: number | null = null;
  private failures = 0;

  constructor(private readonly log: Logger) {}

  failed(requestId: string): void {
    this.failures += 1;
    if (this.since !== null) return;
    this.since = Date.now();
    this.log.warn('database unavailable: answering 503 until it is back', { requestId });
  }

  succeeded(): void {
    if (this.since === null) return;
    this.log.warn('database available again', { downForMs: Date.now() - this.since, failedRequests: this.failures });
    this.since = null;
    this.failures = 0;
  }
}
