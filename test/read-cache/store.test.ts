import type { Caller } from '../../src/auth/caller.js';
import { ReadCache } from '../../src/read-cache/store.js';

/**
 * The store's rule for standing aside, without a database: the snapshot's xmax moving up more than
 * the configured number of times in a one-second window turns it aside for the next window; a
 * quieter window turns it back, and so do two windows without a cacheable request. Time is a
 * clock the test steps by hand (the store's injected clock), so no outcome depends on how fast
 * the machine is.
 */
const caller = (xmax: number): Caller => ({
  tokenId: 1,
  userId: 1,
  scopes: new Set(['*']),
  client: '',
  requestId: 'r',
  snapshot: `${xmax}:${xmax}: 2026-11-26 00:00:00+00`,
});

/** A store on a clock of its own, started later than 0 as a process's is (the first request then opens a window). */
function storeAt(threshold: number) {
  const clock = { ms: 5_000 };
  return { cache: new ReadCache(1 << 20, threshold, () => clock.ms), clock };
}

/** One window of one second with `moves` cacheable requests, each seeing the next xmax; what the next request is told. */
function windowOf(cache: ReadCache, clock: { ms: number }, moves: number, start: { xmax: number }): boolean {
  for (let i = 0; i < moves; i++) {
    cache.inUse(caller(++start.xmax));
    clock.ms += 1000 / moves;
  }
  clock.ms += 1;
  return cache.inUse(caller(start.xmax));
}

test.each([
  [5, 6, false],
  [5, 5, true],
  [50, 40, true],
  [50, 60, false],
])('threshold %i moves a second: a window of %i moves leaves it in use: %s', (threshold, moves, inUse) => {
  const { cache, clock } = storeAt(threshold);
  const at = { xmax: 100 };
  expect(cache.inUse(caller(at.xmax))).toBe(true);
  expect(windowOf(cache, clock, moves, at)).toBe(inUse);
  // A quiet window (one request) brings it back.
  expect(windowOf(cache, clock, 1, at)).toBe(true);
});

test('an older snapshot after a newer one is no move', () => {
  const { cache, clock } = storeAt(5);
  for (let i = 0; i < 20; i++) {
    cache.inUse(caller(200));
    cache.inUse(caller(199));
    clock.ms += 50;
  }
  clock.ms += 1;
  expect(cache.inUse(caller(200))).toBe(true);
});

test('aside lasts its whole window, however many requests come in it, and moves in it count for the next', () => {
  const { cache, clock } = storeAt(5);
  const at = { xmax: 100 };
  cache.inUse(caller(at.xmax));
  expect(windowOf(cache, clock, 10, at)).toBe(false);
  // Within the window that follows, every request is told aside, with the snapshot still or not.
  for (let i = 0; i < 3; i++) {
    clock.ms += 100;
    expect(cache.inUse(caller(at.xmax))).toBe(false);
  }
  // Busy again in it: the window after it stays aside.
  for (let i = 0; i < 10; i++) expect(cache.inUse(caller(++at.xmax))).toBe(false);
  clock.ms += 700;
  expect(cache.inUse(caller(at.xmax))).toBe(false);
});

test('two windows without a cacheable request bring it back, whatever the moves before', () => {
  const { cache, clock } = storeAt(5);
  const at = { xmax: 100 };
  cache.inUse(caller(at.xmax));
  expect(windowOf(cache, clock, 10, at)).toBe(false);
  for (let i = 0; i < 10; i++) cache.inUse(caller(++at.xmax));
  clock.ms += 2_000;
  expect(cache.inUse(caller(at.xmax))).toBe(true);
});

test('the clock alone decides: no time passing, no window closes (a busy store stays in use until it does)', () => {
  const { cache, clock } = storeAt(5);
  const at = { xmax: 100 };
  cache.inUse(caller(at.xmax));
  for (let i = 0; i < 100; i++) expect(cache.inUse(caller(++at.xmax))).toBe(true);
  clock.ms += 1_000;
  expect(cache.inUse(caller(at.xmax))).toBe(false);
});

