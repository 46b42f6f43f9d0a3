// Bytes a request allocates, by function: V8's sampling heap profiler through node:inspector (its
// public protocol), keeping the samples of objects the collector has already freed, so that every
// allocation counts, not only what survives. Loaded into a server with `--import`, it starts
// sampling at the first SIGUSR2 and writes the profile at the next one (bench/allocations.sh does
// both around a wrk run, then `summarize` below prints the figures). No part of the service.
import fs from 'node:fs';
import inspector from 'node:inspector';
import v8 from 'node:v8';
import vm from 'node:vm';

const OUT = process.env.ALLOCATION_PROFILE ?? `allocations-${process.pid}.heapprofile`;
/** One sample per this many bytes on average: small enough for a request's ~40 KB to be seen in detail. */
const SAMPLING_INTERVAL = 256;

const survivors = process.env.ALLOCATION_SURVIVORS === '1';
// With survivors only, the young generation is collected before the profile is taken: what is
// dead in it but not yet collected would count as surviving otherwise (up to its 16 MiB).
const minorGc = survivors ? (v8.setFlagsFromString('--expose-gc'), vm.runInNewContext('gc')) : null;

const runAsScript = process.argv[1] === new URL(import.meta.url).pathname;

if (!runAsScript) {
  const session = new inspector.Session();
  session.connect();
  let sampling = false;
  process.on('SIGUSR2', () => {
    sampling = !sampling;
    if (sampling) {
      session.post('HeapProfiler.startSampling', {
        samplingInterval: SAMPLING_INTERVAL,
        includeObjectsCollectedByMajorGC: true,
        // ALLOCATION_SURVIVORS=1: only what outlived the young generation (promoted, then freed by a
        // full collection or still alive): what makes the old generation grow and full collections come.
        includeObjectsCollectedByMinorGC: !survivors,
      });
      return;
    }
    minorGc?.({ type: 'minor' });
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (err) process.stderr.write(`allocation sampler: ${err.message}\n`);
      else {
        // Written beside it, then renamed: whoever waits for the file finds it whole.
        fs.writeFileSync(`${OUT}.part`, JSON.stringify(result.profile));
        fs.renameSync(`${OUT}.part`, OUT);
      }
    });
  });
}

const where = (frame) =>
  `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, '')}:${frame.lineNumber + 1}`;
const packageOf = (url) => {
  if (!url) return '(native)';
  if (url.startsWith('node:')) return 'node:*';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  return url.includes('/dist/src/') ? 'project src/' : url;
};

/** `node bench/allocation-sampler.mjs <profile> <requests> [top]`: bytes a request, by package, by function, by the nearest project frame. */
function summarize(file, requests, top) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const tally = { package: new Map(), function: new Map(), project: new Map() };
  const add = (map, key, bytes) => map.set(key, (map.get(key) ?? 0) + bytes);
  let total = 0;
  const walk = (node, nearestProject) => {
    const here = where(node.callFrame);
    const project = node.callFrame.url.includes('/dist/src/') ? here : nearestProject;
    total += node.selfSize;
    add(tally.package, packageOf(node.callFrame.url), node.selfSize);
    add(tally.function, here, node.selfSize);
    add(tally.project, project, node.selfSize);
    for (const child of node.children) walk(child, project);
  };
  walk(profile.head, '(no project frame on the stack)');
  const perRequest = (bytes) => String(Math.round(bytes / requests)).padStart(7);
  console.log(`${perRequest(total)} bytes a request in all (${requests} requests)`);
  for (const [title, map] of [
    ['by package (self)', tally.package],
    ['by function (self)', tally.function],
    ['by the nearest project function on the stack', tally.project],
  ]) {
    console.log(`\n${title}:`);
    for (const [key, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${perRequest(bytes)}  ${key}`);
  }
}

if (runAsScript) {
  const [file, requests, top = '25'] = process.argv.slice(2);
  if (!file || !Number(requests)) {
    console.error('usage: node bench/allocation-sampler.mjs <profile> <requests> [top]');
    process.exit(2);
  }
  summarize(file, Number(requests), Number(top));
}
