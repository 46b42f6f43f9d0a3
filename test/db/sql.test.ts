import { DatabaseUnavailableError } from '../../src/db/sql.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * The statement layer's failures on the pool (src/db/sql.ts, PoolSql.rows): each rejects the
 * statement's promise once, sends the connection back as it should (broken only when it is), and
 * leaves the process and the pool serving the statements after it.
 */
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

/** Lets pg and pg-pool finish what a failure set off (a broken connection's end, the callbacks after it). */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

test('a value the driver cannot serialize refuses the statement, once, and the pool serves the next one', async () => {
  const { sql } = svc.running.db;
  const unserializable = {
    toPostgres() {
      throw new Error('cannot serialize');
    },
  };
  // Found by review: pg calls such a query's callback a second time once the connection released
  // broken has ended under it; a second release then threw inside pg-pool, outside any request.
  const failures: unknown[] = [];
  const uncaught = (err: unknown) => failures.push(err);
  process.on('uncaughtException', uncaught);
  try {
    await expect(sql.rows('select ?::text as x', [unserializable])).rejects.toBeInstanceOf(Error);
    await settle();
    expect(failures).toEqual([]);
    expect(await sql.rows('select ?::int as n', [7])).toEqual([{ n: 7 }]);
  } finally {
    process.off('uncaughtException', uncaught);
  }
});

test('a statement PostgreSQL refuses rejects with its SQLSTATE and keeps the connection', async () => {
  const { sql } = svc.running.db;
  const before = svc.running.db.poolStats().size;
  await expect(sql.rows('select 1 / ?::int as n', [0])).rejects.toMatchObject({ code: '22012' });
  await expect(sql.rows('select 1 / ?::int as n', [0])).rejects.not.toBeInstanceOf(DatabaseUnavailableError);
  await settle();
  expect(svc.running.db.poolStats().size).toBe(before);
  expect(await sql.rows('select 1 / ?::int as n', [1])).toEqual([{ n: 1 }]);
});
