/**
 * `npm run bench:trusted [-- --rounds 5 --seconds 3 --concurrency 8]`: what trusted documents
 * (docs/graphql.md#trusted-documents) cost a GraphQL request. GraphQL `user(id)` (the test client
 * project's `UserById`, test/graphql/trusted-client) three ways, round after round, alternating:
 *
 * - `by id`: with the list on, the request names the operation by its id (Apollo Client's
 *   persisted query link): no text to read, hash, parse or validate;
 * - `text, listed`: with the list on, the same operation's full text;
 * - `text, no list`: the same text to a service started without a list (as before the feature).
 *
 * Each service runs as its own process with the read cache off (READ_CACHE_MB=0: every request
 * is computed). Prints requests per second, latency percentiles and the service's CPU time per
 * request (its threads' run time from /proc: what a busy machine disturbs least) per round, and
 * their medians (and the least CPU time: interference only adds); asserts nothing.
 * `BASELINE_DIR=<a built clone>` adds the same text sent to that build's service (at another
 * commit, say), alternating with the others; `VARIANTS=by-id,text-listed,text-no-list,baseline`
 * chooses. Figures from one machine: docs/benchmarks.md#trusted-documents.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchService, type BenchService } from './service.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
  },
});
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
const CONCURRENCY = Number(args.concurrency);
const TOKEN = `bench-${randomBytes(16).toString('hex')}`;
const MANIFEST = fileURLToPath(new URL('../../test/graphql/trusted-client/persisted-query-manifest.json', import.meta.url));

interface Variant {
  name: string;
  key: string;
  service: 'listed' | 'open' | 'baseline';
  body: (userId: string) => string;
}

/**
 * CPU time a process has used, in nanoseconds: the sum of its threads' run time (/proc's schedstat),
 * which a busy machine disturbs far less than throughput (a request's own work, not its waits).
 */
async function cpuNs(pid: number): Promise<number> {
  let total = 0;
  for (const task of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${task}/schedstat`, 'utf8').catch(() => '0');
    total += Number(stat.split(' ')[0]);
  }
  return total;
}

async function rate(
  service: BenchService,
  body: (i: number) => string,
): Promise<{ perSecond: number; p50: number; p99: number; failed: number; cpuUs: number }> {
  const base = service.base;
  const cpuBefore = await cpuNs(service.child.pid!);
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json' };
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, client) => {
      for (let i = client; performance.now() < deadline; i += CONCURRENCY) {
        const t0 = performance.now();
        const res = await fetch(`${base}/graphql`, { method: 'POST', headers, body: body(i) });
        const text = await res.text();
        latencies.push(performance.now() - t0);
        if (res.status !== 200 || text.includes('"errors"')) failed += 1;
      }
    }),
  );
  const cpuUs = (await cpuNs(service.child.pid!)) - cpuBefore;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { perSecond: latencies.length / ((performance.now() - started) / 1000), p50: at(0.5), p99: at(0.99), failed, cpuUs: cpuUs / 1000 / latencies.length };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  const manifest = JSON.parse(await readFile(MANIFEST, 'utf8')) as { operations: { id: string; name: string; body: string }[] };
  const operation = manifest.operations.find((o) => o.name === 'UserById')!;
  const chosen = process.env.VARIANTS?.split(',').map((v) => v.trim());
  const variants: Variant[] = [
    {
      name: 'by id (list on)',
      key: 'by-id',
      service: 'listed' as const,
      body: (id: string) =>
        JSON.stringify({ operationName: 'UserById', variables: { id }, extensions: { persistedQuery: { version: 1, sha256Hash: operation.id } } }),
    },
    {
      name: 'text, listed (list on)',
      key: 'text-listed',
      service: 'listed' as const,
      body: (id: string) => JSON.stringify({ query: operation.body, variables: { id } }),
    },
    {
      name: 'text, no list',
      key: 'text-no-list',
      service: 'open' as const,
      body: (id: string) => JSON.stringify({ query: operation.body, variables: { id } }),
    },
    // BASELINE_DIR: another build (a clone at an older commit, built): the same text, no list, there.
    ...(process.env.BASELINE_DIR
      ? [
          {
            name: 'text, baseline build',
            key: 'baseline',
            service: 'baseline' as const,
            body: (id: string) => JSON.stringify({ query: operation.body, variables: { id } }),
          },
        ]
      : []),
  ].filter((v) => !chosen || chosen.includes(v.key));
  const env = { LOG_LEVEL: 'warn', BOOTSTRAP_TOKEN: TOKEN, READ_CACHE_MB: '0' };
  const services: Partial<Record<Variant['service'], BenchService>> = {};
  try {
    for (const kind of new Set(variants.map((v) => v.service))) {
      services[kind] = await benchService(
        kind === 'listed' ? { ...env, GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST } : env,
        kind === 'baseline' ? process.env.BASELINE_DIR : undefined,
      );
    }
    // A few users to read, on each service.
    const users: Partial<Record<Variant['service'], string[]>> = {};
    for (const [kind, service] of Object.entries(services) as [Variant['service'], BenchService][]) {
      users[kind] = [];
      for (let n = 0; n < 20; n++) {
        const res = await fetch(`${service.base}/user/`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ firstName: `Bench${n}`, lastName: 'Trusted' }),
        });
        users[kind]!.push(String((await res.json()) as number));
      }
    }
    const run = (variant: Variant) => {
      const ids = users[variant.service]!;
      const bodies = ids.map((id) => variant.body(id));
      return rate(services[variant.service]!, (i) => bodies[i % bodies.length]);
    };
    for (const variant of variants) await run(variant); // warm-up: JIT, compiled queries, pools
    const perRound: Record<string, number[]> = Object.fromEntries(variants.map((v) => [v.key, []]));
    const p50s: Record<string, number[]> = Object.fromEntries(variants.map((v) => [v.key, []]));
    const cpus: Record<string, number[]> = Object.fromEntries(variants.map((v) => [v.key, []]));
    const least = (values: number[]) => Math.min(...values);
    console.log(`GraphQL user(id), ${CONCURRENCY} clients, ${SECONDS} s a round, ${ROUNDS} rounds, read cache off`);
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternating, and each round in another order, so that drift on a busy machine is shared.
      const order = round % 2 ? variants : [...variants].reverse();
      for (const variant of order) {
        const result = await run(variant);
        perRound[variant.key].push(result.perSecond);
        p50s[variant.key].push(result.p50);
        cpus[variant.key].push(result.cpuUs);
        console.log(
          `round ${round}  ${variant.name.padEnd(24)} ${result.perSecond.toFixed(0).padStart(6)} req/s  p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms  service CPU ${result.cpuUs.toFixed(0)} µs/request${result.failed ? `  FAILED ${result.failed}` : ''}`,
        );
      }
    }
    console.log('median of the rounds:');
    for (const variant of variants) {
      console.log(
        `  ${variant.name.padEnd(24)} ${median(perRound[variant.key]).toFixed(0).padStart(6)} req/s  p50 ${median(p50s[variant.key]).toFixed(2)} ms  service CPU ${median(cpus[variant.key]).toFixed(0)} µs/request (least ${least(cpus[variant.key]).toFixed(0)})`,
      );
    }
  } finally {
    for (const service of Object.values(services)) await service?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
