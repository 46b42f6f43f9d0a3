import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type Options } from '@mikro-orm/postgresql';
import type { Dialect } from 'kysely';
import { applications } from './src/applications/application.resource.js';
import { auditEvents } from './src/audit/audit.resource.js';
import { migrations } from './src/db/migrations/index.js';
import { entitySchemaOf } from './src/resource/entity.js';
import { roles } from './src/roles/role.resource.js';
import { tokens } from './src/tokens/token.resource.js';
import { users } from './src/users/user.resource.js';
import { webhookDeliveries, webhooks } from './src/webhooks/webhook.resource.js';

/** The resources' entity schemas, derived from their definitions (src/resource/entity.ts). */
export const entities = [users, tokens, applications, roles, auditEvents, webhooks, webhookDeliveries].map(entitySchemaOf);

/**
 * The ORM's options: the service's own pool, handed over as a Kysely dialect (`dialect`; src/db/
 * database.ts), or for the MikroORM CLI a connection of its own to `clientUrl`.
 */
export function ormOptions(clientUrl: string, dialect?: Dialect): Options {
  return defineConfig({
    clientUrl,
    ...(dialect ? { driverOptions: dialect } : {}),
    entities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    // The service reads and writes rows itself (src/db/sql.ts); the ORM's entity manager is never
    // used for requests, so its global context must never collect state.
    allowGlobalContext: false,
    debug: false,
    discovery: { checkDuplicateTableNames: true },
  });
}

// For the MikroORM CLI (`npx mikro-orm …`) against DATABASE_URL.
export default ormOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
