import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminQuery, freePort, listening, newDatabase, startInstance, statusOf, stopInstance, waitFor, type Instance } from '../support/processes.js';
import { bearer, collect, untilSubscriptions, wsConnect } from '../support/subscriptions.js';

/**
 * PgBouncer in transaction pooling mode (Debian's 1.18, no prepared-statement support), run as a
 * plain process: two instances through it with DATABASE_POOLER=transaction, a mixed load from both
 * (no 5xx) whose every user event reaches a subscriber of each exactly once, and an instance
 * restarted against the same pooler starting cleanly.
 */
const KEY = randomBytes(32).toString('base64');
let dir: string;
let bouncer: ChildProcess;
let bouncerLog = '';
let bouncerPort: number;
let db: Awaited<ReturnType<typeof newDatabase>>;
const instances: Instance[] = [];

const idOf = (field: 2 | 3) =>
  Number(
    readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('postgres:'))!
      .split(':')[field],
  );

beforeAll(async () => {
  db = await newDatabase();
  dir = mkdtempSync(join(tmpdir(), 'uts-pgbouncer-'));
  bouncerPort = await freePort();
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    `[databases]
${db.name} = host=127.0.0.1 port=5432 dbname=${db.name}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${bouncerPort}
unix_socket_dir =
auth_type = trust
auth_file = ${join(dir, 'users.txt')}
pool_mode = transaction
default_pool_size = 8
max_client_conn = 200
`,
  );
  for (const file of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, file), idOf(2), idOf(3));
  // PgBouncer refuses to run as root: as the postgres user.
  bouncer = spawn('runuser', ['-u', 'postgres', '--', 'pgbouncer', join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
  bouncer.stdout!.on('data', (c: Buffer) => (bouncerLog += c.toString()));
  bouncer.stderr!.on('data', (c: Buffer) => (bouncerLog += c.toString()));
  await waitFor('pgbouncer to listen', () => bouncerLog.includes('process up'), 20_000).catch((err: Error) => {
    throw new Error(`${err.message}: ${bouncerLog}`);
  });
}, 60_000);

afterAll(async () => {
  await Promise.all(instances.map((i) => stopInstance(i)));
  bouncer?.kill('SIGTERM');
  await new Promise((resolve) => (bouncer?.exitCode !== null ? resolve(null) : bouncer.once('exit', resolve)));
  rmSync(dir, { recursive: true, force: true });
  await db?.drop();
});

test('two instances through PgBouncer in transaction mode: a mixed load gets no 5xx, and a restarted instance starts cleanly', async () => {
  const bootstrap = `boot-${randomBytes(12).toString('hex')}`;
  const env = {
    DATABASE_URL: `postgres://postgres@127.0.0.1:${bouncerPort}/${db.name}`,
    DATABASE_POOLER: 'transaction',
    TOKEN_KEY: KEY,
    BOOTSTRAP_TOKEN: bootstrap,
    LOG_LEVEL: 'warn',
  };
  // Subscriptions: each instance reads the audit log through the pooler, with concurrent writers
  // leaving gaps below ids already seen until they commit.
  for (let n = 0; n < 2; n++) instances.push(await startInstance(env));
  await Promise.all(instances.map((i) => listening(i)));
  const headers = { Authorization: `Bearer ${bootstrap}`, 'Content-Type': 'application/json' };
  const watchers = instances.map((i) => wsConnect(i.url, bearer(bootstrap)));
  await Promise.all(watchers.map((w) => w.opened));
  const watched = watchers.map((w) => collect(w.client, 'subscription { userEvents { eventID } }'));
  await Promise.all(instances.map((i) => untilSubscriptions(i, 'userEvents'))); // each runs: every later event reaches it
  const [{ id: before }] = await adminQuery<{ id: string }>('select coalesce(max(id), 0)::text as id from audit_events', db.url);
  const statuses = new Map<number, number>();
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);

  const load = async (rounds: number) => {
    await Promise.all(
      Array.from({ length: 12 }, async (_, c) => {
        const instance = instances[c % instances.length];
        for (let n = 0; n < rounds; n++) {
          const created = await fetch(`${instance.url}/user/`, { method: 'POST', headers, body: JSON.stringify({ firstName: `P${c}`, lastName: `N${n}` }) });
          count(created.status);
          const id = await created.json();
          count(await statusOf(`${instance.url}/user/${id}`, { headers }));
          count(await statusOf(`${instance.url}/user/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ lastName: 'changed' }) }));
          count(await statusOf(`${instance.url}/user/?pageSize=5&filter=${encodeURIComponent(JSON.stringify({ lastName: { eq: 'changed' } }))}`, { headers }));
          const graphql = await fetch(`${instance.url}/graphql`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              query: `mutation { a: patchUser(id: ${id}, input: { status: 2 }) { id } b: createRole(input: { name: "r-${c}-${n}-${randomBytes(3).toString('hex')}" }) { id } }`,
            }),
          });
          count(graphql.status);
          count(await statusOf(`${instance.url}/user/${id}`, { method: 'DELETE', headers }));
        }
      }),
    );
  };
  await load(15);
  // A later write (a sentinel): its event comes right after the load's on each subscriber, so
  // none came twice and none extra.
  const sentinel = await fetch(`${instances[0].url}/user/`, { method: 'POST', headers, body: JSON.stringify({ firstName: 'Sentinel', lastName: 'Last' }) });
  expect(sentinel.status).toBe(201);
  // Every user event of the load reached both instances' subscribers, once each.
  const events = await adminQuery<{ id: string }>(
    `select a.id::text as id from audit_events a where a.resource = 'user' and a.id > ${before} order by a.id`,
    db.url,
  );
  for (const sub of watched) {
    await sub.atLeast(events.length, 30_000);
    // In id order, as the source hands them over, the sentinel's last.
    expect(sub.results.map((r) => r.data.userEvents.eventID)).toEqual(events.map((e) => e.id));
  }
  await Promise.all(watchers.map((w) => w.client.dispose()));
  // An instance stopped and started again against the same pooler (no statement names left behind to collide with).
  expect(await stopInstance(instances[0])).toBe(0);
  instances[0] = await startInstance(env); // reads events through the pooler again
  await listening(instances[0]);
  await load(10);

  const serverErrors = [...statuses].filter(([status]) => status >= 500);
  expect(serverErrors).toEqual([]);
  expect([...statuses.keys()].sort()).toEqual([200, 201]);
  expect(instances.flatMap((i) => i.logLines()).filter((l) => l.level === 'error')).toEqual([]);
});
