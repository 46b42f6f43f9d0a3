import { defineModule } from '../module/module.js';
import { recordEvents } from '../realtime/realtime.graphql.js';
import { userResolver, userTypes } from './user.graphql.js';
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
  subscriptions: (api) =>
    recordEvents({ definition: users, recordType: () => userTypes().Type, find: (ctx, caller, id) => api.service(ctx).find(caller, ctx.sql, id) }),
});
