import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';

/**
 * V8 heap settings for a long-running server, applied by the service's own entry point.
 *
 * V8's defaults suit a short program on a big machine: a young generation of up to 2 × 16 MB and
 * an old generation allowed to grow to about four times what it held after the last full
 * collection before it is collected again. Under load this service's live heap stays near 50 MB,
 * yet RSS climbed to 330–360 MB, nearly all of it garbage V8 had not yet collected. Measured on
 * the benchmark's four phases (../shared/bench/compare.sh), these two flags brought the peak to
 * about 180 MB at the same CPU per request:
 * - `--max-semi-space-size=8`: a young generation of up to 2 × 8 MB. Smaller semi-spaces (4 MB)
 *   saved another 10 MB but cost 10–20 % more CPU per request in collections.
 * - `--heap-growing-percent=30`: the old generation is collected once it is 30 % above what the
 *   last full collection left, instead of up to 300 %.
 *
 * V8 sizes the young generation when the process starts; no API changes it later. So the entry
 * point replaces its own process image once, before it loads anything (`process.execve`: the same
 * PID, the same stdio, signals still reach it), with these flags in front. A flag the operator
 * already gave (on the command line or in NODE_OPTIONS) is kept as given and not added;
 * `NODE_HEAP_TUNING=off` adds none.
 */
export const HEAP_FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=30'] as const;

/** The flags of HEAP_FLAGS this process was not started with (by name; the operator's value wins). */
export function missingHeapFlags(execArgv: readonly string[], nodeOptions = ''): string[] {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].map((arg) => arg.split('=')[0].replace(/_/g, '-'));
  return HEAP_FLAGS.filter((flag) => !given.includes(flag.split('=')[0]));
}

/**
 * Restarts this process in place with the heap flags it lacks, running `entry` (a module URL)
 * with the same arguments. Returns only when there is nothing to do: the flags are there, tuning
 * is off, or `process.execve` is unavailable (Node before 22.15, a worker thread, Windows).
 */
export function restartWithHeapFlags(entry: string): void {
  if (process.env.NODE_HEAP_TUNING === 'off' || !isMainThread || typeof process.execve !== 'function') return;
  const missing = missingHeapFlags(process.execArgv, process.env.NODE_OPTIONS);
  if (missing.length === 0) return;
  process.execve(process.execPath, [process.execPath, ...missing, ...process.execArgv, fileURLToPath(entry), ...process.argv.slice(2)], process.env);
}
