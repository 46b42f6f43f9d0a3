import { startTestService, type TestService } from '../support/service.js';

/**
 * The read cache stands aside under a steady flow of writes (docs/architecture.md#the-read-cache):
 * an answer kept then would be outdated before the same request came again. It neither serves nor
 * keeps while the snapshot moved more than READ_CACHE_ASIDE_WRITES (50) times in the last second, says so (`readCache:
 * "aside"` in the request log, `result="aside"` in /metrics), answers stay fresh, and it takes up
 * again after a quiet second.
 */
let svc: TestService;
const ASIDE_WRITES = 20;
let userId: number;

beforeAll(async () => {
  // A threshold that one client writing and reading in turn exceeds on a slow machine too (the
  // embedded database serves one statement at a time): the rule is the same at any rate.
  svc = await startTestService({ READ_CACHE_ASIDE_WRITES: String(ASIDE_WRITES) });
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

test('under more than READ_CACHE_ASIDE_WRITES writes a second the cache stands aside, answers stay fresh, and it serves again after a quiet second', async () => {
  const path = `/user/${userId}`;
  // Quiet: a repeated read is served from the cache (asked a few times: test files running beside
  // this one on the same PostgreSQL server move the snapshot too).
  await svc.request('GET', path);
  for (let attempt = 0; attempt < 10 && lastReadCache('/user/:id') !== 'hit'; attempt++) await svc.request('GET', path);
  expect(lastReadCache('/user/:id')).toBe('hit');

  // Busy: a write before every read, for a bit over two seconds (two windows of one second), and
  // until the cache stands aside (at most 20 s on a slow machine).
  const asideBefore = await asideCount();
  const start = Date.now();
  let n = 0;
  let seen: unknown;
  while ((Date.now() - start < 2_300 || seen !== 'aside') && Date.now() - start < 20_000) {
    n++;
    expect((await svc.request('PATCH', path, { body: { firstName: `Busy ${n}` } })).status).toBe(200);
    const read = await svc.request('GET', path);
    expect(read.body.firstName).toBe(`Busy ${n}`); // never an answer from before the write
    seen = lastReadCache('/user/:id');
  }
  // The flow really was above the threshold (each write seen by the next read).
  expect((n * 1_000) / (Date.now() - start)).toBeGreaterThan(ASIDE_WRITES);
  expect(seen).toBe('aside');
  expect(await asideCount()).toBeGreaterThan(asideBefore);
  // Aside means neither served nor kept: the same read twice, with no write between, is aside both times.
  await svc.request('GET', path);
  expect(lastReadCache('/user/:id')).toBe('aside');
  await svc.request('GET', path);
  expect(lastReadCache('/user/:id')).toBe('aside');
  // GraphQL's cacheable reads stand aside too.
  const query = `{ user(id: ${userId}) { id firstName } }`;
  expect((await svc.graphql(query)).body.data.user.firstName).toBe(`Busy ${n}`);
  expect(lastReadCache('/graphql')).toBe('aside');

  // Quiet again: after a second without writes the cache keeps and serves answers again. The
  // first read finds nothing (nothing was kept while aside), a later one is served.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const deadline = Date.now() + 5_000;
  do await svc.request('GET', path);
  while (lastReadCache('/user/:id') === 'aside' && Date.now() < deadline);
  expect(lastReadCache('/user/:id')).toBe('miss');
  while (lastReadCache('/user/:id') !== 'hit' && Date.now() < deadline) {
    const read = await svc.request('GET', path);
    expect(read.body.firstName).toBe(`Busy ${n}`);
  }
  expect(lastReadCache('/user/:id')).toBe('hit');
});
