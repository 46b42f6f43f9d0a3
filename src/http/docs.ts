import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Middleware } from 'koa';
import type { AppState } from './context.js';
import { packageFile, serveFiles } from './static-files.js';

/**
 * GET /docs: the OpenAPI document rendered by Swagger UI, served from the swagger-ui-dist package
 * (no CDN: it works without internet). Its two files are read once, at start.
 */
export function docsPage(): { page: Middleware<AppState>; assets: Middleware<AppState> } {
  const files = {
    '/docs/swagger-ui.css': packageFile('swagger-ui-dist', 'swagger-ui.css', 'text/css; charset=utf-8'),
    '/docs/swagger-ui-bundle.js': packageFile('swagger-ui-dist', 'swagger-ui-bundle.js', 'text/javascript; charset=utf-8'),
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
    assets: serveFiles(files),
  };
}

/**
 * The service's version and license, from the package.json above this file (src/ in tests,
 * dist/src/ when built).
 */
export function servicePackage(): { version: string; license: string } {
  let dir = dirname(new URL(import.meta.url).pathname);
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string; license?: string };
      return { version: pkg.version, license: pkg.license ?? 'UNLICENSED' };
    } catch {
      // not here: one level up
    }
  }
  return { version: '0.0.0', license: 'UNLICENSED' };
}
