import { recordRoutes } from '../http/record-routes.js';
import type { RouteSpec } from '../http/routes.js';
import type { TokenService } from './token.service.js';

/** /token/… and /apply/token/id/, and DELETE /token/?filter=… (bulk revoke). Token reads are never cached (they expire by the clock). */
export function tokenRoutes(tokens: TokenService, basePath: string): RouteSpec[] {
  return [
    ...recordRoutes({ path: '/token', basePath, service: tokens, applyPath: '/apply/token/id' }),
    {
      method: 'DELETE',
      path: '/token',
      permission: 'token:write',
      handle: async (ctx, caller, sql) => {
        ctx.body = await tokens.destroyMatching(caller, sql, ctx.query.filter);
      },
    },
  ];
}
