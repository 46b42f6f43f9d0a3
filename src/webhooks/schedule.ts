/**
 * When a failed delivery is tried again (docs/rest.md#webhooks, Guarantees): exponential backoff
 * with jitter, ≈ 5 s, 30 s, 2 min, 10 min, 1 h, then hourly (WEBHOOK_RETRY_SCHEDULE; the last delay
 * repeats), for up to WEBHOOK_RETRY_HOURS after the first failure of the event, after which the
 * endpoint is disabled. Jitter (±20 %) keeps endpoints that failed together (one receiver behind
 * them going down) from all coming back at the same instant.
 */
const JITTER = 0.2;

/** The delay before attempt `failures + 1`, given `failures` failed attempts so far (at least 1). */
export function retryDelay(schedule: readonly number[], failures: number, random: () => number = Math.random): number {
  const base = schedule[Math.min(failures, schedule.length) - 1];
  return Math.max(1, Math.round(base * (1 - JITTER + 2 * JITTER * random())));
}

/**
 * What follows a failed attempt: the time of the next one (never later than the end of the retry
 * window, which gets a last attempt), or null once the window is over (give up).
 */
export function nextAttempt(options: { schedule: readonly number[]; retryMs: number }, failures: number, failingSince: number, now: number): number | null {
  const deadline = failingSince + options.retryMs;
  if (now >= deadline) return null;
  return Math.min(now + retryDelay(options.schedule, failures), deadline);
}
