import { applications } from './applications/application.resource.js';
import { auditService } from './audit/audit.service.js';
import { linkService } from './links/link.service.js';
import { namedService } from './resource/named.js';
import { roles } from './roles/role.resource.js';
import type { Keyring } from './tokens/secrets.js';
import { tokenService } from './tokens/token.service.js';
import { userService } from './users/user.service.js';
import { webhookService } from './webhooks/webhook.service.js';

/** The service layer: one function per operation, shared by the REST routes, GraphQL and the command-line tools. */
export function createServices(keyring: Keyring, options: { webhooks?: { allowPrivate: boolean } } = {}) {
  return {
    users: userService(),
    tokens: tokenService(keyring),
    applications: namedService(applications),
    roles: namedService(roles),
    links: linkService(),
    audit: auditService(),
    webhooks: webhookService(keyring, { allowPrivate: options.webhooks?.allowPrivate ?? false }),
  };
}

export type Services = ReturnType<typeof createServices>;
