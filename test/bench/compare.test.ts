import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `npm run bench:compare` runs from a clone: its script, anchors, load and data sets are in the
 * repository, the anchors' packages are bench/compare's own, the docs point at it, and its summary
 * prints the cases, the Targets line and the floors' shares. (A run itself takes minutes and the
 * machine's two cores: docs/benchmarks.md; its summary is checked here on results of known ratios.)
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const script = read('bench/compare/compare.sh');

test('npm run bench:compare runs the script in the repository, and the docs point at it, not outside the repository', () => {
  expect(pkg.scripts['bench:compare']).toBe('bash bench/compare/compare.sh');
  for (const doc of ['README.md', 'docs/benchmarks.md']) {
    expect(read(doc)).not.toMatch(/\.\.\/shared\//);
    expect(read(doc)).toContain('npm run bench:compare');
  }
  // Every file the script (and the seed it runs) reads is in the repository.
  for (const [, file] of script.matchAll(/"\$here\/([\w.-]+)"/g)) expect(existsSync(join(root, 'bench/compare', file))).toBe(true);
  for (const [, file] of script.matchAll(/ (bench\/[\w./-]+\.mjs)/g)) expect(existsSync(join(root, file))).toBe(true);
  expect(read('bench/us-seed-secrets.mjs')).toContain("'./compare/us-seed.sql'");
  expect(script).not.toMatch(/\.\.\/shared|svc-benchkit/);
});

test("the anchors' packages are bench/compare's own, locked, and none of the service's", () => {
  const anchors = JSON.parse(read('bench/compare/package.json')) as { dependencies: Record<string, string> };
  expect(anchors.dependencies).toEqual({ pg: '8.23.1', postgraphile: '5.1.5' });
  const lock = JSON.parse(read('bench/compare/package-lock.json')) as { packages: Record<string, { version?: string }> };
  expect(lock.packages['node_modules/postgraphile'].version).toBe('5.1.5');
  expect(Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })).not.toContain('postgraphile');
  expect(script).toMatch(/npm ci /);
});

test('the cases and the floors are those of the kit', () => {
  const cases = [...script.matchAll(/"((?:cold|mixed|write|hot)-[\w-]+ \w+ [\w-]+)"/g)].map((m) => m[1]);
  expect(cases).toEqual([
    'cold-id-rest raw raw-user',
    'cold-id-rest cold us-user',
    'cold-id-rest koa us-user',
    'cold-id-gql pgl pgl-user',
    'cold-id-gql cold us-gql-user',
    'cold-id-gql apollo us-gql-user',
    'cold-page raw raw-users',
    'cold-page pgl pgl-users-cursor',
    'cold-page cold us-users',
    'cold-page apollo us-users',
    'mixed-id-rest raw raw-mixed-id',
    'mixed-id-rest us us-mixed-id',
    'mixed-id-rest koa us-mixed-id',
    'mixed-page raw raw-mixed-page',
    'mixed-page pgl pgl-mixed-page',
    'mixed-page us us-gql-mixed-page',
    'mixed-page apollo us-gql-mixed-page',
    'write-rest raw raw-patch',
    'write-rest us us-patch',
    'write-rest koa us-patch',
    'write-gql pgl pgl-patch',
    'write-gql us us-gql-patch',
    'write-gql apollo us-gql-patch',
    'hot-id-rest us us-user',
    'hot-id-gql us us-gql-user',
    'hot-page us us-users',
  ]);
  // The floors' cases only with FLOORS=1.
  for (const floor of cases.filter((c) => / (koa|apollo) /.test(c))) expect(script).toContain(`"$(floor "${floor}")"`);
  expect(script).toMatch(/start koa \d+ .* bench\/koa-floor\.mjs/);
  expect(script).toMatch(/start apollo \d+ .* bench\/apollo-floor\.mjs/);
});

