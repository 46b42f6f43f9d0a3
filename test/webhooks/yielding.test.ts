import type { EventLoopUtilization } from 'node:perf_hooks';
import { yielding } from '../../src/webhooks/yielding.js';

/**
 * Deliveries give way to a busy instance's requests (src/webhooks/yielding.ts): the rule over an
 * injected event-loop utilisation and clock, no database and no waiting.
 */
function harness(pauseMs: number) {
  let clock = 0;
  let active = 0; // the loop's busy time so far, ms
  const slept: number[] = [];
  const utilization = (from?: EventLoopUtilization): EventLoopUtilization => {
    const now = { idle: clock - active, active, utilization: clock ? active / clock : 0 };
    if (!from) return now;
    const elapsed = now.idle + now.active - (from.idle + from.active);
    const busy = now.active - from.active;
    return { idle: now.idle - from.idle, active: busy, utilization: elapsed ? busy / elapsed : 0 };
  };
  const turns = yielding(pauseMs, { utilization, now: () => clock, sleep: async (ms) => void slept.push(ms) });
  /** `ms` pass with the loop busy `share` of them. */
  const pass = (ms: number, share: number) => {
    clock += ms;
    active += ms * share;
  };
  return { turns, pass, slept };
}

test('an idle or moderately loaded instance delivers at once', async () => {
  const { turns, pass, slept } = harness(50);
  await turns.turn();
  pass(300, 0.5);
  await turns.turn();
  pass(300, 0.94);
  await turns.turn();
  expect(slept).toEqual([]);
});

test('while the loop was busier than 95 % over the last window, each delivery waits the pause; it stops once the load eases', async () => {
  const { turns, pass, slept } = harness(50);
  pass(300, 0.97);
  await turns.turn(); // a window has passed: busy
  await turns.turn(); // the same window: still busy
  expect(slept).toEqual([50, 50]);
  pass(300, 0.2);
  await turns.turn();
  expect(slept).toEqual([50, 50]);
});

test('WEBHOOK_YIELD_MS=0 never waits, however busy', async () => {
  const { turns, pass, slept } = harness(0);
  pass(300, 1);
  await turns.turn();
  expect(slept).toEqual([]);
});
