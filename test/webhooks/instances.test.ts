import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createLogger } from '../../src/observability/log.js';
import { startService, type RunningService } from '../../src/server.js';
import { listening, newDatabase, root, startInstance, stopInstance, waitFor, type Instance } from '../support/processes.js';
import { startReceiver, type Delivery, type Receiver } from '../support/receiver.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * SPEC §13, Guarantees, on PostgreSQL with real parts: several instances (in this process, and as
 * real processes: WORKERS=2, a `kill -9`) delivering to one endpoint while writes run: each event
 * once, in order; nothing lost across a kill and a restart, only the in-flight event twice; an
 * event that commits late below ids already committed delivered before them; a receiver down for
 * a while and back getting the backlog in order. Retry delays and leases are short by
 * configuration; no test waits on the clock, each waits (bounded) for what it expects.
 */
const onPostgres = process.env.DATABASE_URL ? describe : describe.skip;

const FAST = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_SCHEDULE: '50ms,100ms,200ms',
  WEBHOOK_POLL_MS: '100',
  WEBHOOK_TIMEOUT_MS: '2000',
};

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver?.close());

let names = 0;
/** A webhook (through `request`) whose secret the receiver verifies with. */
async function hook(request: (method: string, path: string, body: unknown) => Promise<{ status: number; body: any }>, events = ['user.create']) {
  const name = `i${++names}-${randomBytes(3).toString('hex')}`;
  const res = await request('POST', '/webhook/', { url: receiver.url(name), events });
  expect(res.status).toBe(201);
  receiver.secrets.set(name, [res.body.secret]);
  return { id: res.body.id as number, name };
}

/** Each delivery verified, and the events' ids in the order they came. */
function idsOf(got: Delivery[]): number[] {
  expect(got.every((d) => d.verifiedBy.length === 1)).toBe(true);
  return got.map((d) => Number(d.id));
}

const ascending = (ids: number[]) => ids.every((id, i) => i === 0 || ids[i - 1] < id);

