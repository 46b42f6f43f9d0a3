import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Middleware } from 'koa';
import type { AppState } from './context.js';

const require = createRequire(import.meta.url);

/**
 * GET /docs: the OpenAPI document rendered by Swagger UI, served from the swagger-ui-dist package
 * (no CDN: it works without internet). Its two files are read once, at start.
 */
export function docsPage(): { page: Middleware<AppState>; assets: Middleware<AppState> } {
  const dist = dirname(require.resolve('swagger-ui-dist/package.json'));
  const files: Record<string, { type: string; body: Buffer }> = {
    '/docs/swagger-ui.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(dist, 'swagger-ui.css')) },
    '/docs/swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(dist, 'swagger-ui-bundle.js')) },
  };
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>User and token service: REST API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="docs"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#docs', deepLinking: true, persistAuthorization: true });
</script>
</body>
</html>
`;
  return {
    page: async (ctx) => {
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = html;
    },
    assets: async (ctx, next) => {
      const file = ctx.method === 'GET' || ctx.method === 'HEAD' ? files[ctx.path] : undefined;
      if (!file) return next();
      ctx.type = file.type;
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.body = file.body;
    },
  };
}

/** The service's version, from the package.json above this file (src/ in tests, dist/src/ when built). */
export function serviceVersion(): string {
  let dir = dirname(new URL(import.meta.url).pathname);
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    try {
      return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
    } catch {
      // not here: one level up
    }
  }
  return '0.0.0';
}
