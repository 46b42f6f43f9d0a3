import pg from 'pg';
import { wireDate } from './wire.js';

/**
 * How every statement of the service reaches PostgreSQL: plain rows through the `pg` driver, on the
 * pool the ORM shares (see database.ts). Values are always bind parameters; a statement's text is
 * written with `?` placeholders (composable: the list language joins fragments) and numbered
 * (`$1`, `$2`, …) here, once per distinct text.
 *
 * Named statements (pg's public `{ name, text, values }` form): PostgreSQL parses and plans a named
 * statement once per connection and then only binds and executes it, which for the statements every
 * request sends (the bearer lookup, a record by id, a page) was most of the database's CPU. Names
 * are handed out for the first MAX_NAMED distinct texts (a list's filter shape is part of its text:
 * a client inventing shapes must not grow every connection's statement cache); later texts run
 * unnamed. A pooler in transaction mode (PgBouncer) cannot keep a named statement on one server
 * connection, so `namedStatements: false` turns naming off.
 *
 * The interface is `Sql`: the pool itself (each statement on any free connection, so independent
 * reads run side by side) or one transaction (every statement on its connection, in order).
 * Services take one explicitly, as Directus passes its knex: a reader sees what runs where.
 */
export interface SqlFragment {
  sql: string;
  params: unknown[];
}

/**
 * A write as one statement (src/resource/writes.ts), which a condition can be made part of:
 * `gated(gate)` is its text with its first step (the row it reads or locks, the row it inserts)
 * requiring `gate.condition`, the gate's CTEs first (their parameters before the statement's) and
 * its answer `gate.answer` of its own. How a request's token check rides in its write
 * (src/auth/checked-sql.ts).
 */
export interface Statement {
  text: string;
  params: unknown[];
  /** Absent for a statement that cannot take a gate. */
  gated?: (gate: WriteGate) => string;
}

export interface WriteGate {
  /** Tells the gated texts kept apart: a text is made once per statement shape and gate. */
  key: string;
  ctes: string;
  condition: string;
  answer(select: string): string;
}

export interface Sql {
  /** The rows a statement returns (`?` placeholders, values bound in order). */
  rows<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<R[]>;
  /** A write's rows; `rows` of its text unless this Sql makes it carry a check (src/auth/checked-sql.ts). */
  write?<R = Record<string, unknown>>(statement: Statement): Promise<R[]>;
  /**
   * Resolves once the request's caller is confirmed, when this Sql runs ahead of its token check
   * (src/auth/checked-sql.ts); what must come before any effect outside the database (whenConfirmed).
   */
  confirm?(): Promise<void>;
  /**
   * Runs `work` in a transaction: on the pool a new one (committed when `work` resolves, rolled
   * back when it throws, run again from the start when PostgreSQL aborts it as a deadlock's
   * victim); inside a transaction, in that same transaction.
   */
  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
}

/** Runs a write statement on `sql` (its `write`, when it has one). */
export const runWrite = <R = Record<string, unknown>>(sql: Sql, statement: Statement): Promise<R[]> =>
  sql.write ? sql.write<R>(statement) : sql.rows<R>(statement.text, statement.params);

/** Resolves once the caller of the request `sql` serves is confirmed (at once for an Sql that never runs ahead of it). */
export const whenConfirmed = (sql: Sql): Promise<void> => (sql.confirm ? sql.confirm() : Promise.resolve());

/** One open transaction: its statements run on its connection, in order. */
export interface Transaction extends Sql {
  readonly inTransaction: true;
}

/** The database could not be reached or answer (no connection, a connection lost): a 503. */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`the database is unavailable (${reason})`, options);
  }
}

/**
 * No connection of the pool became free in time: every one was busy with other requests. The
 * database answers; this instance has more work than connections (overload, not an outage: a 503
 * the caller may retry, never logged as the database being unavailable).
 */
export class DatabaseBusyError extends DatabaseUnavailableError {
  override name = 'DatabaseBusyError';
  constructor(options?: { cause?: unknown }) {
    super('every connection of the pool stayed busy', options);
  }
}

/** PostgreSQL's SQLSTATEs for "this transaction lost a race; run it again": deadlock, serialization failure. */
export const RETRYABLE: ReadonlySet<string> = new Set(['40P01', '40001']);
const ATTEMPTS = 4;

/** Receives every statement's text as sent (statement counts in tests and benchmarks). */
export type StatementListener = (text: string) => void;

export interface SqlOptions {
  namedStatements: boolean;
  onStatement?: StatementListener;
  /**
   * Every statement outside a transaction runs inside one of its own. The embedded database is one
   * PostgreSQL session behind a socket server that interleaves the protocol messages of its
   * clients (a command-line tool beside the service), except inside a transaction, which it keeps
   * together: there a statement must not be split.
   */
  wrapStatements?: boolean;
  /**
   * Settings every transaction begins with (`set local …`), sent with its `begin` in one round
   * trip: behind a pooler in transaction mode, where a session's own settings cannot be relied on,
   * the lock and statement timeouts are set this way.
   */
  transactionSettings?: string;
  /** The pool's size (its `max`): a request that waits for a connection of a full pool and gets none is told apart from an outage. */
  maxConnections?: number;
}

