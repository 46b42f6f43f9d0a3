import 'reflect-metadata';
import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import { DefaultLogger, type LogContext } from '@mikro-orm/core';
import { defineConfig, type Options } from '@mikro-orm/postgresql';
import { Application } from './src/applications/application.entity.js';
import { migrations } from './src/db/migrations/index.js';
import { UserApplication, UserRole } from './src/links/link.entities.js';
import { Role } from './src/roles/role.entity.js';
import { Token } from './src/tokens/token.entity.js';
import { User } from './src/users/user.entity.js';

export const entities = [User, Token, Application, Role, UserApplication, UserRole];

/** Receives every SQL statement the ORM sends (statement counts in tests and the benchmark). */
export type QueryListener = (sql: string) => void;

/**
 * The ORM options for one PostgreSQL server: the external one from DATABASE_URL, or the embedded
 * PGlite reached through its socket server. Same driver and same migrations either way.
 */
export function ormOptions(clientUrl: string, poolSize = 10, onQuery?: QueryListener): Options {
  return defineConfig({
    clientUrl,
    entities,
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    forceUtcTimezone: true,
    pool: { min: 0, max: poolSize },
    // Requests use their own fork of the EntityManager; the global one must never collect state.
    allowGlobalContext: false,
    debug: false,
    discovery: { checkDuplicateTableNames: true },
    ...(onQuery
      ? {
          loggerFactory: (options) =>
            new (class extends DefaultLogger {
              override logQuery(context: LogContext) {
                onQuery(context.query ?? '');
              }
            })(options),
        }
      : {}),
  });
}

// For the MikroORM CLI (`npx mikro-orm …`) against DATABASE_URL.
export default ormOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
