import { randomBytes } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { startService } from '../../src/server.js';
import { createLogger } from '../../src/observability/log.js';
import { startTestService, type TestService } from '../support/service.js';
import { svc, useService } from '../support/http.js';
import { waitFor, within } from '../support/wait.js';

/**
 * The service and its database: a database that goes away and comes back, connections PostgreSQL
 * terminates while requests use them, bounded waits (DB_LOCK_TIMEOUT_MS, DB_STATEMENT_TIMEOUT_MS),
 * and a graceful stop.
 */
useService();

describe('a database that goes away', () => {
  // The service reaches PostgreSQL through a TCP proxy that the test cuts, as a network fault would.
  const external = process.env.DATABASE_URL ? test : test.skip;
  external('requests answer 503 UNAVAILABLE (REST and GraphQL), /readyz 503; they recover when it is back', async () => {
    const target = new URL(process.env.DATABASE_URL!);
    const sockets = new Set<Socket>();
    let open = true;
    const proxy = createServer((client) => {
      if (!open) return client.destroy();
      const upstream = connect(Number(target.port || 5432), target.hostname);
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const close = () => (client.destroy(), upstream.destroy());
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as AddressInfo;
    // A database of its own on the same server, reached through the proxy.
    const name = `uts_outage_${randomBytes(4).toString('hex')}`;
    const admin = async (sql: string) => {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
      await client.query(sql);
      await client.end();
    };
    await admin(`create database ${name}`);
    const url = new URL(process.env.DATABASE_URL!);
    url.host = `127.0.0.1:${port}`;
    url.pathname = `/${name}`;
    const lines: string[] = [];
    const config = loadConfig({
      PORT: '0',
      DATABASE_URL: url.toString(),
      BOOTSTRAP_TOKEN: 'outage-admin',
      TOKEN_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'info',
      DB_POOL_SIZE: '2',
    });
    const running = await startService(
      config,
      createLogger('info', (l) => lines.push(l)),
    );
    const get = (path: string, init: RequestInit = {}) =>
      fetch(running.url + path, { ...init, headers: { Authorization: 'Bearer outage-admin', 'Content-Type': 'application/json', ...init.headers } });
    try {
      expect((await get('/user/')).status).toBe(200);
      open = false;
      for (const socket of sockets) socket.destroy();
      for (const [path, init] of [
        ['/user/', {}],
        ['/user/', { method: 'POST', body: JSON.stringify({ firstName: 'A', lastName: 'B' }) }],
      ] as const) {
        const res = await get(path, init);
        expect(res.status).toBe(503);
        expect(await res.json()).toMatchObject({ code: 503, error: 'UNAVAILABLE' });
      }
      const gql = await get('/graphql', { method: 'POST', body: JSON.stringify({ query: '{ users { total } }' }) });
      expect(gql.status).toBe(503);
      expect(((await gql.json()) as any).errors[0].extensions.code).toBe('UNAVAILABLE');
      expect((await fetch(running.url + '/readyz')).status).toBe(503);
      open = true;
      await waitFor('the service to serve again', async () => (await get('/user/')).status === 200);
    } finally {
      open = true;
      await running.stop();
      proxy.close();
      for (const socket of sockets) socket.destroy();
      await admin(`drop database if exists ${name} with (force)`);
    }
    expect(lines.join('\n')).not.toContain('outage-admin');
  });
});

describe('connections that PostgreSQL terminates while requests use them', () => {
  const external = process.env.DATABASE_URL ? test : test.skip;
  external('answers 503 meanwhile (never a 500) and serves again at once: no connection stays checked out', async () => {
    const database = new URL(svc.config.databaseUrl!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    const statuses: number[] = [];
    const graphQLCodes = new Set<string>();
    let running = true;
    // REST writes, nested GraphQL reads, and mutations of several root fields (their shared
    // transaction may fail to begin, commit or roll back on a terminated connection).
    const requests = [
      (k: number, i: number) => svc.request('POST', '/token/', { body: { userID: 1, accessToken: `killed-${k}-${i}-${randomBytes(4).toString('hex')}` } }),
      () => svc.graphql('{ users(pageSize: 30) { data { id tokens { total } roles { total } } } }'),
      (k: number, i: number) =>
        svc.graphql(`mutation { a: createUser(input: {firstName: "K", lastName: "A"}) { id } b: createRole(input: {name: "killed-${k}-${i}"}) { id } }`),
    ];
    const load = Array.from({ length: 6 }, async (_, k) => {
      for (let i = 0; running; i++) {
        const reply = await requests[k % requests.length]!(k, i);
        statuses.push(reply.status);
        for (const error of (reply.body as { errors?: { extensions?: { code?: string } }[] })?.errors ?? []) graphQLCodes.add(String(error.extensions?.code));
      }
    });
    // Connections of the service's database in use by a request (a statement running, or a
    // transaction open), as PostgreSQL sees them.
    const busy = async () =>
      (
        await admin.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where datname = $1 and state in ('active', 'idle in transaction', 'idle in transaction (aborted)')`,
          [database],
        )
      ).rows[0].n > 0;
    try {
      // Each round waits until requests are using connections, then terminates every connection of
      // the database; at least 8 rounds, and on until a kill has hit a request (a 503 came back).
      for (let round = 1; round <= 8 || !statuses.includes(503); round++) {
        if (round > 200) throw new Error(`200 rounds of kills and no request answered 503: ${JSON.stringify(statuses.slice(-20))}`);
        await waitFor('a connection in use by a request', busy);
        await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
      }
    } finally {
      running = false;
      await Promise.all(load);
      await admin.end();
    }
    expect(statuses.filter((s) => ![200, 201, 503].includes(s))).toEqual([]);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0); // the kills did hit requests
    expect([...graphQLCodes].filter((code) => code !== 'UNAVAILABLE')).toEqual([]);
    // No connection stays checked out: with every request answered, the pool holds each one idle
    // and no one waits for one.
    const pool = svc.running.db.poolStats();
    expect({ idle: pool.idle, waiting: pool.waiting }).toEqual({ idle: pool.size, waiting: 0 });
    // More requests than the pool has connections (4 here), one after another: all served (one
    // waiting for a leaked connection would fail at the pool's acquire timeout with a 503).
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${svc.url}/user/?pageSize=1`, { headers: { Authorization: `Bearer ${svc.adminToken}` } });
      expect(res.status).toBe(200);
    }
    expect((await fetch(`${svc.url}/readyz`)).status).toBe(200);
  });
});

describe('bounded waits on PostgreSQL (DB_LOCK_TIMEOUT_MS, DB_STATEMENT_TIMEOUT_MS)', () => {
  const external = process.env.DATABASE_URL ? test : test.skip;

  /**
   * On a service of its own (env: its timeouts), runs `check` on a fresh user while another session
   * holds that user FOR UPDATE in an open transaction; then nothing may have changed.
   */
  async function whileUserLocked(env: Record<string, string>, check: (target: TestService, id: number) => Promise<void>): Promise<void> {
    const target = await startTestService(env);
    try {
      const id = (await target.request('POST', '/user/', { body: { firstName: 'Locked', lastName: 'Row' } })).body as number;
      expect(id).toEqual(expect.any(Number));
      const before = await target.snapshot();
      const holder = new pg.Client({ connectionString: target.config.databaseUrl });
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query('select id from users where id = $1 for update', [id]);
        await check(target, id);
      } finally {
        await holder.query('rollback').catch(() => {});
        await holder.end();
      }
      expect(await target.snapshot()).toEqual(before);
    } finally {
      await target.stop();
    }
  }

  external(
    'a write that waits longer than the lock timeout for a locked row: 409 CONFLICT (REST and GraphQL); nothing changes; the pool recovers',
    async () => {
      await whileUserLocked({ DB_LOCK_TIMEOUT_MS: '300', DB_POOL_SIZE: '2' }, async (quick, id) => {
        // The service's sessions wait 300 ms for a lock (DB_LOCK_TIMEOUT_MS), not the default 5 s:
        // PostgreSQL gives up on the lock on its own while the holder still holds it.
        expect(await quick.running.db.sql.rows('show lock_timeout')).toEqual([{ lock_timeout: '300ms' }]);
        const rest = await quick.request('PATCH', `/user/${id}`, { body: { firstName: 'Never' }, headers: { Attrs: 'firstName' } });
        expect(rest.status).toBe(409);
        expect(rest.body).toEqual({
          code: 409,
          error: 'CONFLICT',
          message: 'the records are being changed by another request; try again',
          requestId: expect.any(String),
        });
        const gql = await quick.graphql(`mutation { patchUser(id: "${id}", input: { firstName: "Never" }) { id } }`);
        expect(gql.body.errors[0].extensions.code).toBe('CONFLICT');
        // Requests that need no lock are served meanwhile, with both pool connections free again.
        const reads = await Promise.all([1, 2, 3].map(() => quick.request('GET', `/user/${id}`)));
        expect(reads.map((r) => r.status)).toEqual([200, 200, 200]);
        expect(quick.logLines.join('\n')).not.toMatch(/"level":"error"/);
      });
    },
  );

  external(
    'no connection free in time (every one busy): 503 UNAVAILABLE with Retry-After saying overload, never logged as the database unavailable (REST and GraphQL)',
    async () => {
      // One connection, held by a write waiting (no lock timeout) for a row another session holds.
      const target = await startTestService({ DB_POOL_SIZE: '1', DB_LOCK_TIMEOUT_MS: '0' });
      const holder = new pg.Client({ connectionString: target.config.databaseUrl });
      try {
        const id = (await target.request('POST', '/user/', { body: { firstName: 'Busy', lastName: 'Pool' } })).body as number;
        await holder.connect();
        await holder.query('begin');
        await holder.query('select id from users where id = $1 for update', [id]);
        const waiting = target.request('PATCH', `/user/${id}`, { body: { firstName: 'Later' }, headers: { Attrs: 'firstName' } });
        for (let tries = 0; ; tries++) {
          const { rows } = await holder.query(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
          if (rows.length) break;
          if (tries > 200) throw new Error('the write never waited for the lock');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        // These wait for the pool's one connection until POOL_ACQUIRE_TIMEOUT_MS, then give up.
        const [rest, gql] = await Promise.all([target.request('GET', `/user/${id}`), target.graphql(`{ user(id: "${id}") { id } }`)]);
        const message = 'the service has more requests than database connections just now; try again shortly';
        expect(rest.status).toBe(503);
        expect(rest.headers.get('retry-after')).toBe('5');
        expect(rest.body).toMatchObject({ code: 503, error: 'UNAVAILABLE', message });
        expect(gql.status).toBe(503);
        expect(gql.headers.get('retry-after')).toBe('5');
        expect(gql.body.errors[0]).toMatchObject({ message, extensions: { code: 'UNAVAILABLE' } });
        await holder.query('rollback');
        expect((await waiting).status).toBe(200);
        const warnings = target.logLines.map((line) => JSON.parse(line)).filter((line) => line.level === 'warn');
        expect(warnings).toEqual([]);
      } finally {
        await holder.end().catch(() => {});
        await target.stop();
      }
    },
  );

  external('a statement that runs longer than the statement timeout: 503 UNAVAILABLE, nothing changes', async () => {
    await whileUserLocked({ DB_LOCK_TIMEOUT_MS: '0', DB_STATEMENT_TIMEOUT_MS: '300' }, async (quick, id) => {
      const rest = await quick.request('DELETE', `/user/${id}`);
      expect(rest.status).toBe(503);
      expect(rest.body).toMatchObject({ code: 503, error: 'UNAVAILABLE', message: 'the database took too long to answer; try again shortly' });
    });
  });
});

describe('graceful stop', () => {
  test('in-flight requests finish with Connection: close, idle keep-alive connections close, and the stop ends with them (not at SHUTDOWN_TIMEOUT_MS)', async () => {
    // Ten minutes: a stop that waited for SHUTDOWN_TIMEOUT_MS instead of its last answer would
    // outlast the bounded wait below by far.
    const quick = await startTestService({ SHUTDOWN_TIMEOUT_MS: '600000' });
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const url = new URL(quick.url);
    // With `beforeEnd`, the request asks for a 100 Continue (Expect): once it comes, the server has
    // the request under way (Node answers it as it hands the request over), and `beforeEnd` runs
    // between the body's first bytes and the rest.
    const send = (method: string, path: string, body?: string, beforeEnd?: () => void) =>
      new Promise<{ status: number; connection: string | undefined; text: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            agent,
            host: url.hostname,
            port: url.port,
            method,
            path,
            headers: {
              Authorization: `Bearer ${quick.adminToken}`,
              'Content-Type': 'application/json',
              ...(body ? { 'Content-Length': Buffer.byteLength(body) } : {}),
              ...(beforeEnd ? { Expect: '100-continue' } : {}),
            },
          },
          (res) => {
            let text = '';
            res.on('data', (chunk) => (text += chunk)).on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, text }));
          },
        );
        req.on('error', reject);
        if (!body || !beforeEnd) return void req.end(body);
        req.once('continue', () => {
          req.write(body.slice(0, 5));
          beforeEnd();
          req.end(body.slice(5));
        });
        req.flushHeaders();
      });
    try {
      const warm = await send('GET', '/user/1');
      expect(warm).toMatchObject({ status: 200, connection: 'keep-alive' });
      let stopping: Promise<void> | undefined;
      // The stop begins while the server reads the body (its first steps run as stop() is called).
      const inFlight = await send('POST', '/user/', JSON.stringify({ firstName: 'Late', lastName: 'Comer' }), () => {
        stopping = quick.running.stop();
      });
      expect(inFlight.status).toBe(201);
      expect(inFlight.connection).toBe('close');
      await within('the stop to end with its last answer', stopping!, 30_000);
      // Nothing listens any more.
      await expect(fetch(`${quick.url}/healthz`)).rejects.toThrow();
    } finally {
      agent.destroy();
      await quick.stop();
    }
  });
});
