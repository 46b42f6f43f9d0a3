/**
 * `npm run bench [-- --seconds 5 --concurrency 16 --users 500]`: measures the built service as a
 * client sees it and prints figures (it asserts nothing).
 *
 * The service runs as its own process (`node dist/src/main.js`), on DATABASE_URL when it is set
 * (a throw-away database is created there and dropped afterwards) or else on the embedded database
 * in a temporary DATA_DIR. The bench seeds users, applications, roles, links and tokens over REST,
 * then runs each scenario for a fixed time with a fixed number of concurrent keep-alive clients and
 * prints requests per second, latency percentiles, non-2xx answers, and the service's resident
 * memory (now and peak, from /proc).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16' },
    users: { type: 'string', default: '500' },
  },
});
const SECONDS = Number(args.seconds);
const CONCURRENCY = Number(args.concurrency);
const USERS = Number(args.users);
const ADMIN_URL = process.env.DATABASE_URL;
const TOKEN = `bench-${randomBytes(16).toString('hex')}`;

interface Scenario {
  name: string;
  /** One request; returns the HTTP status. `i` counts this client's requests. */
  run(i: number): Promise<number>;
}

interface Result {
  name: string;
  requests: number;
  perSecond: number;
  p50: number;
  p95: number;
  p99: number;
  failed: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function memoryOf(pid: number): Promise<{ rssMiB: number; peakMiB: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

/** Starts `node dist/src/main.js` and resolves once it listens. */
async function startService(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['dist/src/main.js'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the service exited with ${code} before listening:\n${out}`)));
  });
  return child;
}

async function measure(scenario: Scenario, seconds: number): Promise<Result> {
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, client) => {
      for (let i = client; performance.now() < deadline; i += CONCURRENCY) {
        const t0 = performance.now();
        const status = await scenario.run(i);
        latencies.push(performance.now() - t0);
        if (status < 200 || status > 299) failed += 1;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { name: scenario.name, requests: latencies.length, perSecond: latencies.length / elapsed, p50: at(0.5), p95: at(0.95), p99: at(0.99), failed };
}

async function main(): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let dataDir: string | undefined;
  let databaseUrl: string | undefined;
  let dbName: string | undefined;
  if (ADMIN_URL) {
    dbName = `uts_bench_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
    const url = new URL(ADMIN_URL);
    url.pathname = `/${dbName}`;
    databaseUrl = url.toString();
  } else {
    dataDir = await mkdtemp(join(tmpdir(), 'uts-bench-'));
  }
  const child = await startService({
    PORT: String(port),
    HOST: '127.0.0.1',
    BOOTSTRAP_TOKEN: TOKEN,
    LOG_LEVEL: 'warn',
    // A key of its own (SPEC §9); the embedded database would otherwise make a key file.
    ...(databaseUrl ? { DATABASE_URL: databaseUrl, TOKEN_KEY: randomBytes(32).toString('base64') } : { DATA_DIR: dataDir! }),
  });
  try {
    const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json' };
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
      return text ? JSON.parse(text) : null;
    };
    const status = async (method: string, path: string, body?: string) => {
      const res = await fetch(base + path, { method, headers, body });
      await res.arrayBuffer();
      return res.status;
    };

    // Seed: 10 applications, 5 roles; every user linked to 3 applications and 2 roles, with 3 tokens.
    const seedStarted = performance.now();
    const apps = await Promise.all(Array.from({ length: 10 }, (_, i) => call('POST', '/application/', { name: `bench-app-${i}` })));
    const roles = await Promise.all(Array.from({ length: 5 }, (_, i) => call('POST', '/role/', { name: `bench-role-${i}` })));
    const userIds: number[] = [];
    for (let start = 0; start < USERS; start += CONCURRENCY) {
      const batch = Array.from({ length: Math.min(CONCURRENCY, USERS - start) }, (_, k) => start + k);
      await Promise.all(
        batch.map(async (n) => {
          const user = await call('POST', '/user/', { firstName: `Bench${n}`, lastName: `User${n % 97}`, status: n % 4, ref: n });
          userIds.push(user.id);
          await call('POST', `/user/${user.id}/application/`, [0, 1, 2].map((k) => apps[(n + k) % apps.length].id));
          await call('POST', `/user/${user.id}/role/`, [0, 1].map((k) => roles[(n + k) % roles.length].id));
          for (let k = 0; k < 3; k++) await call('POST', '/token/', { userID: user.id, accessToken: `bench-${n}-${k}-${randomBytes(8).toString('hex')}`, scope: 'user:read' });
        }),
      );
    }
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const afterSeed = await memoryOf(child.pid!);

    const nested = JSON.stringify({
      query: `{ users(pageSize: 50, orderBy: [{ lastName: ASC }]) { total data { id lastName
        applications { total data { right application { name } } } roles { total data { name } } tokens { total data { id scope } } } } }`,
    });
    const filter = encodeURIComponent(JSON.stringify({ status: { in: [1, 2] }, lastName: { ilike: 'user1%' } }));
    const scenarios: Scenario[] = [
      { name: 'GET /healthz (no auth, no database)', run: () => status('GET', '/healthz') },
      { name: 'GET /user/{id} (auth + one read)', run: (i) => status('GET', `/user/${userIds[i % userIds.length]}`) },
      { name: 'GET /user/?filter…&orderBy=-createdAt (list of 20)', run: () => status('GET', `/user/?filter=${filter}&orderBy=-createdAt`) },
      { name: 'GET /user/{id}/application/ (link list)', run: (i) => status('GET', `/user/${userIds[i % userIds.length]}/application/`) },
      { name: 'PATCH /user/{id} (write, one transaction)', run: (i) => status('PATCH', `/user/${userIds[i % userIds.length]}`, JSON.stringify({ status: i % 5 })) },
      { name: 'POST /user/ (create)', run: (i) => status('POST', '/user/', JSON.stringify({ firstName: 'Load', lastName: `L${i}` })) },
      { name: 'GraphQL: 50 users + applications, roles, tokens', run: () => status('POST', '/graphql', nested) },
    ];

    const results: Result[] = [];
    for (const scenario of scenarios) {
      await measure(scenario, 1); // warm-up: JIT, connection pool, PostgreSQL caches
      results.push(await measure(scenario, SECONDS));
    }
    const end = await memoryOf(child.pid!);

    const database = databaseUrl ? 'PostgreSQL (DATABASE_URL)' : 'embedded PGlite';
    const pad = (s: string, n: number) => s.padEnd(n);
    const num = (v: number, d = 1) => v.toFixed(d).padStart(9);
    console.log(`\nUser and token service benchmark — ${database}, Node ${process.versions.node}`);
    console.log(`${USERS} users (3 applications, 2 roles, 3 tokens each) seeded over REST in ${seedSeconds.toFixed(1)} s`);
    console.log(`${CONCURRENCY} concurrent keep-alive clients, ${SECONDS} s per scenario after 1 s of warm-up\n`);
    console.log(`${pad('scenario', 52)}${'requests'.padStart(9)}${'req/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p95 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'non-2xx'.padStart(9)}`);
    for (const r of results) {
      console.log(`${pad(r.name, 52)}${String(r.requests).padStart(9)}${num(r.perSecond, 0)}${num(r.p50)}${num(r.p95)}${num(r.p99)}${String(r.failed).padStart(9)}`);
    }
    console.log(`\nservice memory: ${afterSeed.rssMiB.toFixed(0)} MiB resident after seeding, ${end.rssMiB.toFixed(0)} MiB at the end, ${end.peakMiB.toFixed(0)} MiB peak`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    if (dbName) {
      const admin = new pg.Client({ connectionString: ADMIN_URL });
      await admin.connect();
      await admin.query(`drop database if exists ${dbName} with (force)`);
      await admin.end();
    }
  }
}

await main();
