import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adminQuery,
  childrenOf,
  freePort,
  listening,
  newDatabase,
  root,
  startInstance,
  statusOf,
  stopInstance,
  waitFor,
  type Instance,
} from '../support/processes.js';
import { collect, wsConnect } from '../support/subscriptions.js';

/**
 * SPEC §11 with real processes on one PostgreSQL: many instances starting at once, MIGRATE=false,
 * a rolling restart behind haproxy with no retries, and WORKERS.
 */
const KEY = randomBytes(32).toString('base64');
const started: Instance[] = [];
const launch = async (env: Record<string, string>, port?: number) => {
  const instance = await startInstance({ TOKEN_KEY: KEY, ...env }, port);
  started.push(instance);
  return instance;
};
afterAll(async () => {
  await Promise.all(started.map((i) => stopInstance(i, 'SIGKILL')));
});

describe('many instances starting at once on a new database', () => {
  test.each([1, 2, 3])('trial %i: three start together, all become ready, one migrates, one first token', async () => {
    const db = await newDatabase();
    try {
      const trio = await Promise.all([0, 1, 2].map(() => launch({ DATABASE_URL: db.url })));
      await Promise.all(trio.map((i) => listening(i)));
      for (const i of trio) expect(await statusOf(`${i.url}/readyz`)).toBe(200);
      const printed = trio.filter((i) => i.stdout().includes('a first one with scope "*" was created'));
      expect(printed).toHaveLength(1);
      expect(await adminQuery(`select count(*)::int as n from tokens`, db.url)).toEqual([{ n: 1 }]);
      expect(await adminQuery(`select count(*)::int as n from users where out_key = 'bootstrap'`, db.url)).toEqual([{ n: 1 }]);
      const migrations = await adminQuery<{ name: string; n: number }>(`select name, count(*)::int as n from mikro_orm_migrations group by name`, db.url);
      expect(migrations.length).toBeGreaterThan(0);
      expect(migrations.every((m) => m.n === 1)).toBe(true);
      // Exactly one of them logged the migrations it applied.
      expect(trio.filter((i) => i.logLines().some((l) => l.msg === 'migrations applied'))).toHaveLength(1);
      await Promise.all(trio.map((i) => stopInstance(i)));
    } finally {
      await db.drop();
    }
  });

  test('with BOOTSTRAP_TOKEN, three at once keep exactly one live token of that value', async () => {
    const db = await newDatabase();
    const bootstrap = `boot-${randomBytes(12).toString('hex')}`;
    try {
      const trio = await Promise.all([0, 1, 2].map(() => launch({ DATABASE_URL: db.url, BOOTSTRAP_TOKEN: bootstrap })));
      await Promise.all(trio.map((i) => listening(i)));
      expect(await adminQuery(`select count(*)::int as n from tokens where deleted_at is null`, db.url)).toEqual([{ n: 1 }]);
      for (const i of trio) expect(await statusOf(`${i.url}/user/`, { headers: { Authorization: `Bearer ${bootstrap}` } })).toBe(200);
      await Promise.all(trio.map((i) => stopInstance(i)));
    } finally {
      await db.drop();
    }
  });
});

test('MIGRATE=false: the instance listens, is not ready until npm run migrate has run, then prints the first token', async () => {
  const db = await newDatabase();
  try {
    const instance = await launch({ DATABASE_URL: db.url, MIGRATE: 'false' });
    await waitFor('the instance to answer /healthz', async () => (await statusOf(`${instance.url}/healthz`)) === 200);
    expect(await statusOf(`${instance.url}/readyz`)).toBe(503);
    await waitFor('the waiting line', () => instance.logLines().some((l) => String(l.msg).includes('waiting for the migrations')));
    expect(await adminQuery(`select count(*)::int as n from pg_tables where tablename = 'users'`, db.url)).toEqual([{ n: 0 }]);
    const migrate = spawnSync(process.execPath, ['dist/src/cli/migrate.js'], {
      cwd: root,
      env: { PATH: process.env.PATH, DATABASE_URL: db.url, TOKEN_KEY: KEY },
      encoding: 'utf8',
    });
    expect(migrate.status).toBe(0);
    await listening(instance);
    expect(instance.stdout()).toContain('a first one with scope "*" was created');
    expect(await statusOf(`${instance.url}/readyz`)).toBe(200);
    expect(await stopInstance(instance)).toBe(0);
  } finally {
    await db.drop();
  }
});

