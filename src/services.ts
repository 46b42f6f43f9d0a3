import type { MikroORM } from '@mikro-orm/postgresql';
import { applicationService } from './applications/application.service.js';
import { auditService } from './audit/audit.service.js';
import { linkService } from './links/link.service.js';
import { roleService } from './roles/role.service.js';
import type { Keyring } from './tokens/secrets.js';
import { tokenService } from './tokens/token.service.js';
import { userService } from './users/user.service.js';

/** The service layer: one function per operation, shared by the REST routes and GraphQL. */
export function createServices(orm: MikroORM, keyring: Keyring) {
  return {
    users: userService(orm),
    tokens: tokenService(orm, keyring),
    applications: applicationService(orm),
    roles: roleService(orm),
    links: linkService(orm),
    audit: auditService(orm),
  };
}

export type Services = ReturnType<typeof createServices>;
