import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import type { Middleware } from 'koa';
import { methodNotAllowed } from './errors.js';
import type { AppContext, AppState } from './context.js';

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

/** The methods a page or a file is served for. */
const READ_METHODS = ['GET', 'HEAD'];

/**
 * Whether a request for a page or file of the service wants it (GET, HEAD); else it is answered
 * as on every other path: OPTIONS with 204 and `Allow`, another method with a 405.
 */
export function readsPage(ctx: AppContext): boolean {
  if (READ_METHODS.includes(ctx.method)) return true;
  if (ctx.method !== 'OPTIONS') throw methodNotAllowed(ctx.method, READ_METHODS);
  ctx.set('Allow', [...READ_METHODS, 'OPTIONS'].join(', '));
  ctx.status = 204;
  return false;
}

/** GET/HEAD of these paths answer these files (cached a day by the browser); other paths go on. */
export function serveFiles(files: Readonly<Record<string, StaticFile>>): Middleware<AppState> {
  // Not `async`: every request passes here, and all but these paths go straight on (no promise of its own).
  return function staticFiles(ctx, next) {
    const file = Object.hasOwn(files, ctx.path) ? files[ctx.path] : undefined;
    if (!file) return next();
    if (readsPage(ctx)) {
      ctx.type = file.type;
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.body = file.body;
    }
    return Promise.resolve();
  };
}