const MAX_NAMED = 500;
const MAX_KNOWN = 2_000;

interface Prepared {
  text: string;
  name: string | undefined;
}

/** `?` → `$n`, once per text (the texts are the service's own: no `?` inside literals). */
export class StatementBook {
  private readonly known = new Map<string, Prepared>();
  private named = 0;

  constructor(private readonly naming: boolean) {}

  prepare(text: string): Prepared {
    let prepared = this.known.get(text);
    if (prepared) return prepared;
    let n = 0;
    const numbered = text.replace(/\?/g, () => `$${++n}`);
    const name = this.naming && this.named < MAX_NAMED ? `s${++this.named}` : undefined;
    prepared = { text: numbered, name };
    // Past MAX_KNOWN texts (invented filter shapes), new ones are numbered again on every use.
    if (this.known.size < MAX_KNOWN) this.known.set(text, prepared);
    return prepared;
  }
}

/** A pg error the server sent (it has a SQLSTATE); anything else from the driver means the connection failed. */
export const isServerError = (err: unknown): err is pg.DatabaseError => err instanceof pg.DatabaseError;

/**
 * SQLSTATEs of a database that cannot serve now: connection exceptions (class 08), the server
 * shutting down (57P01-57P03), too many connections (53300).
 */
const AWAY = /^(08|57P0[1-3]$|53300$)/;

/**
 * Whether a failure means the database is away (not reached, lost, shutting down, full): a 503 and
 * an outage, rather than a pool too busy (load) or a statement's own failure.
 */
export const isDatabaseAway = (err: unknown): boolean =>
  err instanceof DatabaseUnavailableError ? !(err instanceof DatabaseBusyError) : isServerError(err) && AWAY.test(err.code ?? '');

function unavailable(err: unknown): unknown {
  if (isServerError(err) || err instanceof DatabaseUnavailableError) return err;
  return new DatabaseUnavailableError((err as { code?: string })?.code ?? 'connection failed', { cause: err });
}

/** A statement as the driver takes it (numbered, named when it has a name), told to the listener as it goes out. */
function queryOf(book: StatementBook, options: SqlOptions, text: string, params: readonly unknown[], arrays = false): pg.QueryConfig {
  const { text: numbered, name } = book.prepare(text);
  options.onStatement?.(numbered);
  const values = params as unknown[];
  const query: pg.QueryConfig = name ? { name, text: numbered, values } : { text: numbered, values };
  if (arrays) (query as pg.QueryArrayConfig).rowMode = 'array';
  return query;
}

/** A statement's rows as arrays of values, with its columns' names (pg's `rowMode: 'array'`). */
export interface ArrayRows {
  names: string[];
  rows: unknown[][];
}

async function run<R>(client: pg.PoolClient, book: StatementBook, options: SqlOptions, text: string, params: readonly unknown[]): Promise<R[]> {
  const query = queryOf(book, options, text, params);
  try {
    const result = await client.query<R & pg.QueryResultRow>(query);
    return result.rows;
  } catch (err) {
    throw unavailable(err);
  }
}

const arrayRowsOf = (result: pg.QueryResult | undefined): ArrayRows => ({
  names: result ? result.fields.map((field) => field.name) : [],
  rows: (result?.rows ?? []) as unknown[][],
});

/**
 * Why a connection of the pool could not be had. Failing to get one means the database is
 * unavailable (the server refused or did not answer a new connection: the error has a code, or a
 * cause), unless the request waited in the pool's queue (`queued`: every connection was busy when
 * it asked) and none came free in time: then the pool is busy (pg-pool's queue timeout is a bare
 * error, neither code nor cause).
 */
function connectFailure(err: unknown, queued: boolean): DatabaseUnavailableError {
  const { code, cause } = (err ?? {}) as { code?: string; cause?: unknown };
  if (queued && code === undefined && cause === undefined) return new DatabaseBusyError({ cause: err });
  return new DatabaseUnavailableError(code ?? 'no connection', { cause: err });
}

/** Whether a request asking the pool for a connection now waits in its queue: none idle, and no room for a new one. */
const queuedIn = (pool: pg.Pool, max: number | undefined) => max !== undefined && pool.idleCount === 0 && pool.totalCount >= max;

/** A connection of the pool (connectFailure says what its failure is). */
async function connect(pool: pg.Pool, max: number | undefined): Promise<pg.PoolClient> {
  const queued = queuedIn(pool, max);
  try {
    return await pool.connect();
  } catch (err) {
    throw connectFailure(err, queued);
  }
}

class PoolTransaction implements Transaction {
  readonly inTransaction = true as const;
  constructor(
    private readonly client: pg.PoolClient,
    private readonly book: StatementBook,
    private readonly options: SqlOptions,
  ) {}

  rows<R>(text: string, params: readonly unknown[] = []): Promise<R[]> {
    return run<R>(this.client, this.book, this.options, text, params);
  }

