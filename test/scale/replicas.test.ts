import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adminQuery,
  asPostgres,
  freePort,
  listening,
  newDatabase,
  postgresBin,
  startInstance,
  stopInstance,
  waitFor,
  type Instance,
} from '../support/processes.js';

/**
 * Read replicas (SPEC §11) on a real streaming replica: made with pg_basebackup -R from the test
 * PostgreSQL into a temporary directory, started with pg_ctl on a port of its own (replication
 * allowed for 127.0.0.1 in pg_hba.conf while the test runs, then put back).
 */
let HBA: string;
const REPLICATION_RULE = 'host replication all 127.0.0.1/32 trust # uts scale-out test';
const KEY = randomBytes(32).toString('base64');
let hbaBefore: string | undefined;
let dataDir: string;
let replicaPort: number;
let replicaUrl: (db: string) => string;
const bin = postgresBin();

beforeAll(async () => {
  HBA = (await adminQuery<{ hba_file: string }>('show hba_file'))[0].hba_file;
  hbaBefore = readFileSync(HBA, 'utf8');
  if (!hbaBefore.includes(REPLICATION_RULE)) writeFileSync(HBA, `${hbaBefore.trimEnd()}\n${REPLICATION_RULE}\n`);
  await adminQuery('select pg_reload_conf()');
  dataDir = mkdtempSync(join(tmpdir(), 'uts-replica-'));
  chownSync(dataDir, uidOf('postgres'), gidOf('postgres'));
  chmodSync(dataDir, 0o700);
  replicaPort = await freePort();
  asPostgres(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', '5432', '-U', 'postgres', '-D', dataDir, '-R', '-X', 'stream', '-c', 'fast']);
  // Debian keeps a cluster's configuration in /etc, outside the data directory the backup copied:
  // the replica gets its own (pg_basebackup -R wrote the connection to the primary).
  for (const [file, text] of [
    ['postgresql.conf', `port = ${replicaPort}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dataDir}'\nhot_standby = on\n`],
    ['pg_hba.conf', 'local all all trust\nhost all all 127.0.0.1/32 trust\n'],
  ]) {
    writeFileSync(join(dataDir, file), text);
    chownSync(join(dataDir, file), uidOf('postgres'), gidOf('postgres'));
  }
  startReplica();
  replicaUrl = (db) => `postgres://postgres@127.0.0.1:${replicaPort}/${db}`;
  await waitFor(
    'the replica to accept connections',
    async () => (await adminQuery<{ r: boolean }>('select pg_is_in_recovery() as r', replicaUrl('postgres')))[0].r === true,
  );
}, 180_000);

afterAll(async () => {
  try {
    if (dataDir) asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
  } catch {
    // already stopped by a test
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (hbaBefore !== undefined) writeFileSync(HBA, hbaBefore);
  await adminQuery('select pg_reload_conf()');
});

const startReplica = () => asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-l', join(dataDir, 'log'), '-w', 'start']);

function uidOf(user: string): number {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${user}:`))!;
  return Number(line.split(':')[2]);
}
function gidOf(user: string): number {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${user}:`))!;
  return Number(line.split(':')[3]);
}

