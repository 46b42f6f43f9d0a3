import { defineModule } from '../module/module.js';
import { linkEvents } from './link.events.js';
import { linkResolvers } from './link.graphql.js';
import { RELATIONS } from './link.resource.js';
import { linkRoutes } from './link.routes.js';
import { linkService } from './link.service.js';

/** A user's links to applications (with a `right`) and to roles: REST /user/{id}/application/… and /role/, GraphQL's nested lists and link mutations, linkEvents. */
export default defineModule({
  key: 'links',
  relations: RELATIONS,
  service: () => linkService(),
  routes: (service) => linkRoutes(service),
  graphql: (api) => linkResolvers(api),
  subscriptions: () => linkEvents(),
});
