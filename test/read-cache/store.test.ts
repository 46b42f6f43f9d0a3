import { jest } from '@jest/globals';
import type { Caller } from '../../src/auth/caller.js';
import { ReadCache } from '../../src/read-cache/store.js';

/**
 * The store's rule for standing aside, without a database: the snapshot's xmax moving up more than
 * the configured number of times in a one-second window turns it aside for the next window; a
 * quieter window turns it back. Time is jest's fake clock (performance.now).
 */
const caller = (xmax: number): Caller => ({
  tokenId: 1,
  userId: 1,
  scopes: new Set(['*']),
  client: '',
  requestId: 'r',
  snapshot: `${xmax}:${xmax}: 2026-11-26 00:00:00+00`,
});

beforeEach(() => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
  // The fake performance.now() starts at 0, where the store's first window begins: start later,
  // as a process does, so that the first request opens a window of its own.
  jest.advanceTimersByTime(5_000);
});
afterEach(() => jest.useRealTimers());

/** One window of one second with `moves` cacheable requests, each seeing the next xmax; what the next request is told. */
function windowOf(cache: ReadCache, moves: number, start: { xmax: number }): boolean {
  for (let i = 0; i < moves; i++) {
    cache.inUse(caller(++start.xmax));
    jest.advanceTimersByTime(1000 / moves);
  }
  jest.advanceTimersByTime(1);
  return cache.inUse(caller(start.xmax));
}

test.each([
  [5, 6, false],
  [5, 5, true],
  [50, 40, true],
  [50, 60, false],
])('threshold %i moves a second: a window of %i moves leaves it in use: %s', (threshold, moves, inUse) => {
  const cache = new ReadCache(1 << 20, threshold);
  const at = { xmax: 100 };
  expect(cache.inUse(caller(at.xmax))).toBe(true);
  expect(windowOf(cache, moves, at)).toBe(inUse);
  // A quiet window (one request) brings it back.
  expect(windowOf(cache, 1, at)).toBe(true);
});

test('an older snapshot after a newer one is no move', () => {
  const cache = new ReadCache(1 << 20, 5);
  for (let i = 0; i < 20; i++) {
    cache.inUse(caller(200));
    cache.inUse(caller(199));
    jest.advanceTimersByTime(50);
  }
  jest.advanceTimersByTime(1);
  expect(cache.inUse(caller(200))).toBe(true);
});
