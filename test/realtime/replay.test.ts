import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { startTestService, type TestService } from '../support/service.js';
import { bearer, collect, wsConnect, type WsConnection } from '../support/subscriptions.js';

/**
 * The replay limit of a resume (`after`): at most 1,000 later events, counted in the audit log
 * whatever the instance's event source has read of it yet (issue 34, point 8): a source that has
 * caught up with the log, and one held behind it by a transaction still in flight.
 */

let svc: TestService;
const open: WsConnection[] = [];

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  for (const connection of open) await connection.client.dispose();
  await svc.stop();
});

async function connect(): Promise<WsConnection> {
  const connection = wsConnect(svc.url, bearer(svc.adminToken));
  open.push(connection);
  // Acknowledged once the instance's event source reads the log for this connection.
  await connection.opened;
  return connection;
}

const ROLE_EVENTS = 'subscription ($after: ID) { roleEvents(after: $after) { eventID } }';

/** The newest audit event's id. */
const newest = async () => Number((await svc.sql<{ id: string | null }>('select max(id)::text as id from audit_events'))[0].id ?? 0);

/** `count` role events appended to the audit log (as a role's writes would); their ids. */
async function roleEvents(count: number): Promise<number[]> {
  const rows = await svc.sql<{ id: string }>(
    `insert into audit_events (action, resource, record_id, changes) select 'patch', 'role', 1, '{}'::jsonb from generate_series(1, ?::int) returning id::text`,
    [count],
  );
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

/** The subscription's error: BAD_USER_INPUT naming `after` (a subscription taken on never ends: 10 s at most). */
async function refused(connection: WsConnection, after: number): Promise<void> {
  const sub = collect(connection.client, ROLE_EVENTS, { after: String(after) });
  let timer: NodeJS.Timeout | undefined;
  const taken = new Promise<'taken'>((resolve) => (timer = setTimeout(() => resolve('taken'), 10_000)));
  const outcome = await Promise.race([sub.ended.then(() => 'ended' as const), taken]);
  clearTimeout(timer);
  sub.stop();
  expect(outcome).toBe('ended');
  const errors = (sub.results[0]?.errors ?? sub.error) as { extensions: Record<string, unknown> }[];
  expect(errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
}

describe('a resume after more than 1,000 events', () => {
  it('is refused by a source that has read the log to its end; 1,000 are replayed', async () => {
    const before = await newest();
    const ids = await roleEvents(1001);
    // A first connection starts the source at the log's end: everything above is read.
    const connection = await connect();
    await refused(connection, before);
    const replayed = collect(connection.client, ROLE_EVENTS, { after: String(ids[0]) });
    await replayed.atLeast(1000, 30_000);
    expect(replayed.results.map((r) => Number(r.data.roleEvents.eventID))).toEqual(ids.slice(1));
    replayed.stop();
  });

  // The embedded database is one session: a transaction held open here would stop the service.
  const onPostgreSQL = process.env.DATABASE_URL ? it : it.skip;
  onPostgreSQL('is refused alike by a source held behind the log (a transaction in flight below the events); 1,000 are sent once it commits', async () => {
    const connection = await connect();
    const before = await newest();
    // An audit row of a transaction left open: the source hands nothing over past it, however
    // often it reads, until that transaction ends.
    const holder = new pg.Client({ connectionString: svc.config.databaseUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query(`insert into audit_events (action, resource, record_id, changes) values ('patch', 'user', 1, '{}'::jsonb)`);
      const ids = await roleEvents(1001);
      await refused(connection, before);
      const resumed = collect(connection.client, ROLE_EVENTS, { after: String(ids[0]) });
      await holder.query('commit');
      await resumed.atLeast(1000, 30_000);
      expect(resumed.results.map((r) => Number(r.data.roleEvents.eventID))).toEqual(ids.slice(1));
      resumed.stop();
    } finally {
      await holder.query('rollback').catch(() => {});
      await holder.end();
    }
  });
});
