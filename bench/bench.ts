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
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { benchService, memoryOf } from './service.js';

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
  const service = await benchService({ LOG_LEVEL: 'warn', BOOTSTRAP_TOKEN: TOKEN });
  const { base, child } = service;
  const databaseUrl = ADMIN_URL;
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
          await call(
            'POST',
            `/user/${user.id}/application/`,
            [0, 1, 2].map((k) => apps[(n + k) % apps.length].id),
          );
          await call(
            'POST',
            `/user/${user.id}/role/`,
            [0, 1].map((k) => roles[(n + k) % roles.length].id),
          );
          for (let k = 0; k < 3; k++)
            await call('POST', '/token/', { userID: user.id, accessToken: `bench-${n}-${k}-${randomBytes(8).toString('hex')}`, scope: 'user:read' });
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
      {
        name: 'PATCH /user/{id} (write, one transaction)',
        run: (i) => status('PATCH', `/user/${userIds[i % userIds.length]}`, JSON.stringify({ status: i % 5 })),
      },
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
    console.log(
      `${pad('scenario', 52)}${'requests'.padStart(9)}${'req/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p95 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'non-2xx'.padStart(9)}`,
    );
    for (const r of results) {
      console.log(
        `${pad(r.name, 52)}${String(r.requests).padStart(9)}${num(r.perSecond, 0)}${num(r.p50)}${num(r.p95)}${num(r.p99)}${String(r.failed).padStart(9)}`,
      );
    }
    console.log(
      `\nservice memory: ${afterSeed.rssMiB.toFixed(0)} MiB resident after seeding, ${end.rssMiB.toFixed(0)} MiB at the end, ${end.peakMiB.toFixed(0)} MiB peak`,
    );
  } finally {
    await service.stop();
  }
}

await main();