describe('a rolling restart behind haproxy (round robin, health check on /readyz, no retries)', () => {
  test('no request fails while each of two instances is stopped (SIGTERM, drain) and started again', async () => {
    const db = await newDatabase();
    const dir = await mkdtemp(join(tmpdir(), 'uts-haproxy-'));
    const bootstrap = `boot-${randomBytes(12).toString('hex')}`;
    const ports = [await freePort(), await freePort()];
    const front = await freePort();
    // The drain is the time haproxy has to see /readyz answer 503 (a check every 250 ms, one failure
    // takes a server out): 4 s leaves room for slow checks on a busy machine. A check may take up to
    // 5 s (timeout check) before it counts as failed: by default it has only the 250 ms interval,
    // and a /readyz slowed by a busy machine would take a live server out.
    const env = { DATABASE_URL: db.url, BOOTSTRAP_TOKEN: bootstrap, SHUTDOWN_DRAIN_MS: '4000', LOG_LEVEL: 'warn' };
    const instances = [await launch(env, ports[0])];
    await listening(instances[0]);
    instances.push(await launch(env, ports[1]));
    await listening(instances[1]);
    await writeFile(
      join(dir, 'haproxy.cfg'),
      `global
  maxconn 256
  stats socket ${join(dir, 'haproxy.sock')}
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout check 5s
  retries 0
frontend api
  bind 127.0.0.1:${front}
  default_backend service
backend service
  balance roundrobin
  option httpchk GET /readyz
  default-server inter 250 fall 1 rise 2
${ports.map((p, n) => `  server s${n} 127.0.0.1:${p} check`).join('\n')}
`,
    );
    const haproxy = spawn('haproxy', ['-f', join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let haproxyLog = '';
    haproxy.stderr.on('data', (c: Buffer) => (haproxyLog += c.toString()));
    /** The servers haproxy's checks find up (its stats socket's `show stat`). */
    const upServers = () =>
      new Promise<string[]>((resolve, reject) => {
        const socket = connect(join(dir, 'haproxy.sock'), () => socket.end('show stat\n'));
        let csv = '';
        socket.on('data', (chunk: Buffer) => (csv += chunk.toString()));
        socket.on('error', reject);
        socket.on('end', () => {
          const [header, ...rows] = csv.trim().split('\n');
          const columns = header.replace(/^# /, '').split(',');
          const [proxy, server, status] = ['pxname', 'svname', 'status'].map((name) => columns.indexOf(name));
          resolve(
            rows
              .map((row) => row.split(','))
              .filter((f) => f[proxy] === 'service' && f[server] !== 'BACKEND' && f[status] === 'UP')
              .map((f) => f[server]),
          );
        });
      });
    try {
      const base = `http://127.0.0.1:${front}`;
      await waitFor('haproxy to pass requests', async () => (await statusOf(`${base}/healthz`)) === 200);
      await waitFor('both servers up in haproxy’s checks', async () => {
        const up = await upServers();
        return up.includes('s0') && up.includes('s1');
      });
      // Load: 8 clients, reads and writes, counting every answer that is not a success.
      let running = true;
      let ok = 0;
      const failures: string[] = [];
      const headers = { Authorization: `Bearer ${bootstrap}`, 'Content-Type': 'application/json' };
      const clients = Array.from({ length: 8 }, async (_, c) => {
        for (let n = 0; running; n++) {
          const write = n % 5 === 0;
          const status = await statusOf(
            `${base}/user/`,
            write ? { method: 'POST', headers, body: JSON.stringify({ firstName: `C${c}`, lastName: `N${n}` }) } : { headers },
          );
          if ((write && status === 201) || (!write && status === 200)) ok++;
          else failures.push(`${write ? 'POST' : 'GET'} ${status}`);
        }
      });
      /** Lets the load run until `count` more requests succeeded. */
      const served = async (count: number) => {
        const from = ok;
        await waitFor(`${count} more requests served`, () => ok >= from + count);
      };
      for (const n of [0, 1]) {
        await served(50);
        expect(await stopInstance(instances[n])).toBe(0);
        instances[n] = await launch(env, ports[n]);
        await listening(instances[n]);
        await waitFor(`s${n} up again in haproxy’s checks`, async () => (await upServers()).includes(`s${n}`)); // rise 2 × 250 ms
      }
      await served(50);
      running = false;
      await Promise.all(clients);
      expect({ failures, some: ok > 200 }).toEqual({ failures: [], some: true });
    } finally {
      haproxy.kill('SIGKILL');
      await Promise.all(instances.map((i) => stopInstance(i)));
      await rm(dir, { recursive: true, force: true });
      await db.drop();
      if (haproxyLog.includes('ALERT')) console.warn(haproxyLog);
    }
  });
});

describe('WORKERS', () => {
  test('WORKERS=2: two workers serve one port, a killed one is replaced, /metrics counts the group, subscriptions on either get every event, SIGTERM stops all with 0', async () => {
    const db = await newDatabase();
    const bootstrap = `boot-${randomBytes(12).toString('hex')}`;
    try {
      const primary = await launch({ DATABASE_URL: db.url, WORKERS: '2', BOOTSTRAP_TOKEN: bootstrap });
      await listening(primary);
      expect(primary.stdout()).toContain('(2 workers)');
      await waitFor('two workers', () => childrenOf(primary.child.pid!).length === 2);
      const workers = childrenOf(primary.child.pid!);
      // Both workers answer: the process ids in each answer's log lines are not needed; /metrics
      // counts every worker's requests whichever worker answers it.
      const headers = { Authorization: `Bearer ${bootstrap}` };
      for (let n = 0; n < 40; n++) expect(await statusOf(`${primary.url}/user/`, { headers })).toBe(200);
      const metrics = await (await fetch(`${primary.url}/metrics`)).text();
      const served = metrics
        .split('\n')
        .filter((l) => l.startsWith('http_requests_total{') && l.includes('route="/user"') && l.includes('status="200"'))
        .map((l) => Number(l.split(' ').at(-1)));
      expect(served).toEqual([40]);
      // A worker killed outright is replaced; the service keeps answering meanwhile.
      process.kill(workers[0], 'SIGKILL');
      await waitFor('a new worker', () => {
        const now = childrenOf(primary.child.pid!);
        return now.length === 2 && !now.includes(workers[0]);
      });
      for (let n = 0; n < 10; n++) expect(await statusOf(`${primary.url}/user/`, { headers })).toBe(200);
      // Subscriptions on workers: sockets spread over the workers each get an event written through any.
      const sockets = Array.from({ length: 4 }, () => wsConnect(primary.url, { Authorization: `Bearer ${bootstrap}` }));
      await Promise.all(sockets.map((s) => s.opened));
      // With `after:` the newest event id, a subscription gets every later event however late it starts.
      const [{ after }] = await adminQuery<{ after: string }>('select coalesce(max(id), 0)::text as after from audit_events', db.url);
      const subs = sockets.map((s) => collect(s.client, 'subscription ($after: ID) { roleEvents(after: $after) { action role { name } } }', { after }));
      expect(
        await statusOf(`${primary.url}/role/`, {
          method: 'POST',
          headers: { ...headers, 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: 'on-workers' }),
        }),
      ).toBe(201);
      for (const sub of subs) expect((await sub.atLeast(1))[0].data.roleEvents).toEqual({ action: 'CREATE', role: { name: 'on-workers' } });
      await Promise.all(sockets.map((s) => s.client.dispose()));
      expect(await stopInstance(primary)).toBe(0);
      for (const pid of childrenOf(primary.child.pid!)) throw new Error(`worker ${pid} outlived the primary`);
    } finally {
      await db.drop();
    }
  });
});
