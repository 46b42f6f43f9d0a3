import { recordRoutes } from '../http/record-routes.js';
import { sendUpdated } from '../http/presenter.js';
import type { RouteSpec } from '../http/routes.js';
import { parseId, parseWrite } from '../resource/input.js';
import { defineBody } from '../resource/resource.js';
import { field } from '../resource/field.js';
import type { UserService } from './user.service.js';

/** The body of the status setter: `{"status": n}`. */
export const USER_STATUS_BODY = defineBody({ status: field.int32({ required: true }) });

/** /user/… and /apply/user/id/, plus the status setter the seed gives as PATCH and as PUT. */
export function userRoutes(users: UserService, basePath: string): RouteSpec[] {
  const setStatus: RouteSpec['handle'] = async (ctx, caller, sql) => {
    const id = parseId(ctx.params.id);
    const { status } = parseWrite(USER_STATUS_BODY, ctx.request.body, 'create') as { status: number };
    sendUpdated(ctx, await users.updateStatus(caller, sql, id, status));
  };
  return [
    ...recordRoutes({ path: '/user', basePath, service: users, applyPath: '/apply/user/id', cacheable: true }),
    { method: 'PATCH', path: '/user/:id/status', permission: 'user:write', handle: setStatus },
    { method: 'PUT', path: '/user/:id/status', permission: 'user:write', handle: setStatus },
  ];
}
