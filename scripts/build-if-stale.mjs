// Builds (tsc) only when a source is newer than the last build, so `npm start`, `npm run token`
// and `npm run migrate` start about as fast as `node dist/src/main.js` once built (and run in the
// container image, which has dist/ and no sources). Sources: src/,
// the MikroORM config, the tsconfig files and package.json. The stamp is written after a
// successful build only, dated when the build started: a file edited while tsc ran is newer and
// gets built next time. Hand-written: a build tool's watch/incremental modes answer a different
// question (tsc --incremental still type-checks the whole project, about 7 s here).
//
//   node scripts/build-if-stale.mjs            build when stale
//   node scripts/build-if-stale.mjs --always   build (npm run build)
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.build-stamp');

function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

export function isStale() {
  // A copy of the built service without its sources (the container image: dist/ and the production
  // dependencies, no compiler) has nothing to build from: its dist/ is the build.
  if (!existsSync(join(root, 'src'))) return false;
  const sources = ['src', 'mikro-orm.config.ts', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map((p) => join(root, p));
  const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
  return built === 0 || Math.max(...sources.map(newest)) > built;
}

/**
 * Runs tsc; resolves true once built. A SIGTERM or SIGINT meanwhile stops tsc and resolves false
 * (nothing was started, so the caller can exit 0 without leaving a process behind).
 */
export function build() {
  const started = new Date();
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  let stopped = false;
  let child;
  const stop = () => {
    stopped = true;
    child.kill('SIGTERM');
  };
  // The handlers first: tsc is visible as a child as soon as it is forked, before spawn() returns,
  // and a signal then must stop it rather than end this process by the default action.
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  child = spawn(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      if (stopped) return resolve(false);
      if (code !== 0) return reject(new Error(`tsc exited with ${code}`));
      writeFileSync(stamp, `${started.toISOString()}\n`);
      utimesSync(stamp, started, started);
      resolve(true);
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const always = process.argv.includes('--always');
  if (always || isStale()) {
    build().then(
      (built) => process.exit(built ? 0 : 1),
      () => process.exit(1),
    );
  }
}