test('in use, every lookup reads the snapshot; aside, one per sample interval (half a move at the threshold), enough to stay aside under the same writes', () => {
  const { cache, clock } = storeAt(50); // a sample every 1000 / (2 * 50) = 10 ms while aside
  const at = { xmax: 100 };
  cache.inUse(caller(at.xmax));
  for (let i = 0; i < 20; i++) expect(cache.wantsSnapshot()).toBe(true);
  expect(cache.aside).toBe(false);
  expect(windowOf(cache, clock, 100, at)).toBe(false);
  expect(cache.aside).toBe(true);
  // Aside: one lookup in each 10 ms reads the snapshot, the others not.
  const asked = [];
  for (let ms = 0; ms < 100; ms++) {
    asked.push(cache.wantsSnapshot());
    clock.ms += 1;
  }
  expect(asked.filter(Boolean)).toHaveLength(10);
  expect(asked.slice(0, 11)).toEqual([true, false, false, false, false, false, false, false, false, false, true]);
  // Writes go on at 100 a second, evenly: the samples alone (one per 10 ms, each seeing a move) keep it aside.
  for (let step = 0; step < 100; step++) {
    if (cache.wantsSnapshot()) cache.inUse(caller((at.xmax += 1)));
    clock.ms += 10;
  }
  expect(cache.inUse(caller(at.xmax))).toBe(false);
  // The writes stop: the samples see no move, the next window brings it back, and every lookup reads the snapshot again.
  for (let step = 0; step < 110; step++) {
    if (cache.wantsSnapshot()) cache.inUse(caller(at.xmax));
    clock.ms += 10;
  }
  expect(cache.inUse(caller(at.xmax))).toBe(true);
  expect(cache.aside).toBe(false);
  for (let i = 0; i < 5; i++) expect(cache.wantsSnapshot()).toBe(true);
});

test('aside, each sample counts the moves the requests spared since the last would have seen: bursts of writes keep it aside as they did without sampling', () => {
  const { cache, clock } = storeAt(50);
  const at = { xmax: 100 };
  cache.inUse(caller(at.xmax));
  expect(windowOf(cache, clock, 100, at)).toBe(false);
  // 60 writes a second in bursts of 6 every 100 ms; a request every millisecond. Every request
  // reading the snapshot would see 60 moves a window (above 50); a sample every 10 ms sees only
  // 10 of them move, but counts the 6 transactions each time (at most one per request spared).
  const run = (windows: number) => {
    for (let ms = 0; ms < windows * 1000; ms++) {
      if (ms % 100 === 0) at.xmax += 6;
      if (cache.wantsSnapshot()) cache.inUse(caller(at.xmax));
      clock.ms += 1;
    }
  };
  run(3);
  expect(cache.aside).toBe(true);
  // The same bursts with fewer requests than transactions between two samples: one request a
  // sample interval, each may count one move only, as each would have without sampling (10 a window).
  for (let ms = 0; ms < 2000; ms += 10) {
    if (ms % 100 === 0) at.xmax += 6;
    if (cache.wantsSnapshot()) cache.inUse(caller(at.xmax));
    clock.ms += 10;
  }
  expect(cache.aside).toBe(false);
});

test('standing aside drops every answer kept, those of the newest snapshot too (one miss each once the writes stop); back in use, answers are kept again', () => {
  const { cache, clock } = storeAt(5);
  const at = { xmax: 100 };
  expect(cache.inUse(caller(at.xmax))).toBe(true);
  for (let i = 0; i < 3; i++) cache.set(caller(at.xmax), `key ${i}`, { n: i }, 10);
  expect(cache.size).toBe(3);
  expect(cache.get(caller(at.xmax), 'key 1')).toEqual({ n: 1 });
  // A busy window, whose last request keeps an answer under the newest snapshot; the next request
  // finds the store aside, and nothing kept.
  for (let i = 0; i < 10; i++) {
    cache.inUse(caller(++at.xmax));
    clock.ms += 100;
  }
  cache.set(caller(at.xmax), 'newest', { n: 9 }, 10);
  clock.ms += 1;
  expect(cache.inUse(caller(at.xmax))).toBe(false);
  expect(cache.size).toBe(0);
  // The writes stop: after a quiet window the store is back in use under the same snapshot, and
  // the answer kept under it is gone (a miss); answers are kept again.
  clock.ms += 1_001;
  expect(cache.inUse(caller(at.xmax))).toBe(true);
  expect(cache.get(caller(at.xmax), 'newest')).toBeUndefined();
  cache.set(caller(at.xmax), 'key 0', { n: 0 }, 10);
  expect(cache.size).toBe(1);
  expect(cache.get(caller(at.xmax), 'key 0')).toEqual({ n: 0 });
});
