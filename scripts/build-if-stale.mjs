// Builds (tsc) only when a source is newer than the last build, so `npm start`, `npm run token`
// and `npm run migrate` start about as fast as `node dist/src/main.js` once built. Sources: src/,
// the MikroORM config, the tsconfig files and package.json. The stamp is written after a
// successful build only. Hand-written: a build tool's watch/incremental modes answer a different
// question (tsc --incremental still type-checks the whole project, about 7 s here).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

const sources = ['src', 'mikro-orm.config.ts', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map((p) => join(root, p));
const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
if (built === 0 || Math.max(...sources.map(newest)) > built) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}
