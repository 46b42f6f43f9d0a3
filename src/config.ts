import { availableParallelism } from 'node:os';

/**
 * Service configuration, read once from the environment. Every setting has a safe default so that
 * `npm start` works with no environment at all (embedded database under ./data).
 */
export interface Config {
  host: string;
  port: number;
  /** Prefix for every REST path, '' or '/something' (no trailing slash). */
  basePath: string;
  /** External PostgreSQL; when absent the embedded PGlite database under `dataDir` is used. */
  databaseUrl: string | undefined;
  dataDir: string;
  poolSize: number;
  /**
   * DATABASE_POOLER: `transaction` when DATABASE_URL points at a pooler in transaction mode
   * (PgBouncer): no named statements and no session settings. Else `session` (the default).
   */
  pooler: 'session' | 'transaction';
  /** DATABASE_READ_URLS: streaming replicas that serve reads (docs/operations.md#many-instances-workers-replicas-poolers); empty: every read on the primary. */
  databaseReadUrls: readonly string[];
  /** REPLICA_MAX_LAG_MS: a replica further behind than this is skipped (reads fall back to the primary). */
  replicaMaxLagMs: number;
  /** MIGRATE: run pending migrations at start (under an advisory lock: one instance migrates, the others wait). */
  migrate: boolean;
  /** WORKERS: processes serving one port (node:cluster); 1 runs the service in this process. */
  workers: number;
  /** SHUTDOWN_DRAIN_MS: on SIGTERM, /readyz answers 503 this long while requests are still served. */
  shutdownDrainMs: number;
  /** How long a statement may wait for a row or table lock (0: no limit) before it fails as a 409. */
  lockTimeoutMs: number;
  /** How long a statement may run (0: no limit) before PostgreSQL cancels it, answered as a 503. */
  statementTimeoutMs: number;
  bootstrapToken: string | undefined;
  production: boolean;
  /** Introspection and Apollo Sandbox on GET /graphql: on outside production, else GRAPHQL_INTROSPECTION=true. */
  graphqlIntrospection: boolean;
  /**
   * GRAPHQL_TRUSTED_DOCUMENTS: the file listing the operations clients may run (docs/graphql.md#trusted-documents);
   * undefined: any operation runs, and automatic persisted queries work as Apollo Server's.
   */
  graphqlTrustedDocuments: string | undefined;
  /** GRAPHQL_TRUSTED_DOCUMENTS_MODE: `enforce` (the default) refuses what is not listed; `log` runs it, logs and counts it. */
  graphqlTrustedDocumentsMode: 'enforce' | 'log';
  /**
   * GRAPHQL_FEDERATION: /graphql serves the schema as an Apollo Federation 2 subgraph (`_service`,
   * `_entities`, entities keyed by id; docs/graphql.md#behind-a-router). Off: schema.graphql as it is.
   */
  graphqlFederation: boolean;
  logLevel: LogLevel;
  /** LOG_FORMAT: one JSON line per event (json), or readable lines for a person (pretty); unset, pretty when stderr is a terminal. */
  logFormat: 'json' | 'pretty';
  /** How long a graceful stop waits for in-flight requests before closing anyway. */
  shutdownTimeoutMs: number;
  /** Origins a browser app may call from (CORS_ORIGINS): a list, `*` for any, or null for no CORS at all. */
  corsOrigins: readonly string[] | '*' | null;
  /** GET /metrics in Prometheus format (METRICS, on unless false). */
  metrics: boolean;
  /** SUBSCRIPTIONS_MAX: open subscription connections (WebSocket and SSE together) per instance. */
  subscriptionsMax: number;
  /**
   * SUBSCRIPTIONS_WAITING_PER_ADDRESS and SUBSCRIPTIONS_WAITING: WebSocket connections that may wait
   * for their connection_init at once, from one client address and in all. A socket holds one of
   * SUBSCRIPTIONS_MAX places only once its token is accepted; until then it holds one of these.
   */
  subscriptionsWaitingPerAddress: number;
  subscriptionsWaiting: number;
  /** SUBSCRIPTIONS_INIT_TIMEOUT_MS: how long a WebSocket may wait before its connection_init (then 4408). */
  subscriptionsInitTimeoutMs: number;
  /** READ_CACHE_MB: memory for answers of cacheable reads, served while nothing was written (0: off). */
  readCacheMb: number;
  /**
   * READ_CACHE_ASIDE_WRITES: how many times a second the database's snapshot may move (writes
   * committed) before the read cache stands aside (src/read-cache/store.ts).
   */
  readCacheAsideWrites: number;
  /** TOKEN_KEY: seals and hashes token secrets (required with DATABASE_URL; else the key file in DATA_DIR). */
  tokenKey: Buffer | undefined;
  /** TOKEN_KEY_PREVIOUS: still opens and matches tokens until `npm run rotate-key` re-encrypts them. */
  tokenKeyPrevious: Buffer | undefined;
  /** Webhooks (docs/operations.md#webhooks): delivery settings. */
  webhooks: WebhookConfig;
}

