import { MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { ormOptions, type QueryListener } from '../../mikro-orm.config.js';
import type { Config } from '../config.js';
import type { EmbeddedPostgres } from './embedded.js';
import { NEW_DIRECTORY_VERSION } from './migrations/Migration20261202000000_directory_version.js';
import { DROP_PLAIN_TOKENS, TOKEN_SECRET_COLUMNS } from './migrations/index.js';
import { loadKeyring, type Keyring } from '../tokens/secrets.js';
import { checkTokenKeys, convertPlainTokens } from '../tokens/secret-rows.js';

export interface Database {
  orm: MikroORM;
  /** 'external' when DATABASE_URL is set, else 'embedded' (PGlite under DATA_DIR). */
  kind: 'external' | 'embedded';
  /** The keys that seal and match token secrets (TOKEN_KEY, TOKEN_KEY_PREVIOUS, or the key file). */
  keyring: Keyring;
  /**
   * Runs the pending migrations (converting plain tokens with the key between the two secrets
   * migrations), then checks that the key ring opens every stored token; returns the names it ran.
   * `converted` hears how many plain tokens were converted, when any were.
   */
  migrate(converted?: (count: number) => void): Promise<string[]>;
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
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'poolSize'> &
    Partial<Pick<Config, 'lockTimeoutMs' | 'statementTimeoutMs' | 'tokenKey' | 'tokenKeyPrevious'>>,
  options: { shareEmbedded?: boolean; onQuery?: QueryListener } = {},
): Promise<Database> {
  // Before anything starts: a missing or malformed key stops here, with nothing to clean up.
  const keyring = await loadKeyring(config);
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
    keyring,
    async migrate(converted) {
      const ran: string[] = [];
      // Plain tokens need the key to be converted, which SQL migrations never see: run the
      // migrations up to the one adding the new columns, convert with the key, then the rest
      // (the next one drops the plain columns; see Migration20261201000000_token_secret_columns).
      const pending = (await orm.migrator.getPending()).map((m) => m.name);
      if (pending.includes(DROP_PLAIN_TOKENS)) {
        if (pending.includes(TOKEN_SECRET_COLUMNS)) ran.push(...(await orm.migrator.up({ to: TOKEN_SECRET_COLUMNS })).map((m) => m.name));
        const count = await convertPlainTokens(orm, keyring);
        ran.push(...(await orm.migrator.up()).map((m) => m.name));
        if (count > 0) {
          // The plain values are gone from every live row version; the old versions stay in the
          // table's files until rewritten, so rewrite it once (a short exclusive lock).
          await orm.em.getConnection().execute('vacuum full tokens');
          converted?.(count);
        }
      } else {
        ran.push(...(await orm.migrator.up()).map((m) => m.name));
      }
      await checkTokenKeys(orm, keyring);
      // A migration may rewrite directory rows with DDL (no row trigger fires): answers cached by
      // instances still running the previous release must not outlive it.
      if (ran.length) await orm.em.getConnection().execute(`update directory_version set version = ${NEW_DIRECTORY_VERSION}`);
      return ran;
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