/** The replica's sessions on the test database whose last statement read a user by id: the service's reads that went there. */
const replicaReadSessions = async (db: string) =>
  (
    await adminQuery<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = $1 and query like '%from users t where t.id = $1 and t.deleted_at is null%'`,
      replicaUrl(db),
      [db],
    )
  )[0].n;

describe('reads on a streaming replica', () => {
  let db: Awaited<ReturnType<typeof newDatabase>>;
  let svc: Instance;
  const bootstrap = `boot-${randomBytes(12).toString('hex')}`;
  const headers = { Authorization: `Bearer ${bootstrap}`, 'Content-Type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${svc.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  beforeAll(async () => {
    db = await newDatabase();
    await waitFor('the new database on the replica', async () => (await adminQuery('select 1 as one', replicaUrl(db.name))).length === 1);
    svc = await startInstance({
      DATABASE_URL: db.url,
      DATABASE_READ_URLS: replicaUrl(db.name),
      REPLICA_MAX_LAG_MS: '800',
      TOKEN_KEY: KEY,
      BOOTSTRAP_TOKEN: bootstrap,
    });
    await listening(svc);
  }, 120_000);
  afterAll(async () => {
    if (svc) await stopInstance(svc);
    await adminQuery('select pg_wal_replay_resume()', replicaUrl('postgres')).catch(() => {});
    await db?.drop();
  });

  test('a caught-up replica serves the reads; every write is seen by the next read (read-your-writes)', async () => {
    const { body: id } = await call('POST', '/user/', { firstName: 'Ada', lastName: 'Replica' });
    await waitFor('the replica in use', async () =>
      (await (await fetch(`${svc.url}/metrics`)).text()).includes(`db_replica_usable{replica="127.0.0.1:${replicaPort}/${db.name}"} 1`),
    );
    for (let n = 0; n < 30; n++) {
      expect((await call('PATCH', `/user/${id}`, { lastName: `L${n}` })).status).toBe(200);
      expect((await call('GET', `/user/${id}`)).body.lastName).toBe(`L${n}`);
    }
    for (let n = 0; n < 30; n++) expect((await call('GET', `/user/${id}`)).status).toBe(200);
    // Reads reached the replica: its sessions of the service's pool last ran the read.
    expect(await replicaReadSessions(db.name)).toBeGreaterThan(0);
  });

  test('with replay paused, writes are still seen by the next read (the primary answers), and the lagging replica is skipped, then taken back', async () => {
    const { body: id } = await call('POST', '/user/', { firstName: 'Grace', lastName: 'Paused' });
    await adminQuery('select pg_wal_replay_pause()', replicaUrl('postgres'));
    try {
      for (let n = 0; n < 20; n++) {
        expect((await call('PATCH', `/user/${id}`, { lastName: `P${n}` })).status).toBe(200);
        expect((await call('GET', `/user/${id}`)).body.lastName).toBe(`P${n}`);
        const graphql = await call('POST', '/graphql', { query: `{ user(id: ${id}) { lastName } }` });
        expect(graphql.body.data.user.lastName).toBe(`P${n}`);
      }
      // Past REPLICA_MAX_LAG_MS behind, the replica is skipped: metrics and one warn line say so.
      await waitFor(
        'the replica to be skipped',
        async () => (await (await fetch(`${svc.url}/metrics`)).text()).includes(`db_replica_usable{replica="127.0.0.1:${replicaPort}/${db.name}"} 0`),
        10_000,
      );
      await waitFor('the warn line', () => svc.logLines().some((l) => l.msg === 'replica skipped: reads go to the primary'));
      expect(svc.logLines().filter((l) => l.msg === 'replica skipped: reads go to the primary')).toHaveLength(1);
      expect((await fetch(`${svc.url}/readyz`)).status).toBe(200);
    } finally {
      await adminQuery('select pg_wal_replay_resume()', replicaUrl('postgres'));
    }
    await waitFor(
      'the replica back in use',
      async () => (await (await fetch(`${svc.url}/metrics`)).text()).includes(`db_replica_usable{replica="127.0.0.1:${replicaPort}/${db.name}"} 1`),
      10_000,
    );
    await waitFor('the info line', () => svc.logLines().some((l) => l.msg === 'replica back in use'));
    expect((await call('GET', `/user/${id}`)).body.lastName).toBe('P19');
  });

  test('a caller never reads back in time: reads right after another caller’s write see it too', async () => {
    const { body: id } = await call('POST', '/user/', { firstName: 'Mono', lastName: 'Tonic' });
    for (let n = 0; n < 20; n++) {
      await adminQuery(`update users set last_name = $1 where id = $2`, db.url, [`M${n}`, id]); // a write outside the service
      expect((await call('GET', `/user/${id}`)).body.lastName).toBe(`M${n}`);
    }
  });

  test('a replica that stops: reads fall back to the primary, /readyz stays ready', async () => {
    const { body: id } = await call('POST', '/user/', { firstName: 'Stop', lastName: 'Replica' });
    asPostgres(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
    try {
      for (let n = 0; n < 20; n++) {
        expect((await call('PATCH', `/user/${id}`, { lastName: `S${n}` })).status).toBe(200);
        const read = await call('GET', `/user/${id}`);
        expect({ status: read.status, lastName: read.body.lastName }).toEqual({ status: 200, lastName: `S${n}` });
      }
      expect((await fetch(`${svc.url}/readyz`)).status).toBe(200);
      await waitFor(
        'the stopped replica to be skipped',
        async () => (await (await fetch(`${svc.url}/metrics`)).text()).includes(`db_replica_lag_seconds{replica="127.0.0.1:${replicaPort}/${db.name}"} -1`),
        10_000,
      );
    } finally {
      startReplica();
    }
  });
});