describe('the summary', () => {
  const dir = mkdtempSync(join(tmpdir(), 'uts-compare-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** Results where every anchor answers 1000 req/s at p99 10 ms and the service `share` of that at p99 15 ms. */
  function summary(servers: Record<string, string[]>, share: number, floorShare = 1, partial = false): string {
    const rows = Object.entries(servers).flatMap(([c, list]) =>
      list.map((server) => {
        const service = server === 'us' || server === 'cold';
        const floor = server === 'koa' || server === 'apollo';
        const rps = service ? 1000 * share : floor ? (1000 * share) / floorShare : 1000;
        return JSON.stringify({ round: 1, case: c, server, rps, p99_ms: service ? 15 : floor ? 8 : 10, rss_peak_mb: service ? 190 : 100 });
      }),
    );
    const file = join(dir, `results-${share}-${floorShare}-${partial}.jsonl`);
    writeFileSync(file, `${rows.join('\n')}\n`);
    return execFileSync(process.execPath, [join(root, 'bench/compare/summarize.mjs'), file, ...(partial ? ['--partial'] : [])], { encoding: 'utf8' });
  }
  const ALL = {
    'cold-id-rest': ['raw', 'cold', 'koa'],
    'cold-id-gql': ['pgl', 'cold', 'apollo'],
    'cold-page': ['raw', 'pgl', 'cold', 'apollo'],
    'mixed-id-rest': ['raw', 'us', 'koa'],
    'mixed-page': ['raw', 'pgl', 'us', 'apollo'],
    'write-rest': ['raw', 'us', 'koa'],
    'write-gql': ['pgl', 'us', 'apollo'],
    'hot-id-rest': ['us'],
  };

  test('the Targets line: the thirteen targets of the kit, which are met, and the RSS peak', () => {
    const text = summary(ALL, 1.6);
    const targets = /^Targets: (.*)$/m.exec(text)![1];
    expect(targets.split('; ')).toEqual([
      'cold REST by id 1.60x raw (>= 0.65)',
      'cold GraphQL by id 1.60x PostGraphile (>= 1.05)',
      'cold page of 50 1.60x PostGraphile (>= 1.5)',
      'cold page of 50 1.60x raw (>= 0.7)',
      'mixed by id 1.60x raw (>= 0.6)',
      'mixed page of 50 1.60x PostGraphile (>= 1.5)',
      'writes REST 1.60x raw (>= 0.55)',
      'writes GraphQL 1.60x PostGraphile (>= 0.9)',
      "p99 cold REST by id 0.67x the anchor's p99 over ours (>= 0.5)",
      "p99 cold GraphQL by id 0.67x the anchor's p99 over ours (>= 0.5)",
      "p99 mixed by id 0.67x the anchor's p99 over ours (>= 0.5)",
      "p99 writes REST 0.67x the anchor's p99 over ours (>= 0.5)",
      "p99 writes GraphQL 0.67x the anchor's p99 over ours (>= 0.5)",
      'RSS peak 190 MB (<= 200)',
      'all met',
    ]);
    expect(summary(ALL, 0.6)).toMatch(/; 6 missed$/m);
    // A case missing from a full run is no target met: NaN, and missed.
    const { 'write-gql': _gone, ...withoutWrites } = ALL;
    expect(summary(withoutWrites, 1.6)).toMatch(/writes GraphQL NaNx PostGraphile \(>= 0\.9\);.*; 2 missed$/m); // at 0.6 of every anchor: 0.65, 1.05, 1.5 (twice), 0.7 and 0.9 are not met
    expect(text).toMatch(/^write-gql {5}pgl 1000 req\/s p99 10\.0 ms \| us 1600 req\/s p99 15\.0 ms \| apollo 1600 req\/s p99 8\.0 ms$/m);
  });

  test("the floors' shares; no Targets line for a partial run", () => {
    const partial = summary({ 'write-rest': ['raw', 'us'], 'write-gql': ['pgl', 'us', 'apollo'] }, 0.5, 0.8, true);
    expect(partial).not.toMatch(/Targets:/);
    expect(/^Floors: (.*)$/m.exec(partial)![1]).toBe('writes GraphQL 0.80x the Apollo floor (500 / 625 req/s; p99 15.0 / 8.0 ms)');
    expect(summary(ALL, 1, 0.75)).toMatch(
      /^Floors: cold REST by id 0\.75x the Koa floor .*; cold GraphQL by id 0\.75x the Apollo floor .*; cold page of 50 0\.75x the Apollo floor .*; mixed by id 0\.75x the Koa floor .*; mixed page of 50 0\.75x the Apollo floor .*; writes REST 0\.75x the Koa floor .*; writes GraphQL 0\.75x the Apollo floor /m,
    );
    expect(summary({ 'write-rest': ['raw', 'us'] }, 1, 1, true)).not.toMatch(/Floors:/);
  });

  test('the floor targets: the targets of the cases the floors ran, as the floors reach them', () => {
    // The service at 0.6 of every anchor, its floors at 0.6 / 0.75 = 0.8 of them (p99 8 ms, the anchors' 10).
    const reached = /^Floor targets: (.*)$/m.exec(summary(ALL, 0.6, 0.75))![1];
    expect(reached.split('; ')).toEqual([
      'cold REST by id 0.80x raw (>= 0.65)',
      'cold GraphQL by id 0.80x PostGraphile (>= 1.05)',
      'cold page of 50 0.80x PostGraphile (>= 1.5)',
      'cold page of 50 0.80x raw (>= 0.7)',
      'mixed by id 0.80x raw (>= 0.6)',
      'mixed page of 50 0.80x PostGraphile (>= 1.5)',
      'writes REST 0.80x raw (>= 0.55)',
      'writes GraphQL 0.80x PostGraphile (>= 0.9)',
      "p99 cold REST by id 1.25x the anchor's p99 over ours (>= 0.5)",
      "p99 cold GraphQL by id 1.25x the anchor's p99 over ours (>= 0.5)",
      "p99 mixed by id 1.25x the anchor's p99 over ours (>= 0.5)",
      "p99 writes REST 1.25x the anchor's p99 over ours (>= 0.5)",
      "p99 writes GraphQL 1.25x the anchor's p99 over ours (>= 0.5)",
    ]);
    // Only where the floor and the anchor both ran; none without floors.
    expect(/^Floor targets: (.*)$/m.exec(summary({ 'write-gql': ['pgl', 'us', 'apollo'] }, 0.5, 0.8, true))![1]).toBe(
      "writes GraphQL 0.63x PostGraphile (>= 0.9); p99 writes GraphQL 1.25x the anchor's p99 over ours (>= 0.5)",
    );
    expect(summary({ 'write-rest': ['raw', 'us'] }, 1, 1, true)).not.toMatch(/Floor targets:/);
  });
});
