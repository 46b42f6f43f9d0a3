import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { loadConfig, type Config } from '../../src/config.js';
import type { AnyModule } from '../../src/module/module.js';
import { startService, type RunningService } from '../../src/server.js';
import { createLogger } from '../../src/observability/log.js';
import type { SecretField } from '../../src/db/keyring.js';
import { userWithToken } from './users.js';

/**
 * Starts the real service (real Koa app over real HTTP) on a database of its own:
 * - with DATABASE_URL set, a new database on that PostgreSQL server, dropped afterwards;
 * - without it, the embedded PGlite database in a new temporary directory.
 */
export interface TestService {
  url: string;
  /** A token with scope "*" (BOOTSTRAP_TOKEN). */
  adminToken: string;
  running: RunningService;
  config: Config;
  /** Log lines the service wrote (the test logger keeps them to check what is never logged). */
  logLines: string[];
  /** Every SQL statement the service sent, in order (clear it to count a request's statements). */
  queries: string[];
  request(method: string, path: string, options?: RequestOptions): Promise<Reply>;
  /** POST /graphql with a query and variables (token as in request()). */
  graphql(query: string, variables?: Record<string, unknown>, options?: RequestOptions): Promise<Reply>;
  /** Runs SQL against the service's database, to check what a request did or did not change. */
  sql<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /**
   * Every row of every table and (unless `sequences: false`) where each id sequence stands: equal
   * before and after means nothing changed. An insert refused by a unique index still spends a
   * sequence value (PostgreSQL sequences are not transactional), hence the option.
   */
  snapshot(options?: { sequences?: boolean }): Promise<Record<string, unknown>>;
  /**
   * The keyed hash the service stores for a token secret (SPEC §9), to find its row with SQL:
   * `where access_token_hmac = ?` with `svc.hmac(value)`.
   */
  hmac(value: string, field?: 'accessToken' | 'refreshToken'): Buffer;
  /** The plain value of a stored ciphertext column (`access_token_cipher`, `refresh_token_cipher`). */
  open(sealed: Buffer, field?: SecretField): string;
  /** Inserts tokens of a user straight into the table (sealed with the service's key): many, fast. */
  insertTokens(userID: number, accessTokens: readonly string[]): Promise<void>;
  /** Creates a user and a token for it with the given scope; returns the access token. */
  tokenWith(scope: string, options?: { expireAt?: string | null }): Promise<string>;
  stop(): Promise<void>;
}