  async arrays(text: string, params: readonly unknown[] = []): Promise<ArrayRows> {
    try {
      return arrayRowsOf(await this.client.query(queryOf(this.book, this.options, text, params, true) as pg.QueryArrayConfig));
    } catch (err) {
      throw unavailable(err);
    }
  }

  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    return work(this);
  }
}

/** The pool as `Sql`: statements on any free connection, transactions on one. */
export class PoolSql implements Sql {
  private readonly book: StatementBook;

  constructor(
    readonly pool: pg.Pool,
    private readonly options: SqlOptions,
  ) {
    this.book = new StatementBook(options.namedStatements);
  }

  /**
   * One statement on a free connection. Written with the driver's callbacks (pg-pool's
   * `connect(callback)`, pg's `query(config, callback)`, both public) and one promise, because it
   * is every request's path, twice a REST read: as async functions over the promise forms it was
   * ten promises a statement (counted: docs/benchmarks.md).
   */
  rows<R>(text: string, params: readonly unknown[] = []): Promise<R[]> {
    // The embedded database's wrapper is no statement of the service's: the listener hears the statement alone.
    if (this.options.wrapStatements) return this.once((tx) => tx.rows<R>(text, params), false);
    return this.send(text, params, false, (result) => (result?.rows ?? []) as R[]);
  }

  /** One statement's rows as arrays of values, with its columns' names (for a statement that answers columns of its own beside a caller's). */
  arrays(text: string, params: readonly unknown[] = []): Promise<ArrayRows> {
    if (this.options.wrapStatements) return this.once((tx) => tx.arrays(text, params), false);
    return this.send(text, params, true, arrayRowsOf);
  }

  private send<T>(text: string, params: readonly unknown[], arrays: boolean, answer: (result: pg.QueryResult | undefined) => T): Promise<T> {
    const queued = queuedIn(this.pool, this.options.maxConnections);
    return new Promise<T>((resolve, reject) => {
      const connected = (connectError: Error | undefined, client: pg.PoolClient | undefined, release: (broken?: Error) => void) => {
        if (connectError || !client) return reject(connectFailure(connectError, queued));
        let query: pg.QueryConfig;
        try {
          query = queryOf(this.book, this.options, text, params, arrays);
        } catch (err) {
          release(); // the connection never saw the statement
          return reject(err as Error);
        }
        // Once only: pg calls a query's callback a second time when a value it could not
        // serialize failed the query before it was sent and the connection, released broken,
        // then ends under it (pg-pool's own query() guards its release alike).
        let settled = false;
        const done = (err: unknown, result?: pg.QueryResult) => {
          if (settled) return;
          settled = true;
          if (!err) {
            release();
            return resolve(answer(result));
          }
          const failure = unavailable(err);
          // A lost connection goes back marked broken, so that the pool closes it.
          release(failure instanceof DatabaseUnavailableError ? failure : undefined);
          reject(failure);
        };
        try {
          client.query(query, (err: Error | undefined, result: pg.QueryResult) => done(err, result));
        } catch (err) {
          done(err);
        }
      };
      try {
        this.pool.connect(connected);
      } catch (err) {
        // A pool that cannot even begin a connection (a setting the driver refuses) fails as connect() does.
        reject(connectFailure(err, queued));
      }
    });
  }

  async transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(work);
      } catch (err) {
        if (attempt >= ATTEMPTS || !isServerError(err) || !RETRYABLE.has(err.code ?? '')) throw err;
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * attempt));
      }
    }
  }

  private async once<T>(work: (tx: PoolTransaction) => Promise<T>, reported = true): Promise<T> {
    const client = await connect(this.pool, this.options.maxConnections);
    const control = async (text: 'begin' | 'commit' | 'rollback') => {
      if (reported) this.options.onStatement?.(text);
      try {
        await client.query(text === 'begin' && this.options.transactionSettings ? `begin; ${this.options.transactionSettings}` : text);
      } catch (err) {
        throw unavailable(err);
      }
    };
    let broken: Error | undefined;
    try {
      await control('begin');
      const result = await work(new PoolTransaction(client, this.book, this.options));
      await control('commit');
      return result;
    } catch (err) {
      // A failed rollback means a lost connection: PostgreSQL discards its transaction, and the
      // client goes back to the pool marked broken, so that the pool closes it.
      await control('rollback').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }
}

/**
 * Type parsers of the service's pool: a `bigint` as a JS number (the API promises safe integers, and
 * the columns refuse anything else) and a `timestamptz` straight into the wire format of dates
 * (ISO 8601, UTC, milliseconds), so that a row read with wire names (`first_name as "firstName"`)
 * is already the record the API answers. Dates, timestamps and intervals stay text, as the ORM
 * expects them.
 */
export function typeParsers(): pg.CustomTypesConfig {
  const types = new pg.TypeOverrides();
  types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));
  types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (value: string) => wireDate(value)!);
  for (const oid of [pg.types.builtins.DATE, pg.types.builtins.TIMESTAMP, pg.types.builtins.INTERVAL]) types.setTypeParser(oid, (value: string) => value);
  return types;
}
