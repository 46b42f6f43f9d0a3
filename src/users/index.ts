import { defineModule } from '../module/module.js';
import { userResolver } from './user.graphql.js';
import { users } from './user.resource.js';
import { userRoutes } from './user.routes.js';
import { userService } from './user.service.js';

/** Users (the seed's User): REST /user/…, GraphQL users/user/…, userEvents; scope `user`. */
export default defineModule({
  key: 'users',
  records: [users],
  scope: 'user',
  entities: [users],
  service: (deps) => userService(deps),
  routes: (service, { basePath }) => userRoutes(service, basePath),
  graphql: (api) => [userResolver(api)],
});
