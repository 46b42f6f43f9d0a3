import { defineModule } from '../module/module.js';
import { auditResolver } from './audit.graphql.js';
import { auditEvents } from './audit.resource.js';
import { auditRoutes } from './audit.routes.js';
import { auditService } from './audit.service.js';

/** The audit log every write appends to: REST /audit/, GraphQL auditEvents; scope `audit`, read only. */
export default defineModule({
  key: 'audit',
  records: [auditEvents],
  // The log records no events of its own: its record is no audit resource.
  auditResources: [],
  scope: { name: 'audit', actions: ['read'] },
  service: () => auditService(),
  routes: (service) => auditRoutes(service),
  graphql: (api) => [auditResolver(api)],
});
