import { namedResolver, namedTypes } from '../graphql/named.js';
import { defineModule } from '../module/module.js';
import { recordEvents } from '../realtime/realtime.graphql.js';
import { namedService } from '../resource/named.js';
import { roles } from './role.resource.js';
import { roleRoutes } from './role.routes.js';

/** Roles a user is linked to: REST /role/…, GraphQL roles/role/…, roleEvents; scope `role`. */
export default defineModule({
  key: 'roles',
  records: [roles],
  scope: 'role',
  entities: [roles],
  service: (deps) => namedService(roles, deps),
  routes: (service, { basePath }) => roleRoutes(service, basePath),
  graphql: (api) => [namedResolver(roles, api.service)],
  subscriptions: (api) =>
    recordEvents({ definition: roles, recordType: () => namedTypes(roles).Type, find: (ctx, caller, id) => api.service(ctx).find(caller, ctx.sql, id) }),
});
