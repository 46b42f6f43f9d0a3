import pg from 'pg';
import type { Logger } from '../observability/log.js';
import { DatabaseUnavailableError, PoolSql, typeParsers, type Sql, type StatementListener, type Transaction } from './sql.js';

/** What a request read with its token (src/auth/caller.ts): the primary's WAL position then, if read. */
export interface ReadFloor {
  readFloor?: string;
}

/**
 * Reads on streaming replicas (DATABASE_READ_URLS, docs/operations.md#many-instances-workers-replicas-poolers), never older than what the caller
 * may see.
 *
 * The rule is one number per request, its floor: the primary's WAL flush position, read in the
 * statement that checks the bearer token (on the primary, as every token check is). Everything
 * committed before the request began lies at or below it. A request's reads go to a replica only
 * once that replica has replayed up to the floor, else to the primary. So a caller's reads see
 * every write acknowledged before them, its own and everyone's (read-your-writes), and never go
 * back in time (a later request's floor is at or past whatever any replica had replayed when an
 * earlier one read), on every instance, with nothing remembered per caller.
 *
 * Each replica's replay position is known from a poll (every POLL_MS, which also measures its
 * lag) and from the check a request makes when the position it knows is below its floor (one
 * `select pg_last_wal_replay_lsn()` on the replica, once per request). A replica that lags more
 * than REPLICA_MAX_LAG_MS, or does not answer, is skipped until a poll finds it back (one `warn`
 * line each way); /metrics shows each one's lag.
 */

const POLL_MS = 500;
/** How long a poll or a check may take before the replica counts as unreachable. */
const CHECK_TIMEOUT_MS = 2_000;
/** How far back the lag can be measured (the primary's positions kept, one per poll). */
const HISTORY = 240;

/** `16/B374D848` → a comparable number. */
export function lsnOf(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

export interface ReplicaState {
  /** host:port/database, credentials left out (logs and metrics). */
  name: string;
  usable: boolean;
  /** Seconds behind the primary at the last poll; null when unreachable. */
  lagSeconds: number | null;
}

class Replica {
  readonly sql: PoolSql;
  /** The highest replay position seen (polls and checks only ever raise it). */
  replayed = -1n;
  reachable = false;
  lagMs: number | null = null;
  usable = false;

  constructor(
    readonly name: string,
    readonly pool: pg.Pool,
    onStatement?: StatementListener,
  ) {
    this.sql = new PoolSql(pool, { namedStatements: true, onStatement });
  }

  /** The replay position now (a statement on the replica), or null when it does not answer. */
  async replayPosition(): Promise<bigint | null> {
    try {
      const [row] = await withTimeout(
        this.pool.query<{ lsn: string | null; recovery: boolean }>('select pg_last_wal_replay_lsn()::text as lsn, pg_is_in_recovery() as recovery'),
      );
      // A server that is no longer in recovery (promoted) is no replica of this primary any more.
      if (!row.recovery || row.lsn === null) return null;
      const lsn = lsnOf(row.lsn);
      if (lsn > this.replayed) this.replayed = lsn;
      return lsn;
    } catch {
      return null;
    }
  }
}

const withTimeout = async <T extends pg.QueryResultRow>(query: Promise<pg.QueryResult<T>>): Promise<T[]> => {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('replica check timed out')), CHECK_TIMEOUT_MS)));
    return (await Promise.race([query, timeout])).rows;
  } finally {
    clearTimeout(timer);
  }
};

const nameOf = (url: string) => {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
};

export interface Replicas {
  /** Where a read of this caller's request runs: a replica past the caller's floor, else the primary. */
  readerFor(caller: ReadFloor): Sql;
  states(): ReplicaState[];
  close(): Promise<void>;
}

