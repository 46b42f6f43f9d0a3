import 'reflect-metadata';
import type pg from 'pg';
import { ReflectMetadataProvider } from '@mikro-orm/decorators/legacy';
import { Migrator } from '@mikro-orm/migrations';
import { DefaultLogger, type LogContext } from '@mikro-orm/core';
import { defineConfig, type Options } from '@mikro-orm/postgresql';
import { Application } from './src/applications/application.entity.js';
import { BoundParametersDriver } from './src/db/bound-parameters.js';
import { migrations } from './src/db/migrations/index.js';
import { POOL_ACQUIRE_TIMEOUT_MS, releaseClientsThatLoseTheirConnection } from './src/db/pool.js';
import { nameReadStatements } from './src/db/prepared.js';
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
export function ormOptions(
  clientUrl: string,
  options: {
    poolSize?: number;
    onQuery?: QueryListener;
    embedded?: boolean;
    lockTimeoutMs?: number;
    statementTimeoutMs?: number;
    /** Receives the connection pool once it exists (its counts feed /metrics). */
    onPool?: (pool: pg.Pool) => void;
  } = {},
): Options {
  const { poolSize = 10, onQuery, embedded = false, lockTimeoutMs = 0, statementTimeoutMs = 0 } = options;
  return defineConfig({
    clientUrl,
    // On PostgreSQL, values travel as bind parameters, never in the SQL text. The embedded PGlite is
    // one session behind a socket server that queues each protocol message on its own, so the
    // several messages of a parameterized statement from two connections would interleave there;
    // it gets MikroORM's own statements, with values escaped into the text.
    ...(embedded ? {} : { driver: BoundParametersDriver }),
    entities,
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    forceUtcTimezone: true,
    pool: { min: 0, max: poolSize },
    // Passed to the pg Pool: a wait for a free connection ends (as a 503), and a connection lost
    // while in use never stays checked out. On PostgreSQL every session also bounds its waits for
    // locks and its statements (sent in the startup message), so that a stuck transaction holds
    // neither requests nor pool connections for long; the embedded database is one session, in
    // which no lock is ever waited for.
    driverOptions: {
      connectionTimeoutMillis: POOL_ACQUIRE_TIMEOUT_MS,
      onPoolCreated: (pool: pg.Pool) => {
        releaseClientsThatLoseTheirConnection(pool);
        options.onPool?.(pool);
        // The embedded database gets its values escaped into the text (above): nothing to name.
        if (!embedded) nameReadStatements(pool);
      },
      ...(embedded ? {} : { lock_timeout: lockTimeoutMs, statement_timeout: statementTimeoutMs }),
    },
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
