import { HIT_ATTEMPTS, retryPause } from '../support/read-cache.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * The read cache stands aside under a steady flow of writes (docs/architecture.md#the-read-cache):
 * an answer kept then would be outdated before the same request came again. It neither serves nor
 * keeps while the snapshot moved more than READ_CACHE_ASIDE_WRITES times in the last second, says so
 * (`readCache: "aside"` in the request log, `result="aside"` in /metrics), answers stay fresh, and it
 * takes up again after a quiet second.
 *
 * The rule itself (windows, rates, thresholds) is unit-tested in store.test.ts; this file checks the
 * wiring through real HTTP: the configured rate reaches the store, REST and GraphQL reads ask it, and
 * what it says shows in the answers, the log and /metrics. The store's one-second windows run on a
 * clock this file steps by hand (StartOptions.readCacheClock): a window closes only when the test
 * says so, so no outcome depends on how fast the machine answers. Another writer on the same
 * PostgreSQL server (the test files beside this one) only adds moves, and a window has at most one
 * move per cacheable request in it: a busy window is busy and a quiet one quiet, whatever runs beside.
 */
let svc: TestService;
const ASIDE_WRITES = 20;
const clock = { ms: 10_000 };
/** Closes the store's current window: its next cacheable request decides from the moves in it. */
const nextWindow = () => (clock.ms += 1_000);
let userId: number;

beforeAll(async () => {
  svc = await startTestService({ READ_CACHE_ASIDE_WRITES: String(ASIDE_WRITES) }, { readCacheClock: () => clock.ms });
  userId = (await svc.request('POST', '/user/', { body: { firstName: 'Busy', lastName: 'Reader' } })).body;
});
afterAll(() => svc?.stop());

/** What the read cache did for the last request on `route` (from its log line). */
const lastReadCache = (route: string) =>
  svc.logLines
    .map((line) => JSON.parse(line))
    .filter((line) => line.msg === 'request' && line.route === route)
    .at(-1)?.readCache;

const asideCount = async () =>
  Number(/^read_cache_lookups_total\{result="aside"\} (\d+)$/m.exec((await svc.request('GET', '/metrics', { token: null })).text)?.[1] ?? 0);

/** GETs `path` until the cache answers it (a snapshot moved by another transaction on the server is a miss: see HIT_ATTEMPTS). */
async function untilHit(path: string, expectedFirstName: string): Promise<void> {
  for (let attempt = 1; attempt <= HIT_ATTEMPTS && lastReadCache('/user/:id') !== 'hit'; attempt++) {
    if (attempt > 1) await retryPause(attempt);
    const read = await svc.request('GET', path);
    expect(read.body.firstName).toBe(expectedFirstName);
  }
  expect(lastReadCache('/user/:id')).toBe('hit');
}

test('under more than READ_CACHE_ASIDE_WRITES writes a second the cache stands aside, answers stay fresh, and it serves again after a quiet second', async () => {
  const path = `/user/${userId}`;
  // Quiet: a repeated read is served from the cache. The clock does not move: the window stays open.
  await svc.request('GET', path);
  await untilHit(path, 'Busy');

  // Busy: a window of one second with twice READ_CACHE_ASIDE_WRITES writes, each followed by a read
  // that sees it (every read a move of the snapshot). Two windows pass first: whatever the quiet
  // reads above counted, the first read of the flow finds the store in use and opens the window.
  clock.ms += 2_000;
  const asideBefore = await asideCount();
  const writes = 2 * ASIDE_WRITES;
  for (let n = 1; n <= writes; n++) {
    expect((await svc.request('PATCH', path, { body: { firstName: `Busy ${n}` } })).status).toBe(200);
    const read = await svc.request('GET', path);
    expect(read.body.firstName).toBe(`Busy ${n}`); // never an answer from before the write
    expect(lastReadCache('/user/:id')).not.toBe('aside'); // the window is still open
  }
  // The window closes: the flow was above the threshold, so the next read stands aside.
  nextWindow();
  expect((await svc.request('GET', path)).body.firstName).toBe(`Busy ${writes}`);
  expect(lastReadCache('/user/:id')).toBe('aside');
  expect(await asideCount()).toBeGreaterThan(asideBefore);
  // Aside means neither served nor kept: a write, then the same read twice with no write between,
  // aside both times and fresh.
  expect((await svc.request('PATCH', path, { body: { firstName: 'Aside' } })).status).toBe(200);
  for (let i = 0; i < 2; i++) {
    expect((await svc.request('GET', path)).body.firstName).toBe('Aside');
    expect(lastReadCache('/user/:id')).toBe('aside');
  }
  // GraphQL's cacheable reads stand aside too.
  const query = `{ user(id: ${userId}) { id firstName } }`;
  expect((await svc.graphql(query)).body.data.user.firstName).toBe('Aside');
  expect(lastReadCache('/graphql')).toBe('aside');

  // Quiet again: a window with a handful of requests (fewer than READ_CACHE_ASIDE_WRITES moves,
  // whatever else writes on the server) closes, and the cache keeps and serves answers again. The
  // first read finds nothing (nothing was kept while aside: the reads above ran under the very
  // snapshot this one reads, unless another writer moved it), a later one is served.
  nextWindow();
  const read = await svc.request('GET', path);
  expect(read.body.firstName).toBe('Aside');
  expect(lastReadCache('/user/:id')).toBe('miss');
  await untilHit(path, 'Aside');
});
