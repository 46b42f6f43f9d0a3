/**
 * `npm run bench:webhooks [-- --rate 500 --seconds 20 --deliveries 100000 --drain 3000 --round 10 --rounds 3 --build DIR]`:
 * webhook deliveries under load (issue 30's targets), against the built service in its own process
 * and a receiver in this one (node:http on loopback, each delivery's signature checked with
 * `standardwebhooks`):
 *
 * 1. **Lag**: `rate` writes a second (PATCH /user/{id}, open loop: sent on a fixed schedule, not
 *    when the previous one is answered) for `seconds`, one webhook of every event; each delivery's
 *    lag is the time it arrived minus its event's `at` (the write's transaction time; PostgreSQL
 *    runs on this machine, one clock), from the moment the webhook has been claimed (its first
 *    delivery, of one write before). Prints p50, p99 and the largest. The receiver runs on a
 *    thread of its own: its answers do not wait behind the load this process sends.
 * 2. **Memory**: writes 4 at a time (about as fast as one endpoint is delivered to, here) until
 *    the one webhook has had `deliveries` deliveries in all; the service's RSS at the start and at
 *    each quarter.
 * 2b. **Cost per delivery** (`drain` events, 0 skips it): with the webhook disabled, `drain` writes;
 *    then it is enabled again and delivers that backlog with nothing else going on. Prints the
 *    deliveries a second (one endpoint's chain: HTTP answer, database, next event), and per
 *    delivery the service's CPU time, the CPU time of PostgreSQL's backends on the bench database
 *    (those alive at the drain's end: a connection opened during the drain counts from its start)
 *    and the database's committed transactions (every statement outside a transaction is one;
 *    pg_stat_database, read after 11 s of quiet so that idle backends have flushed their counts;
 *    the dispatcher's and the event source's polls meanwhile are included: about 11 a second).
 *    Load on the machine changes the first figure, hardly the others. Needs DATABASE_URL.
 * 3. **Cost on writes**: write throughput (16 at a time, `round` seconds each) with no webhook,
 *    then with 10 active webhooks of every event (made at the round's start, deleted at its end),
 *    alternating, `rounds` times each. Prints each round and the ratio of the medians.
 *
 * Asserts nothing; everything shares the machine (the service, PostgreSQL, the load and the
 * receiver), so the figures are what this machine gave at that moment.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Webhook } from 'standardwebhooks';
import { Agent } from 'undici';
import pg from 'pg';
import { benchService, memoryOf } from './service.js';

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '20' },
    deliveries: { type: 'string', default: '100000' },
    drain: { type: 'string', default: '3000' },
    round: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    /** The directory of another build to run (a baseline to compare with: its dist/ and node_modules/), else this one. */
    build: { type: 'string' },
  },
});
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const DELIVERIES = Number(args.deliveries);
const DRAIN = Number(args.drain);
const ROUND_MS = Number(args.round) * 1000;
const ROUNDS = Number(args.rounds);
const CONCURRENCY = 16;
const USERS = 50;
const TOKEN = `bench-${randomBytes(16).toString('hex')}`;

const agent = new Agent({ connections: 64 });
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const mib = (n: number) => `${n.toFixed(0)} MiB`;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

/** Messages between the receiver's thread and the main one. */
type ToReceiver = { secret: { path: string; secret: string } } | { measure: string | null };
type FromReceiver = { port: number } | { path: string; lag: number | null; bad: boolean };

/**
 * The receiver, on a thread of its own (its own event loop, as a receiver elsewhere would have,
 * not the one sending 500 writes a second): checks every signature, tells the main thread of each
 * delivery (its path, and its lag while that path is measured).
 */
function runReceiver(): void {
  const secrets = new Map<string, Webhook>();
  let measuring: string | null = null;
  parentPort!.on('message', (message: ToReceiver) => {
    if ('secret' in message) secrets.set(message.secret.path, new Webhook(message.secret.secret));
    else measuring = message.measure;
  });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const arrived = Date.now();
      const path = req.url ?? '';
      const body = Buffer.concat(chunks).toString('utf8');
      let lag: number | null = null;
      let bad = false;
      try {
        const event = secrets.get(path)!.verify(body, req.headers as Record<string, string>) as { timestamp: string };
        if (path === measuring) lag = arrived - Date.parse(event.timestamp);
      } catch {
        bad = true;
      }
      res.writeHead(204).end();
      parentPort!.postMessage({ path, lag, bad } satisfies FromReceiver);
    });
  });
  server.listen(0, '127.0.0.1', () => parentPort!.postMessage({ port: (server.address() as AddressInfo).port } satisfies FromReceiver));
}

