/**
 * `npm run bench:entities [-- --references 50 --rounds 10 --seconds 3 --concurrency 8]`: what a
 * router's entity fetch costs the subgraph (SPEC §12: within 20 % of the same records read as a
 * filtered list). Starts the built service with GRAPHQL_FEDERATION=true and the read cache off
 * (READ_CACHE_MB=0: the list would otherwise be answered from memory, and `_entities` never is),
 * seeds `references` users, then alternates two requests for the same users and fields (so that
 * both see the same machine), first request by request from one client (half the time the rounds
 * take), then round after round of `concurrency` clients:
 *
 * - `_entities(representations: [{__typename: "User", id}, …])`, as a router sends it;
 * - `users(filter: { id: { in: […] } }, pageSize: …)`.
 *
 * Prints the one client's latency percentiles of each; each round's requests per second, p50
 * latency and the service's CPU time per request; each request's median over the rounds; and the
 * ratios. Asserts nothing.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { benchService } from './service.js';

const { values: args } = parseArgs({
  options: {
    references: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
  },
});
const REFERENCES = Number(args.references);
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
const CONCURRENCY = Number(args.concurrency);
const TOKEN = `bench-${randomBytes(16).toString('hex')}`;

const FIELDS = 'id firstName lastName';
const ENTITIES = `query($representations: [_Any!]!) { _entities(representations: $representations) { ... on User { ${FIELDS} } } }`;
const LIST = `query($ids: [ID!], $size: Int) { users(filter: { id: { in: $ids } }, pageSize: $size) { data { ${FIELDS} } } }`;

interface Figures {
  perSecond: number;
  p50: number;
  /** The service process's CPU time (user and system, from /proc) per request: steadier than throughput on a shared machine. */
  cpuMs: number;
}

