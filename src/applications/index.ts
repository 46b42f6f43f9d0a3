import { namedResolver, namedTypes } from '../graphql/named.js';
import { defineModule } from '../module/module.js';
import { recordEvents } from '../realtime/realtime.graphql.js';
import { namedService } from '../resource/named.js';
import { applications } from './application.resource.js';
import { applicationRoutes } from './application.routes.js';

/** Applications a user is linked to: REST /application/…, GraphQL applications/application/…, applicationEvents; scope `application`. */
export default defineModule({
  key: 'applications',
  records: [applications],
  scope: 'application',
  entities: [applications],
  service: (deps) => namedService(applications, deps),
  routes: (service, { basePath }) => applicationRoutes(service, basePath),
  graphql: (api) => [namedResolver(applications, api.service)],
  subscriptions: (api) =>
    recordEvents({
      definition: applications,
      recordType: () => namedTypes(applications).Type,
      find: (ctx, caller, id) => api.service(ctx).find(caller, ctx.sql, id),
    }),
});