export interface WebhookConfig {
  /** WEBHOOK_DELIVERY: this instance delivers (default true); false serves the API only, others deliver. */
  deliver: boolean;
  /** WEBHOOK_ALLOW_PRIVATE: loopback, private, link-local and multicast destinations allowed (tests, development). */
  allowPrivate: boolean;
  /** WEBHOOK_RETRY_HOURS: how long an event is retried before its endpoint is disabled. */
  retryMs: number;
  /** WEBHOOK_RETRY_SCHEDULE: the delays between attempts, in ms; the last one repeats. */
  retrySchedule: readonly number[];
  /** WEBHOOK_LOG_DAYS: how long delivery attempts are kept. */
  logDays: number;
  /** WEBHOOK_TIMEOUT_MS: longest attempt, connection to body read (at most 10 s). */
  timeoutMs: number;
  /** WEBHOOK_LEASE_MS: how long an instance holds an endpoint without renewing (a killed instance's endpoints wait this long). */
  leaseMs: number;
  /** WEBHOOK_POLL_MS: how often an instance looks for endpoints to take and renews what it holds. */
  pollMs: number;
  /** WEBHOOK_YIELD_MS: how long each delivery waits while the instance is busy (src/webhooks/yielding.ts); 0 (the default): never. */
  yieldMs: number;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** WEBHOOK_RETRY_SCHEDULE: comma-separated durations (`5s,30s,2m,10m,1h`; units ms, s, m, h). */
function retrySchedule(raw: string | undefined): number[] {
  const text = (raw ?? '').trim() || '5s,30s,2m,10m,1h';
  return text.split(',').map((part) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(part.trim());
    const ms = match ? Math.round(Number(match[1]) * DURATION_UNITS[match[2]]) : NaN;
    if (!Number.isFinite(ms) || ms < 1 || ms > 86_400_000) {
      throw new ConfigError(`WEBHOOK_RETRY_SCHEDULE must list durations such as "5s,30s,2m,10m,1h" (units ms, s, m, h; 1 ms to 24 h each), got "${raw}"`);
    }
    return ms;
  });
}

/** A positive number of hours (decimals allowed: 0.5 is half an hour). */
function hours(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || value <= 0 || value > max)
    throw new ConfigError(`${name} must be a number of hours above 0 and at most ${max}, got "${env[name]}"`);
  return value;
}

function webhookConfig(env: NodeJS.ProcessEnv): WebhookConfig {
  return {
    deliver: flag(env, 'WEBHOOK_DELIVERY', true),
    allowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    retryMs: Math.round(hours(env, 'WEBHOOK_RETRY_HOURS', 24, 24 * 30) * 3_600_000),
    retrySchedule: retrySchedule(env.WEBHOOK_RETRY_SCHEDULE),
    logDays: integer(env, 'WEBHOOK_LOG_DAYS', 7, 1, 3650),
    timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 10_000),
    leaseMs: integer(env, 'WEBHOOK_LEASE_MS', 30_000, 1_000, 600_000),
    pollMs: integer(env, 'WEBHOOK_POLL_MS', 1_000, 10, 60_000),
    yieldMs: integer(env, 'WEBHOOK_YIELD_MS', 0, 0, 1_000),
  };
}

