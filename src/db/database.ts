import { MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { ormOptions, type QueryListener } from '../../mikro-orm.config.js';
import type { Config } from '../config.js';
import type { EmbeddedPostgres } from './embedded.js';

export interface Database {
  orm: MikroORM;
  /** 'external' when DATABASE_URL is set, else 'embedded' (PGlite under DATA_DIR). */
  kind: 'external' | 'embedded';
  /** Runs the pending migrations; returns the names it ran. */
  migrate(): Promise<string[]>;
  /** True when the database answers and no migration is pending. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
  /** The connection pool's counts (null before its first connection). */
  poolStats(): { size: number; idle: number; waiting: number; max: number } | null;
}

/**
 * Connects to DATABASE_URL, or starts the embedded database under DATA_DIR. `shareEmbedded` lets a
 * command-line tool reach an embedded database that a running service already holds.
 */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'poolSize'> & Partial<Pick<Config, 'lockTimeoutMs' | 'statementTimeoutMs'>>,
  options: { shareEmbedded?: boolean; onQuery?: QueryListener } = {},
): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let url = config.databaseUrl;
  if (!url) {
    // Loaded only when used: PGlite's code costs ~13 MB of memory a PostgreSQL deployment never needs.
    const { startEmbeddedPostgres } = await import('./embedded.js');
    embedded = await startEmbeddedPostgres(config.dataDir, config.poolSize + 2, options.shareEmbedded);
    url = embedded.url;
  }
  let orm: MikroORM;
  let pool: pg.Pool | undefined;
  try {
    orm = await MikroORM.init(
      ormOptions(url, {
        poolSize: config.poolSize,
        onQuery: options.onQuery,
        embedded: embedded !== undefined,
        lockTimeoutMs: config.lockTimeoutMs,
        statementTimeoutMs: config.statementTimeoutMs,
        onPool: (created) => {
          pool = created;
        },
      }),
    );
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  return {
    orm,
    kind: embedded ? 'embedded' : 'external',
    async migrate() {
      const done = await orm.migrator.up();
      return done.map((m) => m.name);
    },
    poolStats: () => (pool ? { size: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: config.poolSize } : null),
    async ready() {
      try {
        return (await orm.migrator.getPending()).length === 0;
      } catch {
        return false;
      }
    },
    async close() {
      await orm.close(true);
      await embedded?.stop();
    },
  };
}
