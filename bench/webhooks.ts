/**
 * `npm run bench:webhooks [-- --rate 500 --seconds 20 --deliveries 100000 --round 10 --rounds 3]`:
 * webhook deliveries under load (issue 30's targets), against the built service in its own process
 * and a receiver in this one (node:http on loopback, each delivery's signature checked with
 * `standardwebhooks`):
 *
 * 1. **Lag**: `rate` writes a second (PATCH /user/{id}, open loop: sent on a fixed schedule, not
 *    when the previous one is answered) for `seconds`, one webhook of every event; each delivery's
 *    lag is the time it arrived minus its event's `at` (the write's transaction time; PostgreSQL
 *    runs on this machine, one clock). Prints p50, p99 and the largest.
 * 2. **Memory**: writes 4 at a time (about as fast as one endpoint is delivered to, here) until
 *    the one webhook has had `deliveries` deliveries in all; the service's RSS at the start and at
 *    each quarter.
 * 3. **Cost on writes**: write throughput (16 at a time, `round` seconds each) with no webhook,
 *    then with 10 active webhooks of every event (made at the round's start, deleted at its end),
 *    alternating, `rounds` times each. Prints each round and the ratio of the medians.
 *
 * Asserts nothing; everything shares the machine (the service, PostgreSQL, the load and the
 * receiver), so the figures are what this machine gave at that moment.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { Agent } from 'undici';
import { benchService, memoryOf } from './service.js';

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '20' },
    deliveries: { type: 'string', default: '100000' },
    round: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
  },
});
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const DELIVERIES = Number(args.deliveries);
const ROUND_MS = Number(args.round) * 1000;
const ROUNDS = Number(args.rounds);
const CONCURRENCY = 16;
const USERS = 50;
const TOKEN = `bench-${randomBytes(16).toString('hex')}`;

const agent = new Agent({ connections: 64 });
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const mib = (n: number) => `${n.toFixed(0)} MiB`;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

/** The receiver: counts and times deliveries per path, checks every signature. */
function receiver() {
  const secrets = new Map<string, Webhook>();
  const counts = new Map<string, number>();
  const lags: number[] = [];
  let measuring: string | null = null;
  let bad = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const arrived = Date.now();
      const path = req.url ?? '';
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const event = secrets.get(path)!.verify(body, req.headers as Record<string, string>) as { timestamp: string };
        if (path === measuring) lags.push(arrived - Date.parse(event.timestamp));
      } catch {
        bad++;
      }
      counts.set(path, (counts.get(path) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  return {
    server,
    secrets,
    counts,
    lags,
    measure: (path: string | null) => (measuring = path),
    bad: () => bad,
    listen: () => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port))),
  };
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
  const hooks = receiver();
  const port = await hooks.listen();
  const service = await benchService({ LOG_LEVEL: 'warn', BOOTSTRAP_TOKEN: TOKEN, WEBHOOK_ALLOW_PRIVATE: 'true', READ_CACHE_MB: '0' });
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
      hooks.secrets.set(`/${name}`, new Webhook(created.secret));
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
    await until(() => (hooks.counts.get('/lag') ?? 0) >= total);
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

    // 3. Write throughput: no webhook vs 10 active ones, alternating.
    await call(service.base, 'PATCH', `/webhook/${lagHook}`, { active: false });
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
    hooks.server.close();
    await agent.close();
  }
}

await main();