/** A token key's length (docs/operations.md#secrets-at-rest: 32 bytes, base64). */
export const KEY_BYTES = 32;

/**
 * A key from the environment: 32 bytes in base64 (standard or URL-safe alphabet, padding optional).
 * The message never repeats the value.
 */
export function parseKey(name: string, raw: string | undefined): Buffer | undefined {
  const text = raw?.trim();
  if (!text) return undefined;
  const hint = `generate one with: openssl rand -base64 ${KEY_BYTES}`;
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text))
    throw new ConfigError(`${name} must be ${KEY_BYTES} bytes in base64, and it has characters that are not base64 (${hint})`);
  const key = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (key.length !== KEY_BYTES)
    throw new ConfigError(`${name} must be ${KEY_BYTES} bytes in base64 (44 characters), but it decodes to ${key.length} bytes (${hint})`);
  return key;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

/** LOG_FORMAT: `json` or `pretty`; unset, pretty lines for a person at a terminal, JSON for anything else (a file, a pipe, a log collector). */
function logFormat(raw: string | undefined, terminal: boolean): Config['logFormat'] {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '') return terminal ? 'pretty' : 'json';
  if (value === 'json') return 'json';
  if (value === 'pretty') return 'pretty';
  throw new ConfigError(`LOG_FORMAT must be json or pretty, got "${raw}"`);
}

/** CORS_ORIGINS: `*`, or comma-separated origins (`https://app.example.com, http://localhost:5173`). */
function corsOrigins(raw: string | undefined): Config['corsOrigins'] {
  const trimmed = (raw ?? '').trim();
  if (trimmed === '') return null;
  if (trimmed === '*') return '*';
  const origins = trimmed
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    // An origin is scheme://host[:port], exactly as a browser sends it in the Origin header.
    if (!parsed || parsed.origin !== origin) {
      throw new ConfigError(`CORS_ORIGINS must list origins such as "https://app.example.com" (scheme, host, optional port), or be "*"; got "${origin}"`);
    }
  }
  return origins;
}

function trustedDocumentsMode(raw: string | undefined): Config['graphqlTrustedDocumentsMode'] {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '' || value === 'enforce') return 'enforce';
  if (value === 'log') return 'log';
  throw new ConfigError(`GRAPHQL_TRUSTED_DOCUMENTS_MODE must be enforce or log, got "${raw}"`);
}

function pooler(raw: string | undefined): Config['pooler'] {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '' || value === 'session') return 'session';
  if (value === 'transaction') return 'transaction';
  throw new ConfigError(`DATABASE_POOLER must be session or transaction, got "${raw}"`);
}

const postgresUrl = (name: string, raw: string): string => {
  if (!/^postgres(ql)?:\/\//.test(raw)) throw new ConfigError(`${name} must start with postgres:// or postgresql://`);
  return raw;
};

/** DATABASE_READ_URLS: comma-separated PostgreSQL URLs. */
function readUrls(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean)
    .map((url) => postgresUrl('DATABASE_READ_URLS', url));
}

/** WORKERS: a count, or `auto` (one per CPU the process may use). */
function workers(raw: string | undefined): number {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '') return 1;
  if (value === 'auto') return Math.max(1, availableParallelism());
  return integer({ WORKERS: value }, 'WORKERS', 1, 1, 256);
}

function basePath(raw: string | undefined): string {
  const trimmed = (raw ?? '').trim().replace(/\/+$/, '');
  if (trimmed === '') return '';
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(trimmed)) {
    throw new ConfigError(`BASE_PATH must look like "/api" (letters, digits, ".", "_", "~", "-"), got "${raw}"`);
  }
  return trimmed;
}

