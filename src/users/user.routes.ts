import type Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { crudRoutes } from '../http/crud-routes.js';
import { sendUpdated } from '../http/respond.js';
import type { UserService } from './user.service.js';

/** /user/… and /apply/user/id/, plus the status setter the seed gives as PATCH and as PUT. */
export function userRoutes(users: UserService, basePath: string): Router<AppState> {
  const router = crudRoutes({ path: '/user', basePath, service: users, applyPath: '/apply/user/id' });
  router.register('/user/:id/status', ['PATCH', 'PUT'], async (ctx) => {
    sendUpdated(ctx, await users.updateStatus(ctx.state.caller, ctx.params.id, ctx.request.body));
  });
  return router;
}