/** The receiver's thread, as the main thread sees it: deliveries counted per path, lags of the measured one. */
async function receiver() {
  const thread = new Worker(new URL(import.meta.url), { workerData: 'receiver' });
  const counts = new Map<string, number>();
  const lags: number[] = [];
  let bad = 0;
  const port = await new Promise<number>((resolve) => {
    thread.on('message', (message: FromReceiver) => {
      if ('port' in message) return resolve(message.port);
      counts.set(message.path, (counts.get(message.path) ?? 0) + 1);
      if (message.lag !== null) lags.push(message.lag);
      if (message.bad) bad++;
    });
  });
  return {
    port,
    counts,
    lags,
    secret: (path: string, secret: string) => thread.postMessage({ secret: { path, secret } } satisfies ToReceiver),
    measure: (path: string | null) => thread.postMessage({ measure: path } satisfies ToReceiver),
    bad: () => bad,
    close: () => thread.terminate(),
  };
}

/** CPU seconds (user + system) a process has used so far. */
async function cpuSeconds(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 Hz)
  } catch {
    return 0; // gone meanwhile
  }
}

/** The bench database's committed transactions and its backends' CPU seconds (those alive now). */
async function databaseCost(admin: pg.Client, database: string): Promise<{ commits: number; cpu: Map<number, number> }> {
  const [{ commits }] = (await admin.query('select xact_commit::float8 as commits from pg_stat_database where datname = $1', [database])).rows as {
    commits: number;
  }[];
  const pids = (await admin.query('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database])).rows as { pid: number }[];
  const cpu = new Map<number, number>();
  for (const { pid } of pids) cpu.set(pid, await cpuSeconds(pid));
  return { commits, cpu };
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await agent.request({
    origin: base,
    path,
    method: method as 'POST',
    headers: { ...headers, prefer: 'return=representation' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function main(): Promise<void> {
  const hooks = await receiver();
  const port = hooks.port;
  const service = await benchService({ LOG_LEVEL: 'warn', BOOTSTRAP_TOKEN: TOKEN, WEBHOOK_ALLOW_PRIVATE: 'true', READ_CACHE_MB: '0' }, args.build);
  const pid = service.child.pid!;
  let stopped = false;
  try {
    const users: number[] = [];
    for (let i = 0; i < USERS; i++)
      users.push(((await call(service.base, 'POST', '/user/', { firstName: `Bench${i}`, lastName: 'Hooks' })) as { id: number }).id);
    let n = 0;
    const write = () => {
      const i = n++;
      // Every write changes the user (one event each): statuses 1…1000, the users start at 0.
      return call(service.base, 'PATCH', `/user/${users[i % USERS]}`, { status: (i % 1000) + 1 });
    };
    const addHook = async (name: string) => {
      const created = (await call(service.base, 'POST', '/webhook/', { url: `http://127.0.0.1:${port}/${name}`, events: ['*'] })) as {
        id: number;
        secret: string;
      };
      hooks.secret(`/${name}`, created.secret);
      return created.id;
    };
    const until = async (what: () => boolean) => {
      while (!what()) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    /** Writes `concurrency` at a time until `stop()` says so; resolves with how many were made. */
    const closedLoop = async (stop: () => boolean, concurrency = CONCURRENCY) => {
      let made = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (!stop()) {
            await write();
            made++;
          }
        }),
      );
      return made;
    };

    // 1. Lag at RATE writes a second, one webhook.
    const lagHook = await addHook('lag');
    // Steady state: the webhook claimed (within WEBHOOK_POLL_MS of its creation) and delivering
    // before the timed writes start; that first delivery is not measured.
    await write();
    await until(() => (hooks.counts.get('/lag') ?? 0) >= 1);
    hooks.measure('/lag');
    const total = RATE * SECONDS;
    const started = performance.now();
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      pending.push(write());
    }
    await Promise.all(pending);
    const sent = (performance.now() - started) / 1000;
    await until(() => (hooks.counts.get('/lag') ?? 0) >= 1 + total);
    hooks.measure(null);
    const lags = [...hooks.lags].sort((a, b) => a - b);
    console.log(`1. lag: ${total} writes at ${RATE}/s (sent in ${sent.toFixed(1)} s: ${(total / sent).toFixed(0)}/s), one webhook of every event`);
    console.log(`   delivery lag (arrival − the event's at): p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms, max ${lags.at(-1)} ms`);

    // 2. Memory over DELIVERIES deliveries to that webhook.
    const delivered = () => hooks.counts.get('/lag') ?? 0;
    const before = await memoryOf(pid);
    console.log(`2. memory over ${DELIVERIES} deliveries (writes 4 at a time): RSS ${mib(before.rssMiB)} at ${delivered()}`);
    const marks = [0.25, 0.5, 0.75, 1].map((q) => Math.round(DELIVERIES * q));
    const memoryStarted = performance.now();
    const writing = closedLoop(() => n >= DELIVERIES, 4);
    for (const mark of marks) {
      await until(() => delivered() >= mark);
      const m = await memoryOf(pid);
      console.log(`   ${mark} deliveries: RSS ${mib(m.rssMiB)} (peak ${mib(m.peakMiB)}), ${((performance.now() - memoryStarted) / 1000).toFixed(0)} s`);
    }
    await writing;

    // 2b. One endpoint's backlog, delivered with nothing else going on.
    await call(service.base, 'PATCH', `/webhook/${lagHook}`, { active: false });
    if (DRAIN > 0 && service.database) {
      const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await admin.connect();
      try {
        const backlogFrom = n;
        await closedLoop(() => n >= backlogFrom + DRAIN);
        const quiet = () => new Promise((resolve) => setTimeout(resolve, 11_000));
        await quiet();
        const from = delivered();
        const [db0, cpu0] = [await databaseCost(admin, service.database), await cpuSeconds(pid)];
        const t0 = performance.now();
        await call(service.base, 'PATCH', `/webhook/${lagHook}`, { active: true });
        await until(() => delivered() >= from + DRAIN);
        const seconds = (performance.now() - t0) / 1000;
        // The backends' CPU at once (an idle pool closes its connections after 10 s), the commits after the quiet.
        const [mid, cpu1] = [await databaseCost(admin, service.database), await cpuSeconds(pid)];
        await call(service.base, 'PATCH', `/webhook/${lagHook}`, { active: false });
        await quiet();
        const db1 = await databaseCost(admin, service.database);
        const count = delivered() - from;
        let pgCpu = 0;
        for (const [backend, used] of mid.cpu) pgCpu += used - (db0.cpu.get(backend) ?? 0);
        const per = (x: number) => (x / count).toFixed(3);
        console.log(`2b. a backlog of ${count} events delivered to one endpoint, nothing else going on: ${(count / seconds).toFixed(0)} deliveries/s`);
        console.log(
          `   per delivery: service CPU ${per((cpu1 - cpu0) * 1000)} ms, PostgreSQL CPU ${per(pgCpu * 1000)} ms, database transactions ${per(db1.commits - db0.commits)}`,
        );
      } finally {
        await admin.end();
      }
    }

    // 3. Write throughput: no webhook vs 10 active ones, alternating.
    const none: number[] = [];
    const ten: number[] = [];
    console.log(`3. writes/s, ${CONCURRENCY} at a time, ${ROUND_MS / 1000} s rounds: no webhook vs 10 active webhooks of every event`);
    for (let r = 0; r < ROUNDS; r++) {
      for (const withHooks of [false, true]) {
        const ids = withHooks ? await Promise.all(Array.from({ length: 10 }, (_, i) => addHook(`r${r}-${i}`))) : [];
        const end = performance.now() + ROUND_MS;
        const t0 = performance.now();
        const made = await closedLoop(() => performance.now() >= end);
        const perSecond = made / ((performance.now() - t0) / 1000);
        (withHooks ? ten : none).push(perSecond);
        const deliveredInRound = ids.length ? [...Array(10).keys()].reduce((sum, i) => sum + (hooks.counts.get(`/r${r}-${i}`) ?? 0), 0) : 0;
        console.log(
          `   round ${r + 1} ${withHooks ? '10 webhooks' : 'none      '}: ${perSecond.toFixed(0)} writes/s${withHooks ? ` (${deliveredInRound} deliveries meanwhile)` : ''}`,
        );
        for (const id of ids) await call(service.base, 'DELETE', `/webhook/${id}`);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    if (ROUNDS > 0) {
      console.log(
        `   median: none ${median(none).toFixed(0)}/s, 10 webhooks ${median(ten).toFixed(0)}/s: ${((100 * median(ten)) / median(none)).toFixed(0)} %`,
      );
    }
    console.log(`signatures that did not verify: ${hooks.bad()}`);
    await service.stop();
    stopped = true;
  } finally {
    if (!stopped) await service.stop();
    await hooks.close();
    await agent.close();
  }
}

if (isMainThread) await main();
else if (workerData === 'receiver') runReceiver();
