import { defineModule } from '../module/module.js';
import { Migration20261210000000_webhooks } from './Migration20261210000000_webhooks.js';
import { webhookResolvers } from './webhook.graphql.js';
import { webhooks } from './webhook.resource.js';
import { webhookRoutes } from './webhook.routes.js';
import { webhookService } from './webhook.service.js';

/**
 * Webhooks (docs/rest.md#webhooks): REST /webhook/… (the records, a new secret, replay, the delivery
 * history), GraphQL webhooks/webhook/… and `Webhook.deliveries`; scope `webhook`; counted. Its
 * secrets are sealed with the key ring. The dispatcher that delivers to them is started by src/server.ts.
 */
export default defineModule({
  key: 'webhooks',
  records: [webhooks],
  scope: 'webhook',
  migrations: [{ name: 'Migration20261210000000_webhooks', class: Migration20261210000000_webhooks }],
  service: (deps) => webhookService(deps.keyring, { allowPrivate: deps.config.webhooks.allowPrivate }, deps),
  routes: (service, { basePath }) => webhookRoutes(service, basePath),
  graphql: (api) => webhookResolvers(api),
});
