import v8 from 'node:v8';
import { isWorker, runPrimary } from './cluster.js';
import { ConfigError, loadConfig } from './config.js';
import { startService, type RunningService } from './server.js';
import { createLogger } from './observability/log.js';

/**
 * V8 flags the service sets on itself, through Node's public `v8.setFlagsFromString`, so that
 * every way of starting it gets them (npm start, `node dist/src/main.js`, a container's command)
 * with no restart; a value given on the command line or in NODE_OPTIONS wins. Both are flags V8
 * reads afresh at each collection. (Flags V8 reads only at start, such as the young generation's size,
 * are given where the process starts: package.json's `start`, the Dockerfile.)
 *
 * - `--heap-growing-percent=25`: how much the old generation may grow past what survived the last
 *   full collection. V8's default lets it grow up to 4× under an allocation-heavy load (a GraphQL
 *   page of 50 with its links took RSS from 150 to 290 MB; with 30 %, 166 MB). 25 since young
 *   objects are no longer pretenured (below), which kept more of them in the young generation: the
 *   benchmark's peak RSS was 202 MB at 30, 195 at 25, 189 at 20 (GraphQL by id 4 % slower at 20).
 * - `--no-allocation-site-pretenuring`: V8 allocates straight into the old generation the objects
 *   of a code site whose objects it once saw survive a young collection, and keeps doing so. Under
 *   load the first requests run slowly (cold code, 32 at once) and the request path's sites (the
 *   HTTP answer, pg's rows, Koa's context) were judged long-lived from them: every request then left
 *   ~4 KB in the old generation, young collections took 1.5–3.5 ms instead of 0.8 and a full one
 *   ran every second; a REST read's p99 was twice the bare Koa floor's. Without it (side by side,
 *   docs/benchmarks.md): a REST read's p99 17–19 → 9–10 ms and its CPU −7 to −10 %, a REST write's
 *   p99 −30 %; a GraphQL read unchanged; a page of 50 (whose objects do live for its ~70 ms) +5 % CPU.
 */
const V8_FLAGS: ReadonlyArray<{ name: string; set: string }> = [
  { name: 'heap-growing-percent', set: '--heap-growing-percent=25' },
  { name: 'allocation-site-pretenuring', set: '--no-allocation-site-pretenuring' },
];

function tuneHeap(): void {
  const args = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].map((arg) => arg.replace(/_/g, '-'));
  for (const { name, set } of V8_FLAGS) {
    if (!args.some((arg) => arg === `--${name}` || arg === `--no-${name}` || arg.startsWith(`--${name}=`))) v8.setFlagsFromString(set);
  }
}

/**
 * The entry point (`npm start`, `node dist/src/main.js`): runs the service until SIGTERM or SIGINT,
 * then stops gracefully and exits 0.
 */
async function main(): Promise<void> {
  tuneHeap();
  const config = loadConfig();
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  if (config.workers > 1 && !isWorker()) {
    const code = await runPrimary(config.workers, log);
    log.info('stopped', { workers: config.workers });
    log.flush();
    process.exit(code);
  }
  // Signals are taken from the first moment: one that arrives while the service is still starting
  // (migrating, say) stops it as soon as it has started, gracefully, instead of killing it midway.
  let service: RunningService | undefined;
  let signalled = false;
  const stop = () => {
    service!.stop().then(
      () => {
        log.flush();
        process.exit(0);
      },
      (err) => {
        log.error('stop failed', { error: (err as Error).name, message: (err as Error).message });
        log.flush();
        process.exit(1);
      },
    );
  };
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    log.info('stopping', { signal });
    if (service) stop();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  service = await startService(config, log, { stopRequested: () => signalled });
  if (service.firstToken) {
    // Printed once, on stdout, and never logged: it is the only way in on a new database.
    process.stdout.write(`\nNo token existed, so a first one with scope "*" was created. Keep it; it is not shown again:\n\n  ${service.firstToken}\n\n`);
  }
  // With WORKERS=n the primary says it once, for the group.
  if (!isWorker()) process.stdout.write(`User and token service listening on ${service.url} (${service.db.kind} database)\n`);
  if (signalled) stop();
}

main().catch((err: unknown) => {
  const message = err instanceof ConfigError ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
  process.stderr.write(`Could not start: ${message}\n`);
  process.exit(1);
});
