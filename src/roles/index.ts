import { namedResolver } from '../graphql/named.js';
import { defineModule } from '../module/module.js';
import { namedService } from '../resource/named.js';
import { roles } from './role.resource.js';
import { roleRoutes } from './role.routes.js';

/** Roles a user is linked to: REST /role/…, GraphQL roles/role/…, roleEvents; scope `role`. */
export default defineModule({
  key: 'roles',
  records: [roles],
  scope: 'role',
  entities: [roles],
  service: () => namedService(roles),
  routes: (service, { basePath }) => roleRoutes(service, basePath),
  graphql: (api) => [namedResolver(roles, api.service)],
});
