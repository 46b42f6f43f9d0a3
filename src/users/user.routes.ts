import { recordSchema, ref, writeOperation, writeSchema } from '../http/openapi-schemas.js';
import { recordRoutes } from '../http/record-routes.js';
import { sendUpdated } from '../http/presenter.js';
import type { ApiTag, RouteSpec } from '../http/routes.js';
import { parseId, parseWrite } from '../resource/input.js';
import { USER_STATUS_BODY, users as definition } from './user.resource.js';
import type { UserService } from './user.service.js';

const TAG: ApiTag = {
  name: 'users',
  description: 'User records (the seed’s User): create, read, update, patch, status, delete, restore, and reserving an id first.',
};

/** /user/… and /apply/user/id/, plus the status setter the seed gives as PATCH and as PUT. */
export function userRoutes(users: UserService, basePath: string): RouteSpec[] {
  const setStatus: RouteSpec['handle'] = async (ctx, caller, sql) => {
    const id = parseId(ctx.params.id);
    const { status } = parseWrite(USER_STATUS_BODY, ctx.request.body, 'create') as { status: number };
    sendUpdated(ctx, await users.updateStatus(caller, sql, id, status));
  };
  const statusDocs = (method: string) => ({
    tag: TAG,
    trailingSlash: true,
    summary: `Set a user’s status (${method})`,
    description:
      'Sets `status` (a 32-bit integer) and nothing else. The seed gives this call both as PATCH and as PUT, and both are served. ' +
      'Answers `1`, or the user with `Prefer: return=representation`; 404 when no live user has this id. Needs `user:write`.',
    operation: writeOperation(ref('UserStatus'), ref('User')),
    schemas: { UserStatus: writeSchema(USER_STATUS_BODY, 'create'), User: recordSchema(definition) },
  });
  return [
    ...recordRoutes({
      path: '/user',
      basePath,
      service: users,
      applyPath: '/apply/user/id',
      cacheable: true,
      tag: TAG,
      notes: {
        write: '`status` is a 32-bit integer, `ref` a safe integer; `password` and `rememberToken` are never written nor answered.',
        destroy: 'Its tokens (they stop authenticating at once) and its application and role links go with it.',
      },
    }),
    { method: 'PATCH', path: '/user/:id/status', permission: users.permissions.updateStatus, docs: statusDocs('PATCH'), handle: setStatus },
    { method: 'PUT', path: '/user/:id/status', permission: users.permissions.updateStatus, docs: statusDocs('PUT'), handle: setStatus },
  ];
}