/**
 * The configuration from the environment. `terminal`: whether the log (stderr) goes to a terminal,
 * which decides LOG_FORMAT's default.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, terminal: boolean = process.stderr.isTTY === true): Config {
  const logLevel = (env.LOG_LEVEL ?? 'info').trim().toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const databaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (databaseUrl) postgresUrl('DATABASE_URL', databaseUrl);
  const databaseReadUrls = readUrls(env.DATABASE_READ_URLS);
  if (!databaseUrl && databaseReadUrls.length) throw new ConfigError('DATABASE_READ_URLS needs DATABASE_URL (the embedded database has no replicas)');
  const tokenKey = parseKey('TOKEN_KEY', env.TOKEN_KEY);
  const tokenKeyPrevious = parseKey('TOKEN_KEY_PREVIOUS', env.TOKEN_KEY_PREVIOUS);
  if (databaseUrl && !tokenKey) {
    throw new ConfigError(
      `TOKEN_KEY is required with DATABASE_URL: the key that encrypts the tokens at rest, ${KEY_BYTES} bytes in base64 (generate one with: openssl rand -base64 ${KEY_BYTES}); keep it out of the database and its backups`,
    );
  }
  const workerCount = workers(env.WORKERS);
  // The embedded database lives in one process: several workers need a PostgreSQL server.
  if (!databaseUrl && workerCount > 1) throw new ConfigError('WORKERS above 1 needs DATABASE_URL (the embedded database lives in one process)');
  const bootstrapToken = env.BOOTSTRAP_TOKEN?.trim() || undefined;
  if (bootstrapToken && bootstrapToken.length > 1024) throw new ConfigError('BOOTSTRAP_TOKEN is longer than 1024 characters');
  return {
    host: env.HOST?.trim() || '127.0.0.1',
    port: integer(env, 'PORT', 4000, 0, 65535),
    basePath: basePath(env.BASE_PATH),
    corsOrigins: corsOrigins(env.CORS_ORIGINS),
    metrics: flag(env, 'METRICS', true),
    readCacheMb: integer(env, 'READ_CACHE_MB', 8, 0, 4096),
    readCacheAsideWrites: integer(env, 'READ_CACHE_ASIDE_WRITES', 50, 1, 1_000_000),
    subscriptionsMax: integer(env, 'SUBSCRIPTIONS_MAX', 1_000, 0, 1_000_000),
    subscriptionsWaitingPerAddress: integer(env, 'SUBSCRIPTIONS_WAITING_PER_ADDRESS', 10, 1, 1_000_000),
    subscriptionsWaiting: integer(env, 'SUBSCRIPTIONS_WAITING', 100, 1, 1_000_000),
    subscriptionsInitTimeoutMs: integer(env, 'SUBSCRIPTIONS_INIT_TIMEOUT_MS', 3_000, 1, 600_000),
    databaseUrl,
    dataDir: env.DATA_DIR?.trim() || './data',
    poolSize: integer(env, 'DB_POOL_SIZE', 10, 1, 100),
    pooler: pooler(env.DATABASE_POOLER),
    databaseReadUrls,
    replicaMaxLagMs: integer(env, 'REPLICA_MAX_LAG_MS', 2_000, 0, 3_600_000),
    migrate: flag(env, 'MIGRATE', true),
    workers: workerCount,
    shutdownDrainMs: integer(env, 'SHUTDOWN_DRAIN_MS', 0, 0, 600_000),
    lockTimeoutMs: integer(env, 'DB_LOCK_TIMEOUT_MS', 5_000, 0, 600_000),
    statementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 30_000, 0, 3_600_000),
    bootstrapToken,
    production: env.NODE_ENV === 'production',
    graphqlIntrospection: flag(env, 'GRAPHQL_INTROSPECTION', env.NODE_ENV !== 'production'),
    graphqlTrustedDocuments: env.GRAPHQL_TRUSTED_DOCUMENTS?.trim() || undefined,
    graphqlTrustedDocumentsMode: trustedDocumentsMode(env.GRAPHQL_TRUSTED_DOCUMENTS_MODE),
    graphqlFederation: flag(env, 'GRAPHQL_FEDERATION', false),
    logLevel,
    logFormat: logFormat(env.LOG_FORMAT, terminal),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    tokenKey,
    tokenKeyPrevious,
    webhooks: webhookConfig(env),
  };
}
