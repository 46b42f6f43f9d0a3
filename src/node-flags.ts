import { accessSync, constants } from 'node:fs';
import { url as inspectorUrl } from 'node:inspector';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { flag } from './config.js';

/**
 * The Node and V8 settings this service runs best with, applied by its own entry point. Each was
 * measured with the benchmark's four phases (../shared/bench/compare.sh) on this 2-core machine:
 *
 * - `--max-semi-space-size=8` and `--heap-growing-percent=30`: V8's defaults suit a short program
 *   on a big machine: a young generation of up to 2 × 16 MB, and an old generation allowed to grow
 *   to about four times what the last full collection left before it is collected again. Under
 *   load this service's live heap stays near 50 MB, yet RSS climbed to 330–360 MB, nearly all of it
 *   garbage not yet collected; with these two, about 180–190 MB at the same CPU per request.
 *   Smaller semi-spaces (4 MB) saved another 10 MB but cost 10–20 % more CPU in collections.
 * - `--experimental-async-context-frame` (the default from Node 24): AsyncLocalStorage, which
 *   MikroORM's transactions and the GraphQL mutation scope use, carried by V8's own context
 *   instead of async_hooks. Once any store is entered, the async_hooks version runs a hook on
 *   every promise and native handle of every request: 20–25 % of the CPU per request by id.
 *
 * V8 sizes its heap when the process starts, and the AsyncLocalStorage kind is chosen at boot; no
 * API changes either later. So the entry point replaces its own process image once, before it
 * loads anything (`process.execve`: the same PID, the same stdio, signals still reach it), with the
 * flags it lacks in front. A flag the operator already gave (on the command line, or in
 * NODE_OPTIONS for the two Node allows there) is kept as given; `NODE_TUNING=false` adds none.
 *
 * It does not restart where a new image would lose something: a process with an IPC channel
 * (started by `fork()`, a cluster worker, PM2, `node --watch`: Node takes the channel's variables out
 * of the environment at start) or one with a debugger's inspector open (its session would be cut).
 * Preloads (`--require`, `--import`) run in both images. A failed `execve` aborts the process rather
 * than throwing, so the executable is checked first.
 */
export const NODE_FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=30', '--experimental-async-context-frame'] as const;

/**
 * A flag's name: before any `=`, with V8's underscores spelt as dashes, and without `no-` (a flag
 * turned off is a flag given) or Node 24's spelling of the context-frame flag.
 */
const nameOf = (arg: string) =>
  arg
    .replace(/^["']|["']$/g, '')
    .split('=')[0]
    .replace(/_/g, '-')
    .replace(/^--no-/, '--')
    .replace(/^--async-context-frame$/, '--experimental-async-context-frame');

/**
 * The flags of NODE_FLAGS this process was not started with (by name: the operator's value wins),
 * among those this Node knows (`known`; Node 24 has no experimental flag for its default).
 */
export function missingNodeFlags(execArgv: readonly string[], nodeOptions = '', known: (flag: string) => boolean = () => true): string[] {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].map(nameOf));
  return NODE_FLAGS.filter((flag) => !given.has(nameOf(flag)) && known(flag));
}

/** Whether this Node accepts a flag: its V8 options are all accepted; its own, those it lists. */
const knownToNode = (flag: string) => !flag.startsWith('--experimental-') || process.allowedNodeEnvironmentFlags.has(flag);

/** Whether this process can be replaced by a new image without losing anything (see above). */
function restartable(): boolean {
  if (!isMainThread || typeof process.execve !== 'function') return false; // a worker; Node before 22.15; Windows
  if (process.channel || process.env.NODE_UNIQUE_ID !== undefined || inspectorUrl() !== undefined) return false;
  try {
    accessSync(process.execPath, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Restarts this process in place with the flags it lacks, running `entry` (a module URL) with the
 * same arguments. Returns when there is nothing to do: the flags are there, tuning is off, or the
 * process is not to be restarted (see above).
 */
export function restartWithNodeFlags(entry: string): void {
  if (!restartable()) return;
  try {
    // This setting alone: a start whose other settings are wrong stops in run.ts, restarted or not.
    if (!flag(process.env, 'NODE_TUNING', true)) return;
  } catch {
    return; // not true or false: the start stops with loadConfig's message (run.ts)
  }
  const missing = missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS, knownToNode);
  if (missing.length === 0) return;
  // restartable() checked that execve exists.
  process.execve!(process.execPath, [process.execPath, ...missing, ...process.execArgv, fileURLToPath(entry), ...process.argv.slice(2)], process.env);
}
