import { defineModule } from '../module/module.js';
import { auditResolver } from './audit.graphql.js';
import { auditEvents } from './audit.resource.js';
import { auditRoutes } from './audit.routes.js';
import { auditService } from './audit.service.js';

/** The audit log every write appends to: REST /audit/, GraphQL auditEvents; scope `audit`, read only. */
export default defineModule({
  key: 'audit',
  records: [auditEvents],
  scope: { name: 'audit', actions: ['read'] },
  service: () => auditService(),
  routes: (service) => auditRoutes(service),
  graphql: (api) => [auditResolver(api)],
});
