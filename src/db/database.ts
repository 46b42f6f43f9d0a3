import { MikroORM } from '@mikro-orm/postgresql';
import { PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../observability/log.js';
import { DatabaseOutage } from './outage.js';
import type { EmbeddedPostgres } from './embedded.js';
import { loadKeyring, type Keyring } from './keyring.js';
import { ormOptions, type OrmSchema } from './orm.js';
import { openReplicas, type ReadFloor, type ReplicaState } from './replicas.js';
import { PoolSql, typeParsers, type Sql, type StatementListener } from './sql.js';

const silentLog: Logger = { debug() {}, info() {}, warn() {}, error() {}, flush() {} };

/** How long a request waits for a free database connection before it is answered 503. */
export const POOL_ACQUIRE_TIMEOUT_MS = 10_000;

/** The startup lock's key (pg_advisory_xact_lock): "uts-strt" in ASCII. */
const STARTUP_LOCK = '8463516238783738484';

export interface Database {
  /** Every statement of the service: the pool, or a transaction on it (src/db/sql.ts). */
  sql: PoolSql;
  /** The ORM on the same pool: migrations and the entity metadata of the resources. */
  orm: MikroORM;
  /** 'external' when DATABASE_URL is set, else 'embedded' (PGlite under DATA_DIR). */
  kind: 'external' | 'embedded';
  /**
   * True when this process reached an embedded database that a running service holds (a
   * command-line tool): that service migrated it, and only the service's own statements are kept
   * from interleaving with others' (the ORM's are not), so a tool sharing it runs none of the ORM's.
   */
  shared: boolean;
  /** The keys that seal and match token secrets (TOKEN_KEY, TOKEN_KEY_PREVIOUS, or the key file). */
  keyring: Keyring;
  /**
   * Runs the pending migrations, and the modules' steps between them (tokens: converting plain
   * tokens with the key), then the modules' checks of what the migrations left (tokens: that the key
   * ring opens every stored token); returns the names it ran. `tell` hears what a step did, when it
   * did something (a sentence). Under the startup lock: of many instances starting at once, one
   * migrates and the others wait, then find nothing to do.
   */
  migrate(tell?: (note: string) => void): Promise<string[]>;
  /**
   * Runs `work` holding the startup lock, a PostgreSQL advisory lock that every instance (and
   * `npm run migrate`) takes for what must happen once however many start together: migrating,
   * creating the first token. A transaction-level lock, held by a connection of its own: it works
   * through a pooler in transaction mode too, and a crashed holder releases it with its session.
   * The embedded database has one process by construction: no lock there.
   */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
  /** Where an outage of this database starts and ends: one log line each, whichever part of the instance notices. */
  outage: DatabaseOutage;
  /** True when the database answers and no migration is pending. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
  /** The connection pool's counts. */
  poolStats(): { size: number; idle: number; waiting: number; max: number };
  /** Whether reads go to replicas: the token lookup then reads each request's floor. */
  readFloors: boolean;
  /** Where a read request's statements run: a replica past the caller's floor, else the primary (src/db/replicas.ts). */
  readerFor(caller: ReadFloor): Sql;
  /** The replicas, for /metrics. */
  replicaStates(): ReplicaState[];
  /**
   * A small pool of its own (at most `max` connections) for work in the background that must not
   * queue behind requests for the request pool's connections, nor make them queue (webhook
   * deliveries); the same settings as the request pool, closed with the database. The embedded
   * database has one connection: there it is the request pool's. Its statements are not reported
   * to `onStatement`, which hears the statements of requests. `relaxedCommits`: its commits do
   * not wait for the WAL to reach the disk (`synchronous_commit = off`, where the session allows
   * settings: not behind a pooler in transaction mode); a crash of PostgreSQL itself may then undo
   * its last fraction of a second of commits, whole transactions, never half of one: for work
   * that is done again when undone (a delivery's position: the event is delivered again).
   */
  backgroundSql(max: number, options?: { relaxedCommits?: boolean }): Sql;
}

/**
 * What a module does around the migrations with what only the service holds (its key ring), which
 * SQL migrations never see (src/module/module.ts: `database`).
 */
export interface MigrationHooks {
  /**
   * Steps between two migrations, each run when its `before` migration is pending, once the
   * migrations before that one have run. A step answers what to do once every migration has (a
   * table to rewrite), which answers what it did, for the log; or null when it did nothing.
   */
  steps?: readonly MigrationStep[];
  /** A check once every migration has run (each migrate): throws a ConfigError when the service must not serve. */
  onMigrated?(sql: Sql, keyring: Keyring): Promise<void>;
}

export interface MigrationStep {
  before: string;
  run(sql: PoolSql, keyring: Keyring): Promise<(() => Promise<string>) | null>;
}

/** What the database is made of: the ORM's entities and migrations, and the modules' hooks around the migrations. */
export interface DatabaseSchema extends OrmSchema {
  hooks: readonly MigrationHooks[];
}

export interface OpenOptions {
  /** The entities, migrations and hooks of the service's modules (src/module/registry.ts: databaseSchemaOf). */
  schema: DatabaseSchema;
  /** A command-line tool reaches an embedded database that a running service holds through that service. */
  shareEmbedded?: boolean;
  onStatement?: StatementListener;
  /** Where the replicas' state changes and the database's outages are told. */
  log?: Logger;
}

/**
 * The migrations not yet run, read without changing anything. The ORM's own `getPending()` creates
 * its migrations table when it is missing, which a service started with MIGRATE=false must not do:
 * it only reads (its role may have no right to create tables), and a new database stays untouched
 * until `npm run migrate`.
 */
async function pendingMigrations(sql: Sql, orm: MikroORM, migrations: DatabaseSchema['migrations']): Promise<string[]> {
  const table = orm.config.get('migrations').tableName ?? 'mikro_orm_migrations';
  const [{ exists }] = await sql.rows<{ exists: boolean }>('select to_regclass(?) is not null as exists', [table]);
  const done = exists ? new Set((await sql.rows<{ name: string }>(`select name from "${table}"`)).map((row) => row.name)) : new Set<string>();
  return migrations.map((m) => m.name).filter((name) => !done.has(name));
}

/**
 * Connects to DATABASE_URL, or starts the embedded database under DATA_DIR. One `pg` pool serves
 * everything: the service's statements (src/db/sql.ts) and, handed to MikroORM as its Kysely
 * dialect, the ORM's (migrations). The embedded database is one PostgreSQL session that runs one
 * statement at a time, so its pool has one connection.
 */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'poolSize'> &
    Partial<Pick<Config, 'lockTimeoutMs' | 'statementTimeoutMs' | 'tokenKey' | 'tokenKeyPrevious' | 'pooler' | 'databaseReadUrls' | 'replicaMaxLagMs'>>,
  options: OpenOptions,
): Promise<Database> {
  // Before anything starts: a missing or malformed key stops here, with nothing to clean up.
  const keyring = await loadKeyring(config);
  let embedded: EmbeddedPostgres | undefined;
  let url = config.databaseUrl;
  if (!url) {
    // Loaded only when used: PGlite's code costs ~13 MB of memory a PostgreSQL deployment never needs.
    const { startEmbeddedPostgres } = await import('./embedded.js');
    embedded = await startEmbeddedPostgres(config.dataDir, options.shareEmbedded);
    url = embedded.url;
  }
  const max = embedded ? 1 : config.poolSize;
  // Behind a pooler in transaction mode, a session has no state of its own: no startup parameters
  // (PgBouncer refuses them) and no named statements. The embedded database is one session that
  // the command-line tools share: no named statements there either (their names would collide).
  const session = !embedded && config.pooler !== 'transaction';
  const newPool = (size: number, relaxedCommits = false) => {
    const made = new pg.Pool({
      connectionString: url,
      ...(relaxedCommits && session ? { options: '-c synchronous_commit=off' } : {}),
      max: size,
      connectionTimeoutMillis: POOL_ACQUIRE_TIMEOUT_MS,
      types: typeParsers(),
      // Every session bounds its waits for locks and its statements, so that a stuck transaction
      // holds neither requests nor connections for long; the embedded database never waits for a lock.
      ...(session ? { lock_timeout: config.lockTimeoutMs || undefined, statement_timeout: config.statementTimeoutMs || undefined } : {}),
    });
    // A connection the server drops is reported as an 'error' event, fatal without a listener; the
    // statement in flight on it fails on its own (as a 503), and the pool discards the connection.
    made.on('error', () => {});
    made.on('connect', (client) => client.on('error', () => {}));
    return made;
  };
  const pool = newPool(max);
  const background: pg.Pool[] = [];
  // Behind a pooler in transaction mode the timeouts go with each transaction instead (statements
  // outside one are bounded by the database's or role's own settings: see the README).
  const timeouts = [
    config.lockTimeoutMs ? `set local lock_timeout = ${config.lockTimeoutMs}` : '',
    config.statementTimeoutMs ? `set local statement_timeout = ${config.statementTimeoutMs}` : '',
  ].filter(Boolean);
  const transactionSettings = !embedded && !session && timeouts.length ? timeouts.join('; ') : undefined;
  const sqlOptions = { namedStatements: session, onStatement: options.onStatement, wrapStatements: Boolean(embedded), transactionSettings };
  const sql = new PoolSql(pool, { ...sqlOptions, maxConnections: max });
  let orm: MikroORM;
  try {
    orm = await MikroORM.init(ormOptions(url, options.schema, new PostgresDialect({ pool })));
  } catch (err) {
    await pool.end().catch(() => {});
    await embedded?.stop();
    throw err;
  }
  const replicas = config.databaseReadUrls?.length
    ? openReplicas(
        config.databaseReadUrls,
        { sql, pool },
        {
          poolSize: config.poolSize,
          maxLagMs: config.replicaMaxLagMs ?? 2_000,
          log: options.log ?? silentLog,
          onStatement: options.onStatement,
          statementTimeoutMs: config.statementTimeoutMs,
        },
      )
    : null;
  const exclusive = async <T>(work: () => Promise<T>): Promise<T> => {
    if (embedded) return work();
    // A connection apart from the pool: migrations need the pool's, however small it is.
    const lock = new pg.Client({ connectionString: url });
    lock.on('error', () => {});
    await lock.connect();
    try {
      await lock.query('begin');
      await lock.query(`select pg_advisory_xact_lock(${STARTUP_LOCK})`);
      return await work();
    } finally {
      await lock.query('commit').catch(() => {});
      await lock.end().catch(() => {});
    }
  };
  return {
    sql,
    orm,
    kind: embedded ? 'embedded' : 'external',
    shared: embedded ? !embedded.owned : false,
    keyring,
    outage: new DatabaseOutage(options.log ?? silentLog),
    exclusive,
    migrate: (tell) => exclusive(() => migrate(orm, sql, keyring, options.schema.hooks, tell)),
    poolStats: () => ({ size: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max }),
    readFloors: replicas !== null,
    readerFor: (caller) => replicas?.readerFor(caller) ?? sql,
    replicaStates: () => replicas?.states() ?? [],
    backgroundSql(size, backgroundOptions = {}) {
      // Its statements are no request's: the statement listener (tests counting a request's
      // statements) does not hear them.
      const quiet = { ...sqlOptions, onStatement: undefined };
      if (embedded) return new PoolSql(pool, { ...quiet, maxConnections: max });
      const made = newPool(size, backgroundOptions.relaxedCommits);
      background.push(made);
      return new PoolSql(made, { ...quiet, maxConnections: size });
    },
    async ready() {
      try {
        return (await pendingMigrations(sql, orm, options.schema.migrations)).length === 0;
      } catch {
        return false;
      }
    },
    async close() {
      await replicas?.close();
      await Promise.all(background.map((p) => p.end().catch(() => {})));
      await orm.close(true);
      // The ORM's Kysely instance ends the pool it was given only if it ever ran a statement on it
      // (Kysely takes the pool on first use): a command-line tool that shares a running service's
      // embedded database runs none, and its connection then kept the process alive until pg's
      // idle timeout closed it, 10 s after the tool was done.
      if (!pool.ending) await pool.end();
      await embedded?.stop();
    },
  };
}

/**
 * The pending migrations, with the modules' steps between them (each before its migration, once the
 * migrations before that one ran), then what the steps left for the end and the modules' checks.
 */
async function migrate(orm: MikroORM, sql: PoolSql, keyring: Keyring, hooks: readonly MigrationHooks[], tell?: (note: string) => void): Promise<string[]> {
  const ran: string[] = [];
  const pending = (await orm.migrator.getPending()).map((m) => m.name);
  const steps = hooks.flatMap((h) => h.steps ?? []).filter((step) => pending.includes(step.before));
  steps.sort((a, b) => pending.indexOf(a.before) - pending.indexOf(b.before));
  const atTheEnd: (() => Promise<string>)[] = [];
  for (const step of steps) {
    const before = pending.slice(0, pending.indexOf(step.before)).filter((name) => !ran.includes(name));
    if (before.length) ran.push(...(await orm.migrator.up({ to: before.at(-1) })).map((m) => m.name));
    const last = await step.run(sql, keyring);
    if (last) atTheEnd.push(last);
  }
  ran.push(...(await orm.migrator.up()).map((m) => m.name));
  for (const last of atTheEnd) tell?.(await last());
  for (const hook of hooks) await hook.onMigrated?.(sql, keyring);
  return ran;
}
