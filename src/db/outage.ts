import type { Logger } from '../observability/log.js';
import { isDatabaseAway } from './sql.js';

/**
 * One `warn` line when the database becomes unavailable and one when it is back (docs/operations.md), instead
 * of nothing above `info` during thousands of 503s, or one line per failed request or poll. One per
 * database (database.ts), told by whatever uses it: a request answered 503 as UNAVAILABLE, or
 * a background poll (webhook deliveries, the event source) that failed the same way, marks the
 * start; the next request the database answered marks the end. Not a poll: the polls have pools
 * of their own (or connections already open), which may still be served while new requests are
 * not (too many connections, a server starting up), and the lines would flap at every poll. So an
 * outage is one pair of lines however many parts of the instance notice it.
 */
export class DatabaseOutage {
  private since: number | null = null;
  private failures = 0;

  constructor(private readonly log: Logger) {}

  /** `noticedBy`: what failed, for the start's line (`{ requestId }` or `{ poll: 'webhooks' }`). */
  failed(noticedBy: Record<string, string>): void {
    this.failures += 1;
    if (this.since !== null) return;
    this.since = Date.now();
    this.log.warn('database unavailable: answering 503 until it is back', noticedBy);
  }

  /**
   * A background poll's failure: told here and true when it means the database is away (or
   * shutting down; not a pool too busy), false for anything else, which is the poll's own to tell.
   */
  pollFailed(poll: string, err: unknown): boolean {
    if (!isDatabaseAway(err)) return false;
    this.failed({ poll });
    return true;
  }

  succeeded(): void {
    if (this.since === null) return;
    this.log.warn('database available again', { downForMs: Date.now() - this.since, failures: this.failures });
    this.since = null;
    this.failures = 0;
  }
}
