/**
 * `npm run bench:memory [-- --texts 9000 --bytes 2000 --concurrency 8]`: what unique GraphQL query
 * texts cost the service's memory. Every request sends a text no earlier request sent (another
 * alias, ~2 KB), so that each one is parsed, validated, planned and offered to the document store
 * and the read cache; prints the service's heap and resident memory (from its /metrics and /proc)
 * before, every quarter of the way, and after. Asserts nothing: the document store is bounded by
 * the bytes of the parsed documents it keeps (8 MiB), and the figures show whether memory levels off.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { benchService, memoryOf } from './service.js';

const { values: args } = parseArgs({
  options: {
    texts: { type: 'string', default: '9000' },
    bytes: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '8' },
  },
});
const TEXTS = Number(args.texts);
const BYTES = Number(args.bytes);
const CONCURRENCY = Number(args.concurrency);
const TOKEN = `bench-${randomBytes(16).toString('hex')}`;

/**
 * A valid query of about BYTES characters that no other `n` gives, within the query limits (at
 * most 40 aliases): aliased fields of the users page, the rest a comment, which is part of the text.
 */
function queryText(n: number): string {
  const fields = Array.from({ length: 40 }, (_, i) => `q${n}_${i}: firstName`).join(' ');
  const query = `query Q${n} { users(pageSize: 1) { data { id ${fields} } } }`;
  return `${query}\n# ${'.'.repeat(Math.max(0, BYTES - query.length - 3))}`;
}

async function main(): Promise<void> {
  const service = await benchService({ LOG_LEVEL: 'warn', BOOTSTRAP_TOKEN: TOKEN });
  const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
  const heapOf = async () => {
    const text = await (await fetch(`${service.base}/metrics`)).text();
    return Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? NaN) / 1048576;
  };
  const line = async (label: string) => {
    const { rssMiB, peakMiB } = await memoryOf(service.child.pid!);
    console.log(
      `${label.padEnd(26)} heap used ${(await heapOf()).toFixed(1).padStart(7)} MiB   RSS ${rssMiB.toFixed(0).padStart(5)} MiB   peak ${peakMiB.toFixed(0).padStart(5)} MiB`,
    );
  };
  try {
    console.log(`\n${TEXTS} unique GraphQL query texts of ~${BYTES} bytes, ${CONCURRENCY} concurrent clients, Node ${process.versions.node}\n`);
    await line('before');
    let next = 0;
    let failed = 0;
    const started = performance.now();
    const quarter = Math.ceil(TEXTS / 4);
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let n = next++; n < TEXTS; n = next++) {
          const res = await fetch(`${service.base}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query: queryText(n) }) });
          const body = (await res.json()) as { errors?: unknown };
          if (res.status !== 200 || body.errors) failed += 1;
          if ((n + 1) % quarter === 0) await line(`after ${n + 1} texts`);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    await line('at the end');
    console.log(`\n${(TEXTS / seconds).toFixed(0)} texts/s, ${failed} failed`);
  } finally {
    await service.stop();
  }
}

await main();
