import type { EntitySchema, MigrationObject } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type Options } from '@mikro-orm/postgresql';
import type { Dialect } from 'kysely';

/**
 * What the ORM knows of the database: the entities (the resources' definitions, src/resource/entity.ts)
 * and the migrations, in the order they run. Both come from the modules (src/module/registry.ts:
 * the core migrations of src/db/migrations/ and each module's own).
 */
export interface OrmSchema {
  entities: readonly EntitySchema[];
  migrations: readonly MigrationObject[];
}

/**
 * The ORM's options: the service's own pool, handed over as a Kysely dialect (`dialect`;
 * src/db/database.ts), or for the MikroORM CLI (mikro-orm.config.ts) a connection of its own to `clientUrl`.
 */
export function ormOptions(clientUrl: string, schema: OrmSchema, dialect?: Dialect): Options {
  return defineConfig({
    clientUrl,
    ...(dialect ? { driverOptions: dialect } : {}),
    entities: [...schema.entities],
    extensions: [Migrator],
    migrations: { migrationsList: [...schema.migrations], transactional: true, allOrNothing: true, snapshot: false, silent: true },
    // The service reads and writes rows itself (src/db/sql.ts); the ORM's entity manager is never
    // used for requests, so its global context must never collect state.
    allowGlobalContext: false,
    debug: false,
    discovery: { checkDuplicateTableNames: true },
  });
}
