/**
 * `npm run bench:events [-- --subscribers 100 --events 10000 --concurrency 16 --record]`: the
 * subscription path under load. Starts the built service, opens `subscribers` graphql-ws
 * connections each running `userEvents` (with `--record`, also the user as it is now, read once
 * per event on the instance), then makes `events` writes (`PATCH /user/{id}`, `concurrency` at a
 * time) and waits until every subscriber has every event. Prints writes per second, events
 * delivered per second, how long the last event took to reach everyone, and the service's resident
 * memory before, at each quarter and after. Asserts nothing: the figures show whether memory
 * stays flat (each subscription's queue is bounded; nothing is kept per event once sent).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { benchService, memoryOf } from './service.js';

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '100' },
    events: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '16' },
    record: { type: 'boolean', default: false },
  },
});
const SUBSCRIBERS = Number(args.subscribers);
const EVENTS = Number(args.events);
const CONCURRENCY = Number(args.concurrency);
const TOKEN = `bench-${randomBytes(16).toString('hex')}`;
const USERS = 50;

const mib = (n: number) => `${n.toFixed(0)} MiB`;

async function main(): Promise<void> {
  const service = await benchService({ LOG_LEVEL: 'warn', BOOTSTRAP_TOKEN: TOKEN, SUBSCRIPTIONS_MAX: String(SUBSCRIBERS + 10) });
  const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
  const clients: Client[] = [];
  try {
    const ids: number[] = [];
    for (let i = 0; i < USERS; i++) {
      const res = await fetch(`${service.base}/user/`, { method: 'POST', headers, body: JSON.stringify({ firstName: `Bench${i}`, lastName: 'Events' }) });
      ids.push(Number(await res.text()));
    }
    const received = new Array<number>(SUBSCRIBERS).fill(0);
    let errors = 0;
    let allReceived!: () => void;
    const done = new Promise<void>((resolve) => (allReceived = resolve));
    let complete = 0;
    const query = `subscription { userEvents { eventID action id${args.record ? ' user { id firstName }' : ''} } }`;
    const url = `${service.base.replace('http', 'ws')}/graphql`;
    for (let s = 0; s < SUBSCRIBERS; s++) {
      const client = createClient({ url, webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${TOKEN}` }, retryAttempts: 0, lazy: false });
      clients.push(client);
      client.subscribe(
        { query },
        {
          next: (result) => {
            if (result.errors) errors++;
            if (++received[s] === EVENTS && ++complete === SUBSCRIBERS) allReceived();
          },
          error: () => errors++,
          complete: () => {},
        },
      );
    }
    // Every subscription running: the service counts them.
    for (;;) {
      const metrics = await (await fetch(`${service.base}/metrics`)).text();
      if (Number(/^realtime_subscriptions\{operation="userEvents"\} (\S+)/m.exec(metrics)?.[1] ?? 0) >= SUBSCRIBERS) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const pid = service.child.pid!;
    const before = await memoryOf(pid);
    console.log(`${SUBSCRIBERS} subscribers of userEvents${args.record ? ' with the user' : ''}; ${EVENTS} writes, ${CONCURRENCY} at a time`);
    console.log(`RSS before: ${mib(before.rssMiB)}`);
    let peak = before.rssMiB;
    const sampler = setInterval(() => void memoryOf(pid).then((m) => (peak = Math.max(peak, m.rssMiB))), 100);
    const started = performance.now();
    let next = 0;
    let written = 0;
    const quarters = new Set([0.25, 0.5, 0.75].map((q) => Math.round(EVENTS * q)));
    const writer = async () => {
      while (next < EVENTS) {
        const n = next++;
        const res = await fetch(`${service.base}/user/${ids[n % USERS]}`, { method: 'PATCH', headers, body: JSON.stringify({ lastName: `Events ${n}` }) });
        if (res.status !== 200) throw new Error(`PATCH answered ${res.status}`);
        await res.arrayBuffer();
        written++;
        if (quarters.has(written)) {
          const m = await memoryOf(pid);
          console.log(`RSS after ${written} writes: ${mib(m.rssMiB)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, writer));
    const wrote = performance.now();
    await done;
    const delivered = performance.now();
    clearInterval(sampler);
    const after = await memoryOf(pid);
    const seconds = (delivered - started) / 1000;
    console.log(`writes: ${(EVENTS / ((wrote - started) / 1000)).toFixed(0)}/s`);
    console.log(
      `events delivered: ${((EVENTS * SUBSCRIBERS) / seconds).toFixed(0)}/s (${(EVENTS / seconds).toFixed(0)} events/s to each of ${SUBSCRIBERS}); the last reached everyone ${(delivered - wrote).toFixed(0)} ms after the last write`,
    );
    console.log(`RSS after: ${mib(after.rssMiB)}; peak while running ${mib(peak)}; errors ${errors}`);
  } finally {
    await Promise.all(clients.map((client) => client.dispose()));
    await service.stop();
  }
}

await main();