export function openReplicas(
  urls: readonly string[],
  primary: { sql: Sql; pool: pg.Pool },
  options: { poolSize: number; maxLagMs: number; log: Logger; onStatement?: StatementListener; statementTimeoutMs?: number },
): Replicas {
  const replicas = urls.map((url) => {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize,
      connectionTimeoutMillis: CHECK_TIMEOUT_MS,
      types: typeParsers(),
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    });
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    return new Replica(nameOf(url), pool, options.onStatement);
  });

  // The primary's flush positions at recent polls, oldest first: a replica's lag is how long ago
  // the primary was where the replica has replayed to.
  const history: { at: number; lsn: bigint }[] = [];
  async function poll(): Promise<void> {
    let primaryLsn: bigint | null = null;
    try {
      const [row] = await withTimeout(primary.pool.query<{ lsn: string }>('select pg_current_wal_flush_lsn()::text as lsn'));
      primaryLsn = lsnOf(row.lsn);
      history.push({ at: Date.now(), lsn: primaryLsn });
      if (history.length > HISTORY) history.shift();
    } catch {
      // The primary is away: its requests fail on their own; replicas keep their last state.
      return;
    }
    await Promise.all(
      replicas.map(async (replica) => {
        const replayed = await replica.replayPosition();
        replica.reachable = replayed !== null;
        if (replayed === null) replica.lagMs = null;
        else if (replayed >= primaryLsn!) replica.lagMs = 0;
        else {
          // The newest primary position the replica has reached: it is as far behind as that is old.
          const reached = history.findLast((h) => h.lsn <= replayed);
          replica.lagMs = Date.now() - (reached?.at ?? history[0].at);
        }
        const usable = replica.reachable && replica.lagMs !== null && replica.lagMs <= options.maxLagMs;
        if (usable !== replica.usable) {
          if (usable) options.log.info('replica back in use', { replica: replica.name, lagMs: replica.lagMs });
          else
            options.log.warn('replica skipped: reads go to the primary', {
              replica: replica.name,
              reachable: replica.reachable,
              lagMs: replica.lagMs,
              maxLagMs: options.maxLagMs,
            });
        }
        replica.usable = usable;
      }),
    );
  }
  let polling = poll();
  const timer = setInterval(() => {
    polling = polling.then(poll);
  }, POLL_MS);
  timer.unref();

  let next = 0;
  /** A usable replica that has replayed `floor`, asking it when what is known falls short; null: none. */
  async function replicaPast(floor: bigint): Promise<Replica | null> {
    const usable = replicas.filter((r) => r.usable);
    for (let i = 0; i < usable.length; i++) {
      const replica = usable[(next + i) % usable.length];
      if (replica.replayed >= floor) {
        next = (next + i + 1) % usable.length;
        return replica;
      }
    }
    // None known to be far enough: ask one (the next in turn), once.
    const asked = usable[next++ % Math.max(usable.length, 1)];
    if (!asked) return null;
    const replayed = await asked.replayPosition();
    return replayed !== null && replayed >= floor ? asked : null;
  }

  /** A request's reads: the replica chosen at its first statement, for all of them (or the primary). */
  class ReadPath implements Sql {
    private chosen: Promise<Sql> | undefined;

    constructor(private readonly floor: bigint) {}

    private target(): Promise<Sql> {
      this.chosen ??= replicaPast(this.floor).then((replica) => replica?.sql ?? primary.sql);
      return this.chosen;
    }

    async rows<R>(text: string, params?: readonly unknown[]): Promise<R[]> {
      const target = await this.target();
      if (target === primary.sql) return primary.sql.rows<R>(text, params);
      try {
        return await target.rows<R>(text, params);
      } catch (err) {
        // A replica that fails under a read (gone, restarting): this read, and the request's
        // next ones, on the primary; the poll takes the replica out.
        if (!(err instanceof DatabaseUnavailableError)) throw err;
        this.chosen = Promise.resolve(primary.sql);
        return primary.sql.rows<R>(text, params);
      }
    }

    /** A read that needs a transaction is rare (none today): on the primary. */
    transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
      return primary.sql.transaction(work);
    }
  }

  return {
    readerFor(caller) {
      return caller.readFloor ? new ReadPath(lsnOf(caller.readFloor)) : primary.sql;
    },
    states: () => replicas.map((r) => ({ name: r.name, usable: r.usable, lagSeconds: r.lagMs === null ? null : r.lagMs / 1000 })),
    async close() {
      clearInterval(timer);
      await polling.catch(() => {});
      await Promise.all(replicas.map((r) => r.pool.end().catch(() => {})));
    },
  };
}
