import { defineModule } from '../module/module.js';
import { startDispatcher } from './dispatcher.js';
import { webhookMetrics } from './metrics.js';
import { Migration20261210000000_webhooks } from './Migration20261210000000_webhooks.js';
import { rotateWebhookKeys } from './secret-rows.js';
import { webhookStanding } from './standing.js';
import { webhookResolvers } from './webhook.graphql.js';
import { webhookDeliveries, webhooks } from './webhook.resource.js';
import { webhookRoutes } from './webhook.routes.js';
import { webhookService } from './webhook.service.js';

/**
 * Connections of the webhook deliveries' own pool (per instance and worker): deliveries never wait
 * for a connection behind requests, nor requests behind them. Its commits do not wait for the disk:
 * a crash of PostgreSQL itself may undo the last positions stored, and those events are delivered
 * again (at least once holds; a crash of the service loses nothing either way).
 */
const WEBHOOK_CONNECTIONS = 3;

/**
 * Webhooks (docs/rest.md#webhooks): REST /webhook/… (the records, a new secret, replay, the delivery
 * history), GraphQL webhooks/webhook/… and `Webhook.deliveries`; scope `webhook`; counted. Its
 * secrets are sealed with the key ring (re-sealed by `npm run rotate-key`). Beside the requests, the
 * dispatcher delivers the events of the audit log to them (unless WEBHOOK_DELIVERY=false), with its
 * metrics in /metrics.
 */
export default defineModule({
  key: 'webhooks',
  records: [webhooks, webhookDeliveries],
  scope: 'webhook',
  migrations: [{ name: 'Migration20261210000000_webhooks', class: Migration20261210000000_webhooks }],
  service: (deps) => webhookService(deps.keyring, { allowPrivate: deps.config.webhooks.allowPrivate, auditResources: deps.auditResources }, deps),
  routes: (service, { basePath }) => webhookRoutes(service, basePath),
  graphql: (api) => webhookResolvers(api),
  start({ config, db, events, log, metrics: registry }) {
    const metrics = registry ? webhookMetrics(registry, () => webhookStanding(db.sql)) : null;
    if (!config.webhooks.deliver) return null;
    // Read from the instance's event source, on a pool of their own.
    return startDispatcher({
      sql: db.backgroundSql(WEBHOOK_CONNECTIONS, { relaxedCommits: true }),
      keyring: db.keyring,
      events,
      log,
      outage: db.outage,
      metrics,
      config: config.webhooks,
    });
  },
  async rotateKeys(sql, keyring) {
    const changed = await rotateWebhookKeys(sql, keyring);
    return changed > 0 ? `${changed} webhook secret${changed === 1 ? '' : 's'} re-encrypted with TOKEN_KEY.` : null;
  },
});
