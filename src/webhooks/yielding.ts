import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/**
 * Deliveries may give way to requests (WEBHOOK_YIELD_MS, off by default). Every delivery costs the
 * instance CPU (signing, the HTTP exchange, its statement: ~0.4 ms here, docs/benchmarks.md#webhooks),
 * and an instance with many webhooks, each wanting every event, spends on them what its requests
 * could have had. With it on, while the event loop has been busier than BUSY over the last window
 * (Node's event-loop utilisation, the share of time the loop was running code), each delivery
 * first waits `pauseMs`: the requests keep their throughput, the deliveries fall behind and catch
 * up once the load eases. Off by default because it is a trade: measured here, writes beside ten
 * webhooks kept 89 % of their throughput instead of 55 %, and one webhook's lag at 500 writes/s went
 * from a p99 of 0.7 s to 1.5 s (docs/benchmarks.md#webhooks). Order and at-least-once are untouched:
 * a delivery is only later.
 */
const BUSY = 0.95;
/** How long a measurement of the loop's utilisation holds. */
const WINDOW_MS = 250;

export interface Yielding {
  /** Resolves at once while the instance is not busy; after `pauseMs` while it is. */
  turn(): Promise<void>;
}

export function yielding(
  pauseMs: number,
  options: { utilization?: (from?: EventLoopUtilization) => EventLoopUtilization; now?: () => number; sleep?: (ms: number) => Promise<void> } = {},
): Yielding {
  const { utilization = (from) => performance.eventLoopUtilization(from), now = () => performance.now(), sleep = defaultSleep } = options;
  let mark = utilization();
  let markedAt = now();
  let busy = false;
  return {
    turn() {
      if (pauseMs <= 0) return Promise.resolve();
      if (now() - markedAt >= WINDOW_MS) {
        const since = utilization(mark);
        busy = since.utilization > BUSY;
        mark = utilization();
        markedAt = now();
      }
      return busy ? sleep(pauseMs) : Promise.resolve();
    },
  };
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