onPostgres('instances in one process', () => {
  let svc: TestService;
  let second: RunningService;
  beforeAll(async () => {
    svc = await startTestService(FAST);
    second = await startService({ ...svc.config, bootstrapToken: undefined }, createLogger('silent'));
  });
  afterAll(async () => {
    await second?.stop();
    await svc?.stop();
  });

  const rest = (base: string) => async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { Authorization: `Bearer ${svc.adminToken}`, 'Content-Type': 'application/json', Prefer: 'return=representation' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  test('two instances, writes through both: each event delivered once, in event order', async () => {
    const { id, name } = await hook(rest(svc.url));
    const writes = Array.from({ length: 60 }, (_, i) => rest(i % 2 ? second.url : svc.url)('POST', '/user/', { firstName: 'Both', lastName: `n${i}` }));
    const created = await Promise.all(writes);
    expect(created.every((r) => r.status === 201)).toBe(true);
    const expected = (
      await svc.sql<{ id: string }>(
        `select a.id::text from audit_events a where resource = 'user' and action = 'create' and record_id = any(?::bigint[]) order by a.id`,
        [`{${created.map((r) => r.body.id).join(',')}}`],
      )
    ).map((r) => Number(r.id));
    const got = idsOf(await receiver.waitFor(name, 60));
    expect(got).toEqual(expected);
    // One holder: the endpoint's lease names one instance.
    const owners = await svc.sql<{ lease_owner: string }>('select lease_owner from webhook_states where webhook_id = ?', [id]);
    expect(owners).toHaveLength(1);
  });

  test('an event that commits late, below ids already committed, is delivered before them', async () => {
    const { id, name } = await hook(rest(svc.url), ['user.patch']);
    const [{ user }] = await svc.sql<{ user: string }>('select max(id)::text as user from users');
    const slow = new pg.Client({ connectionString: svc.config.databaseUrl });
    await slow.connect();
    try {
      // A transaction takes the lower id and stays open; a REST write takes the next one and commits.
      await slow.query('begin');
      const [{ id: lower }] = (
        await slow.query(`insert into audit_events (action, resource, record_id, changes) values ('patch', 'user', $1, '{}') returning id::text`, [user])
      ).rows;
      expect((await svc.request('PATCH', `/user/${user}`, { body: { lastName: 'Higher' } })).status).toBe(200);
      // The dispatchers have looked (their leases renewed twice since), and delivered nothing yet.
      const renewed = async () => (await svc.sql<{ at: string }>('select lease_until::text as at from webhook_states where webhook_id = ?', [id]))[0].at;
      for (let i = 0; i < 2; i++) {
        const was = await renewed();
        await waitFor('a lease renewal', async () => (await renewed()) !== was);
      }
      expect(receiver.received(name)).toBe(0);
      await slow.query('commit');
      const got = idsOf(await receiver.waitFor(name, 2));
      expect(got[0]).toBe(Number(lower));
      expect(ascending(got)).toBe(true);
    } finally {
      await slow.end();
    }
  });

  test('a receiver down for a while and back: the backlog, in order', async () => {
    const { name } = await hook(rest(svc.url));
    await receiver.down();
    try {
      for (let i = 0; i < 30; i++) expect((await svc.request('POST', '/user/', { body: { firstName: 'Backlog', lastName: `b${i}` } })).status).toBe(201);
      await waitFor('refused attempts', async () => {
        const [{ n }] = await svc.sql<{ n: number }>(`select count(*)::int as n from webhook_deliveries where error = 'ECONNREFUSED'`);
        return n >= 3;
      });
    } finally {
      await receiver.restart();
    }
    const got = idsOf(await receiver.waitFor(name, 30));
    expect(got).toHaveLength(30);
    expect(ascending(got)).toBe(true);
  });
});

onPostgres('real processes', () => {
  const KEY = randomBytes(32).toString('base64');
  const started: Instance[] = [];
  const token = `boot-${randomBytes(12).toString('hex')}`;
  let db: Awaited<ReturnType<typeof newDatabase>>;
  beforeAll(async () => {
    // The processes run the build (node dist/src/main.js), as a container does.
    const built = spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: root, encoding: 'utf8', timeout: 240_000 });
    if (built.status !== 0) throw new Error(`build failed: ${built.stdout}${built.stderr}`);
    db = await newDatabase();
  }, 300_000);
  afterAll(async () => {
    await Promise.all(started.map((i) => stopInstance(i, 'SIGKILL')));
    await db?.drop();
  });

  const launch = async (env: Record<string, string> = {}) => {
    const instance = await startInstance({
      ...FAST,
      TOKEN_KEY: KEY,
      DATABASE_URL: db.url,
      BOOTSTRAP_TOKEN: token,
      WEBHOOK_LEASE_MS: '2000',
      LOG_LEVEL: 'warn',
      ...env,
    });
    started.push(instance);
    await listening(instance);
    // The first token is made once the service listens.
    await waitFor(
      'the bootstrap token',
      async () => (await fetch(`${instance.url}/webhook/`, { headers: { Authorization: `Bearer ${token}` } })).status === 200,
    );
    return instance;
  };
  const rest = (instance: Instance) => async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${instance.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Prefer: 'return=representation' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  test('WORKERS=2 while writes run: each event once, in order', async () => {
    const instance = await launch({ WORKERS: '2' });
    const { name } = await hook(rest(instance));
    const created = await Promise.all(Array.from({ length: 40 }, (_, i) => rest(instance)('POST', '/user/', { firstName: 'Worker', lastName: `w${i}` })));
    expect(created.every((r) => r.status === 201)).toBe(true);
    const got = idsOf(await receiver.waitFor(name, 40));
    expect(new Set(got).size).toBe(40);
    expect(ascending(got)).toBe(true);
    expect(await stopInstance(instance)).toBe(0);
    expect(receiver.received(name)).toBe(40);
  });

  test('kill -9 of the process holding the endpoint mid-delivery, then a restart: nothing lost, only the in-flight event again (same webhook-id)', async () => {
    const first = await launch();
    const { name } = await hook(rest(first));
    receiver.script(name, 'hang');
    const users: number[] = [];
    for (let i = 0; i < 5; i++) users.push((await rest(first)('POST', '/user/', { firstName: 'Killed', lastName: `k${i}` })).body.id);
    const [inFlight] = await receiver.waitFor(name, 1);
    expect(inFlight.json.data.recordID).toBe(users[0]);
    first.child.kill('SIGKILL');
    await first.exited;
    await launch();
    const got = await receiver.waitFor(name, 6, 60_000);
    expect(got.map((d) => d.json.data.recordID)).toEqual([users[0], ...users]);
    expect(got[1].id).toBe(inFlight.id);
    expect(ascending(idsOf(got.slice(1)))).toBe(true);
  });
});
