import { startTestService, type TestService } from '../support/service.js';
import { liveCounts } from '../support/live-counts.js';

/**
 * The live-row counts behind unfiltered totals (src/db/migrations: live_counts, and the row-level
 * update trigger that moves them only when a row's liveness changes) stay exact whoever writes: the
 * service, or SQL by hand in bulk, including updates that set `deleted_at` without changing
 * liveness (a new deletion time) and updates that do not touch it at all.
 */
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

const total = async () => Number((await svc.request('GET', '/user/?pageSize=1')).headers.get('x-total-count'));

test('live counts follow soft deletes and restores made by hand, in bulk and one by one, and ignore other updates', async () => {
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push((await svc.request('POST', '/user/', { body: { firstName: 'Counted', lastName: `N${i}` } })).body);
  const start = await total();
  expect((await liveCounts(svc)).kept).toEqual((await liveCounts(svc)).counted);

  // Ordinary updates, through the service and by hand: no change.
  expect((await svc.request('PATCH', `/user/${ids[0]}`, { body: { firstName: 'Still counted' }, headers: { Attrs: 'firstName' } })).status).toBe(200);
  await svc.sql(`update users set last_name = last_name || '!' where id = any(?::bigint[])`, [ids]);
  expect(await total()).toBe(start);

  // A bulk soft delete by hand: one statement, three rows.
  await svc.sql(`update users set deleted_at = now() where id = any(?::bigint[])`, [ids.slice(0, 3)]);
  expect(await total()).toBe(start - 3);
  // A new deletion time on rows already deleted, and deleted_at set to itself on live rows: no change.
  await svc.sql(`update users set deleted_at = deleted_at + interval '1 second' where id = any(?::bigint[])`, [ids.slice(0, 3)]);
  await svc.sql(`update users set deleted_at = deleted_at where id = any(?::bigint[])`, [ids.slice(3)]);
  expect(await total()).toBe(start - 3);
  // A restore of two of them by hand, and a service delete of another.
  await svc.sql(`update users set deleted_at = null where id = any(?::bigint[])`, [ids.slice(0, 2)]);
  expect((await svc.request('DELETE', `/user/${ids[4]}`)).status).toBe(200);
  expect(await total()).toBe(start - 2);

  const { kept, counted } = await liveCounts(svc);
  expect(kept).toEqual(counted);
});

test('a bulk soft delete moves the count once per statement, exactly: a user deleted with 3,000 tokens, a revocation by filter', async () => {
  const owner = (await svc.request('POST', '/user/', { body: { firstName: 'Many', lastName: 'Tokens' } })).body;
  await svc.insertTokens(
    owner,
    Array.from({ length: 3_000 }, (_, i) => `bulk-${owner}-${i}`),
  );
  const other = (await svc.request('POST', '/user/', { body: { firstName: 'Other', lastName: 'Tokens' } })).body;
  await svc.insertTokens(
    other,
    Array.from({ length: 500 }, (_, i) => `bulk-${other}-${i}`),
  );
  const tokens = async () => Number((await svc.request('GET', '/token/?pageSize=1')).headers.get('x-total-count'));
  const start = await tokens();
  expect((await svc.request('DELETE', `/user/${owner}`)).status).toBe(200); // its tokens go with it
  expect(await tokens()).toBe(start - 3_000);
  expect((await svc.request('DELETE', `/token/?filter=${encodeURIComponent(`userID eq ${other}`)}`)).status).toBe(200);
  expect(await tokens()).toBe(start - 3_500);
  const { kept, counted } = await liveCounts(svc);
  expect(kept).toEqual(counted);
  // The running total lives in the transaction only: nothing is left over for the next one.
  const [setting] = await svc.sql<{ value: string | null }>(`select current_setting('live_counts.tokens', true) as value`);
  expect([null, '', '0']).toContain(setting.value);
});

test('changes rolled back to a savepoint leave the count as it was before them', async () => {
  const ids: number[] = [];
  for (let i = 0; i < 3; i++) ids.push((await svc.request('POST', '/user/', { body: { firstName: 'Savepoint', lastName: `N${i}` } })).body);
  const before = await total();
  const client = await svc.running.db.sql.pool.connect();
  try {
    await client.query('begin');
    await client.query('update users set deleted_at = now() where id = $1', [ids[0]]);
    await client.query('savepoint s');
    await client.query('update users set deleted_at = now() where id = any($1::bigint[])', [ids.slice(1)]);
    await client.query('rollback to savepoint s');
    await client.query('update users set deleted_at = null where id = $1', [ids[0]]);
    await client.query('update users set deleted_at = now() where id = $1', [ids[2]]);
    await client.query('commit');
  } finally {
    client.release();
  }
  expect(await total()).toBe(before - 1);
  const { kept, counted } = await liveCounts(svc);
  expect(kept).toEqual(counted);
});

test('a rolled-back soft delete leaves the count as it was', async () => {
  const id = (await svc.request('POST', '/user/', { body: { firstName: 'Rolled', lastName: 'Back' } })).body;
  const before = await liveCounts(svc);
  const client = await svc.running.db.sql.pool.connect();
  try {
    await client.query('begin');
    await client.query('update users set deleted_at = now() where id = $1', [id]);
    await client.query('rollback');
  } finally {
    client.release();
  }
  expect(await liveCounts(svc)).toEqual(before);
});
