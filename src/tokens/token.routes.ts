import type Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { crudRoutes } from '../http/crud-routes.js';
import type { TokenService } from './token.service.js';

/** /token/… and /apply/token/id/, and DELETE /token/?filter=… (bulk revoke). */
export function tokenRoutes(tokens: TokenService, basePath: string): Router<AppState> {
  const router = crudRoutes({ path: '/token', basePath, service: tokens, applyPath: '/apply/token/id' });
  router.delete('/token', async (ctx) => {
    ctx.body = await tokens.destroyMatching(ctx.state.caller, ctx.query.filter);
  });
  return router;
}
