import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import type { Middleware } from 'koa';
import type { AppState } from './context.js';

const require = createRequire(import.meta.url);

export interface StaticFile {
  type: string;
  body: Buffer;
}

/**
 * A file of an installed package, read once (at start). Packages' `exports` often leave out their
 * browser builds, so the file is read from the package's folder rather than resolved by name.
 */
export function packageFile(name: string, path: string, type: string): StaticFile {
  let dir = dirname(require.resolve(name));
  while (!dir.endsWith(`${sep}node_modules${sep}${name}`)) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the ${name} package`);
    dir = up;
  }
  return { type, body: readFileSync(join(dir, path)) };
}

/** GET/HEAD of these paths answer these files (cached a day by the browser); others go on. */
export function serveFiles(files: Readonly<Record<string, StaticFile>>): Middleware<AppState> {
  return async function staticFiles(ctx, next) {
    const file = ctx.method === 'GET' || ctx.method === 'HEAD' ? files[ctx.path] : undefined;
    if (!file) return next();
    ctx.type = file.type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = file.body;
  };
}
