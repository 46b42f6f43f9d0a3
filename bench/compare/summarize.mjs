// The summary of a compare.sh run: each case's servers (medians over rounds), the Targets line of
// the shared benchmark kit's compare.sh of 2026-11-26 when every case ran, and, where the floors of the stack
// ran (FLOORS=1), the service as a share of its floor and the floor against the case's target.
//
//   node summarize.mjs results.jsonl [--partial]      (--partial: ONLY was given; no Targets line)
import { readFileSync } from 'node:fs';

const [file, mode] = process.argv.slice(2);
const rows = readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line));
const med = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const v = (c, s, k = 'rps') => med(rows.filter((r) => r.case === c && r.server === s).map((r) => r[k]));
const has = (c, s) => rows.some((r) => r.case === c && r.server === s);
const cases = [...new Set(rows.map((r) => r.case))];
for (const c of cases) {
  const servers = [...new Set(rows.filter((r) => r.case === c).map((r) => r.server))];
  console.log(c.padEnd(14) + servers.map((s) => `${s} ${v(c, s).toFixed(0)} req/s p99 ${v(c, s, 'p99_ms').toFixed(1)} ms`).join(' | '));
}
const f = (x) => x.toFixed(2);
/** The service's server in a case: cache off for the cold cases, as shipped otherwise. */
const service = (c) => (c.startsWith('cold') ? 'cold' : 'us');
const us = (c) => v(c, service(c));

const targets = [
  ['cold REST by id', 'cold-id-rest', 'raw', 0.65, 'x raw'],
  ['cold GraphQL by id', 'cold-id-gql', 'pgl', 1.05, 'x PostGraphile'],
  ['cold page of 50', 'cold-page', 'pgl', 1.5, 'x PostGraphile'],
  ['cold page of 50', 'cold-page', 'raw', 0.7, 'x raw'],
  ['mixed by id', 'mixed-id-rest', 'raw', 0.6, 'x raw'],
  ['mixed page of 50', 'mixed-page', 'pgl', 1.5, 'x PostGraphile'],
  ['writes REST', 'write-rest', 'raw', 0.55, 'x raw'],
  ['writes GraphQL', 'write-gql', 'pgl', 0.9, 'x PostGraphile'],
];
// Tail latency: the service's p99 at most 2x the anchor's p99 in the same case (written as the
// anchor's p99 over ours, >= 0.5).
const tails = [
  ['p99 cold REST by id', 'cold-id-rest', 'raw'],
  ['p99 cold GraphQL by id', 'cold-id-gql', 'pgl'],
  ['p99 mixed by id', 'mixed-id-rest', 'raw'],
  ['p99 writes REST', 'write-rest', 'raw'],
  ['p99 writes GraphQL', 'write-gql', 'pgl'],
];
/**
 * Each target as [name, its ratio for the server `server(case)` names, target, unit], as the
 * Targets line writes it; `ran` keeps only the cases where that server and the anchor ran (else a
 * missing case is NaN, and missed).
 */
const ratios = (server, ran = false) => {
  const keep = ([, c, a]) => !ran || (has(c, server(c)) && has(c, a));
  return [
    ...targets.filter(keep).map(([name, c, a, t, unit]) => [name, v(c, server(c)) / v(c, a), t, unit]),
    ...tails.filter(keep).map(([name, c, a]) => [name, v(c, a, 'p99_ms') / v(c, server(c), 'p99_ms'), 0.5, `x the anchor's p99 over ours`]),
  ];
};
const line = (list) => list.map(([n, r, t, u]) => `${n} ${f(r)}${u} (>= ${t})`).join('; ');

if (mode !== '--partial') {
  const rss = Math.max(...rows.filter((r) => r.server === 'us' || r.server === 'cold').map((r) => r.rss_peak_mb));
  const all = ratios(service);
  const missed = all.filter(([, r, t]) => !(r >= t)).length + (rss <= 200 ? 0 : 1);
  console.log(`\nTargets: ${line(all)}; RSS peak ${rss} MB (<= 200); ${missed ? missed + ' missed' : 'all met'}`);
}

// The floors of the stack (bench/koa-floor.mjs, bench/apollo-floor.mjs): the bare stack with the
// same statements, no target; how much of what the stack itself reaches the service keeps.
const FLOORS = [
  ['cold REST by id', 'cold-id-rest', 'koa', 'the Koa floor'],
  ['cold GraphQL by id', 'cold-id-gql', 'apollo', 'the Apollo floor'],
  ['cold page of 50', 'cold-page', 'apollo', 'the Apollo floor'],
  ['mixed by id', 'mixed-id-rest', 'koa', 'the Koa floor'],
  ['mixed page of 50', 'mixed-page', 'apollo', 'the Apollo floor'],
  ['writes REST', 'write-rest', 'koa', 'the Koa floor'],
  ['writes GraphQL', 'write-gql', 'apollo', 'the Apollo floor'],
];
const shares = FLOORS.filter(([, c, floor]) => has(c, floor) && has(c, service(c))).map(
  ([name, c, floor, label]) =>
    `${name} ${f(us(c) / v(c, floor))}x ${label} (${us(c).toFixed(0)} / ${v(c, floor).toFixed(0)} req/s; p99 ${v(c, service(c), 'p99_ms').toFixed(1)} / ${v(c, floor, 'p99_ms').toFixed(1)} ms)`,
);
if (shares.length) console.log(`\nFloors: ${shares.join('; ')}`);
// The same targets reached by the floors themselves, where they ran (against the same anchor, in the
// same run): a target its floor misses is one the stack forbids, by that much.
const floorOf = new Map(FLOORS.map(([, c, floor]) => [c, floor]));
const reached = ratios((c) => floorOf.get(c), true);
if (reached.length) console.log(`\nFloor targets: ${line(reached)}`);