/** A process's CPU time so far (utime + stime from /proc/<pid>/stat), in milliseconds. */
async function cpuTimeMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which is in parentheses and may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
/** The kernel's clock ticks per second for /proc's times (USER_HZ: 100 on Linux). */
const CLOCK_TICKS = 100;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main(): Promise<void> {
  const service = await benchService({ LOG_LEVEL: 'warn', BOOTSTRAP_TOKEN: TOKEN, GRAPHQL_FEDERATION: 'true', READ_CACHE_MB: '0' });
  const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json' };
  const graphql = async (query: string, variables: Record<string, unknown>) => {
    const res = await fetch(`${service.base}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
    return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] } };
  };
  try {
    const created = await graphql(
      `mutation { ${Array.from({ length: REFERENCES }, (_, i) => `u${i}: createUser(input: { firstName: "Bench${i}", lastName: "Entities" }) { id }`).join(' ')} }`,
      {},
    );
    if (created.status !== 200 || created.body.errors) throw new Error(`seeding failed: ${JSON.stringify(created.body)}`);
    const ids = Object.values(created.body.data as Record<string, { id: string }>).map((u) => u.id);
    const requests = {
      _entities: { query: ENTITIES, variables: { representations: ids.map((id) => ({ __typename: 'User', id })) }, answer: '_entities' },
      'users(filter: { id: { in } })': { query: LIST, variables: { ids, size: REFERENCES }, answer: 'users' },
    };
    // Both answer the same users with the same fields (the check also warms both up).
    const entities = await graphql(requests._entities.query, requests._entities.variables);
    const list = await graphql(LIST, requests['users(filter: { id: { in } })'].variables);
    const sorted = (records: { id: string }[]) => JSON.stringify([...records].sort((a, b) => Number(a.id) - Number(b.id)));
    if (sorted(entities.body.data!._entities as { id: string }[]) !== sorted((list.body.data!.users as { data: { id: string }[] }).data)) {
      throw new Error('the two requests answer different records');
    }

    const run = async (name: keyof typeof requests): Promise<Figures> => {
      const { query, variables } = requests[name];
      const body = JSON.stringify({ query, variables });
      const latencies: number[] = [];
      const cpuBefore = await cpuTimeMs(service.child.pid!);
      const started = performance.now();
      const deadline = started + SECONDS * 1000;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (performance.now() < deadline) {
            const t0 = performance.now();
            const res = await fetch(`${service.base}/graphql`, { method: 'POST', headers, body });
            const text = await res.text();
            if (res.status !== 200 || text.includes('"errors"')) throw new Error(`${name} answered ${res.status}: ${text.slice(0, 300)}`);
            latencies.push(performance.now() - t0);
          }
        }),
      );
      const elapsed = (performance.now() - started) / 1000;
      const cpuMs = ((await cpuTimeMs(service.child.pid!)) - cpuBefore) / latencies.length;
      latencies.sort((a, b) => a - b);
      return { perSecond: latencies.length / elapsed, p50: latencies[Math.floor(latencies.length / 2)], cpuMs };
    };

    const names = Object.keys(requests) as (keyof typeof requests)[];

    // One client, the two requests alternating one by one: each pair sees the same moment of the
    // machine, so the low percentiles compare what each costs even on a busy machine.
    const bodies = names.map((name) => JSON.stringify({ query: requests[name].query, variables: requests[name].variables }));
    const paired = names.map(() => [] as number[]);
    const pairsUntil = performance.now() + SECONDS * ROUNDS * 500;
    while (performance.now() < pairsUntil) {
      for (let k = 0; k < names.length; k++) {
        const t0 = performance.now();
        const res = await fetch(`${service.base}/graphql`, { method: 'POST', headers, body: bodies[k] });
        await res.text();
        paired[k].push(performance.now() - t0);
      }
    }
    const percentile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.floor(q * (values.length - 1))];
    process.stdout.write(`${REFERENCES} users, read cache off\n\none client, alternating request by request (${paired[0].length} pairs)\n`);
    for (let k = 0; k < names.length; k++) {
      process.stdout.write(`${names[k].padEnd(30)} p10 ${percentile(paired[k], 0.1).toFixed(2)} ms  p50 ${percentile(paired[k], 0.5).toFixed(2)} ms\n`);
    }
    process.stdout.write(
      `_entities / list: ${(percentile(paired[0], 0.1) / percentile(paired[1], 0.1)).toFixed(3)} × the p10 latency, ${(percentile(paired[0], 0.5) / percentile(paired[1], 0.5)).toFixed(3)} × the p50\n\n`,
    );

    const results = new Map(names.map((name) => [name, [] as Figures[]]));
    process.stdout.write(`${ROUNDS} rounds of ${SECONDS} s each, ${CONCURRENCY} clients, the two requests one after the other\n`);
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate which goes first, so that neither always follows the other.
      for (const name of round % 2 ? names : [...names].reverse()) {
        const figures = await run(name);
        results.get(name)!.push(figures);
        process.stdout.write(
          `round ${round}  ${name.padEnd(30)} ${figures.perSecond.toFixed(0).padStart(6)} req/s  p50 ${figures.p50.toFixed(2)} ms  service CPU ${figures.cpuMs.toFixed(2)} ms/request\n`,
        );
      }
    }
    const summary = names.map((name) => ({
      name,
      perSecond: median(results.get(name)!.map((f) => f.perSecond)),
      p50: median(results.get(name)!.map((f) => f.p50)),
      cpuMs: median(results.get(name)!.map((f) => f.cpuMs)),
    }));
    process.stdout.write('\nmedian over the rounds\n');
    for (const { name, perSecond, p50, cpuMs } of summary) {
      process.stdout.write(
        `${name.padEnd(30)} ${perSecond.toFixed(0).padStart(6)} req/s  p50 ${p50.toFixed(2)} ms  service CPU ${cpuMs.toFixed(2)} ms/request\n`,
      );
    }
    const [entitiesFigures, listFigures] = summary;
    process.stdout.write(
      `_entities / list: ${(entitiesFigures.perSecond / listFigures.perSecond).toFixed(3)} × the throughput, ${(entitiesFigures.cpuMs / listFigures.cpuMs).toFixed(3)} × the service CPU per request\n`,
    );
  } finally {
    await service.stop();
  }
}

await main();