export interface RequestOptions {
  token?: string | null;
  body?: unknown;
  /** A body sent as-is (for malformed JSON, other media types). */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * A raw body as fetch takes it under both Node's and the DOM's types (Hive Gateway's types, which
 * test/graphql/routers.test.ts reads, bring in the DOM's, whose fetch does not take a Buffer).
 */
const fetchBody = (raw: string | Buffer): string | Uint8Array<ArrayBuffer> => (typeof raw === 'string' ? raw : new Uint8Array(raw));

const ADMIN_URL = process.env.DATABASE_URL;
/** The empty PGlite data directory of this run, when globalSetup made one. */
const TEMPLATE = process.env.UTS_TEST_PGLITE_TEMPLATE;

/** pg's own parsers, but dates, timestamps and intervals kept as the text PostgreSQL sends. */
const RAW_TYPES = new pg.TypeOverrides();
for (const oid of [pg.types.builtins.DATE, pg.types.builtins.TIMESTAMP, pg.types.builtins.TIMESTAMPTZ, pg.types.builtins.INTERVAL])
  RAW_TYPES.setTypeParser(oid, (value: string) => value);

/** Every table, with the key that orders its rows. */
const TABLES: Record<string, string> = {
  users: 'id',
  tokens: 'id',
  applications: 'id',
  roles: 'id',
  user_applications: 'user_id, application_id',
  user_roles: 'user_id, role_id',
  id_reservations: 'resource, id',
  live_counts: 'table_name',
  audit_events: 'id',
  // Not webhook_states nor webhook_deliveries: the dispatcher renews leases and records attempts on its own.
  webhooks: 'id',
  webhook_secrets: 'webhook_id, signs_until',
};

/**
 * A database of a test's own: with DATABASE_URL set, a new database on that server (`name`);
 * without it, a new temporary directory for the embedded database (`dataDir`). `env` points a
 * service at it; `drop` removes it.
 */
export interface TestDatabase {
  env: Record<string, string>;
  name?: string;
  dataDir?: string;
  drop(): Promise<void>;
}

export async function newTestDatabase(): Promise<TestDatabase> {
  if (ADMIN_URL) {
    const name = `uts_test_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    return {
      env: { DATABASE_URL: url.toString() },
      name,
      async drop() {
        const client = new pg.Client({ connectionString: ADMIN_URL });
        await client.connect();
        await client.query(`drop database if exists ${name} with (force)`);
        await client.end();
      },
    };
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'uts-test-'));
  // A copy of the empty data directory made once per run (test/support/global-setup.ts): PGlite
  // then skips initdb. Without it (a run that did not go through the set-up), PGlite runs initdb.
  if (TEMPLATE) await promisify(execFile)('cp', ['-a', `${TEMPLATE}/.`, dataDir]);
  return { env: { DATA_DIR: dataDir }, dataDir, drop: () => rm(dataDir, { recursive: true, force: true }) };
}

/** What a test may give the service besides its environment (src/server.ts's StartOptions). */
export interface TestServiceOptions {
  /** The service's modules, when not src/modules.ts's (a made-up module registered beside them). */
  modules?: readonly AnyModule[];
  /** The read cache's clock (busy.test.ts steps it by hand, one window at a time). */
  readCacheClock?: () => number;
}

export async function startTestService(env: Record<string, string> = {}, options: TestServiceOptions = {}): Promise<TestService> {
  const adminToken = `admin-${randomBytes(16).toString('hex')}`;
  const database = await newTestDatabase();
  const config = loadConfig({
    // Secrets at rest (SPEC §9): each test service its own key. `TOKEN_KEY: ''` in `env` leaves it
    // unset (the embedded database then makes its key file).
    TOKEN_KEY: randomBytes(32).toString('base64'),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    BOOTSTRAP_TOKEN: adminToken,
    DB_POOL_SIZE: '4',
    SHUTDOWN_TIMEOUT_MS: '2000',
    ...database.env,
    ...env,
  });
  const logLines: string[] = [];
  const queries: string[] = [];
  const running = await startService(
    config,
    createLogger(config.logLevel, (line) => logLines.push(line)),
    {
      onStatement: (sql) => queries.push(sql),
      modules: options.modules,
      readCacheClock: options.readCacheClock,
    },
  );
  const base = running.url + config.basePath;

  const service: TestService = {
    url: running.url,
    adminToken,
    running,
    config,
    logLines,
    queries,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
      const token = options.token === undefined ? adminToken : options.token;
      if (token !== null) headers.Authorization ??= `Bearer ${token}`;
      let body: string | Uint8Array<ArrayBuffer> | undefined;
      if (options.rawBody !== undefined) body = fetchBody(options.rawBody);
      else if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['Content-Type'] ??= 'application/json';
      }
      const response = await fetch(base + path, { method, headers, body });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = null;
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
    async graphql(query, variables, options = {}) {
      const response = await fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json',
          ...((options.token === undefined ? adminToken : options.token) !== null
            ? { Authorization: `Bearer ${options.token === undefined ? adminToken : options.token}` }
            : {}),
          ...options.headers,
        },
        body: options.rawBody === undefined ? JSON.stringify({ query, variables }) : fetchBody(options.rawBody),
      });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = null;
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
    async sql(text, params = []) {
      // The table's own values as pg reads them (bigints as text, dates as PostgreSQL writes them),
      // not the service's wire forms: on the service's pool, not counted among its statements.
      let n = 0;
      const result = await running.db.sql.pool.query({ text: text.replace(/\?/g, () => `$${++n}`), values: params as unknown[], types: RAW_TYPES });
      return result.rows as never;
    },
    async snapshot({ sequences = true } = {}) {
      const state: Record<string, unknown> = {};
      for (const [table, order] of Object.entries(TABLES)) {
        state[table] = await service.sql(`select * from ${table} order by ${order}`);
      }
      for (const table of sequences ? ['users', 'tokens', 'applications', 'roles'] : []) {
        state[`${table} sequence`] = await service.sql(`select pg_sequence_last_value(pg_get_serial_sequence(?, 'id')::regclass)::text as last`, [table]);
      }
      return state;
    },
    hmac: (value, field = 'accessToken') => running.db.keyring.hash(field, value),
    open: (sealed, field = 'accessToken') => running.db.keyring.open(field, sealed),
    async insertTokens(userID, accessTokens) {
      const keyring = running.db.keyring;
      for (let i = 0; i < accessTokens.length; i += 1000) {
        const chunk = accessTokens.slice(i, i + 1000);
        await service.sql(
          `insert into tokens (user_id, access_token_hmac, access_token_cipher, refresh_token_hmac, refresh_token_cipher) values ${chunk.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
          chunk.flatMap((value) => [
            userID,
            keyring.hash('accessToken', value),
            keyring.seal('accessToken', value),
            keyring.hash('refreshToken', ''),
            keyring.seal('refreshToken', ''),
          ]),
        );
      }
    },
    async tokenWith(scope, options = {}) {
      return (await userWithToken(service, scope, { expireAt: options.expireAt ?? null })).accessToken;
    },
    async stop() {
      await running.stop();
      await database.drop();
    },
  };
  return service;
}

/**
 * The service of the test file that called `useService`: one per file, shared by its tests and by
 * the support modules' helpers (they read it through this live binding).
 */
export let svc: TestService;

/** Starts this file's service before its tests and stops it after them. */
export function useService(env: Record<string, string> = {}, options: TestServiceOptions = {}): void {
  beforeAll(async () => {
    svc = await startTestService(env, options);
  });
  afterAll(async () => {
    await svc?.stop();
  });
}
