import { LRUCache } from 'lru-cache';
import type { Caller } from '../auth/caller.js';

/**
 * Answers of cacheable reads, kept in memory and served again while nothing has been written to
 * the database since — exact, on every instance. One store per process, shared by REST (routes
 * declared `cacheable`: rest.ts) and GraphQL (documents made of fields declared cacheable:
 * graphql.ts).
 *
 * Exact because of what an answer is keyed by: the database snapshot (which transactions have
 * committed; PostgreSQL's `pg_current_snapshot()`, with the server's start time) that each request
 * reads in the statement that checks its bearer token, before any other. An answer computed by a
 * request is stored under the snapshot that request read; its own reads ran after that statement,
 * so they saw at least that snapshot's data. A later request gets it only if it read the very same
 * snapshot, that is if no transaction that wrote anything has committed (or begun) in between:
 * through this instance, another one, or by hand in psql. No message between instances, no
 * staleness window, and nothing for a write to maintain. Any write moves the snapshot, so under a
 * steady flow of writes the store rarely answers; it serves repeated reads of a quiet database.
 *
 * MAX_AGE bounds what a database restored from a backup to an older transaction counter (with the
 * same server start time, which a restore does not keep) could leave behind. Bounded by bytes
 * (READ_CACHE_MB, least recently used out first); READ_CACHE_MB=0 turns it off.
 */
const MAX_AGE_MS = 60_000;

/**
 * Standing aside, counted in windows of WINDOW_MS: how often a second the snapshot may be seen
 * moving on (its xmax, the next transaction id, higher than in any earlier cacheable request's
 * token lookup) before the store stands aside: at that rate an answer is outdated long before the
 * same request comes again (a hit needs the very same snapshot), so keeping answers would only
 * cost each request a copy of its answer and the store its churn. It neither keeps nor serves while the last window was that busy, and takes up again
 * after a quieter one (or after two windows without a cacheable request). Counted in this
 * instance's own requests, so a quiet instance never stands aside, whatever other databases on
 * the server do. The rate is READ_CACHE_ASIDE_WRITES (src/config.ts).
 *
 * While it stands aside, the token lookups of only a sample of requests read the snapshot (one in
 * every half of a move's share of the window, e.g. one per 10 ms at 50 moves a second), and each
 * sample counts the moves the requests spared since the last one would have seen (see inUse), so
 * the rate is counted as before; the others are spared that (building and sending the snapshot's text, under a flow of writes a list of the
 * transactions in flight, was 5-10 % of a read's cost under the mixed benchmark).
 */
const WINDOW_MS = 1_000;

/**
 * What an entry costs besides its key and its answer's bytes: the entry and answer objects, the
 * Buffer object and its backing store, its headers, the LRU's slots. Measured (heap used plus
 * external memory over 20,000 REST answers of 180 bytes): 794 bytes an entry in all, of which
 * ~560 are this; counted as 64 before, a store of small answers held 2.6 times READ_CACHE_MB.
 */
const ENTRY_OVERHEAD = 560;

interface Entry {
  snapshot: string;
  value: unknown;
  bytes: number;
}

export class ReadCache {
  private readonly entries: LRUCache<string, Entry>;
  /** The highest xmax seen, how often a higher one was seen in the current window, and since when that window runs. */
  private lastXmax = 0;
  private moves = 0;
  private windowStart = 0;
  private standingAside = false;
  /** While aside, the time of the last request told to read the snapshot, the interval between two, and the requests spared it since the last inUse. */
  private lastSample = -Infinity;
  private readonly sampleMs: number;
  private spared = 0;

  constructor(
    maxBytes: number,
    /** Snapshot moves a second above which the store stands aside (see above). */
    private readonly busyMovesPerSecond: number,
    /** Milliseconds on a monotonic clock: the windows' time (tests pass a clock of their own). */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.entries = new LRUCache<string, Entry>({
      maxSize: maxBytes,
      ttl: MAX_AGE_MS,
      // Keys are JS strings (up to two bytes a character), values their encoded bytes.
      sizeCalculation: (entry, key) => key.length * 2 + entry.bytes + ENTRY_OVERHEAD,
    });
    this.sampleMs = WINDOW_MS / (2 * busyMovesPerSecond);
  }

  /**
   * Whether a request that may be cacheable should read the snapshot with its token: always while
   * the store is in use; while it stands aside, one request per sample interval (see WINDOW_MS).
   */
  wantsSnapshot(): boolean {
    if (!this.standingAside) return true;
    const now = this.now();
    if (now - this.lastSample < this.sampleMs) {
      this.spared++;
      return false;
    }
    this.lastSample = now;
    return true;
  }

  /** Whether the store stands aside now. */
  get aside(): boolean {
    return this.standingAside;
  }

  /** How many answers are kept. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Whether a cacheable request should look for a kept answer (and keep its own): it has a
   * snapshot, and the database is not being written faster than answers could be reused (see
   * BUSY_MOVES_PER_SECOND). Called once per cacheable request: it counts the snapshot's moves.
   */
  inUse(caller: Caller): boolean {
    const { snapshot } = caller;
    if (!snapshot) return false;
    // `xmin:xmax:xip… start`: concurrent requests may bring an older snapshot after a newer one.
    const afterXmin = snapshot.indexOf(':') + 1;
    const xmax = Number(snapshot.slice(afterXmin, snapshot.indexOf(':', afterXmin)));
    if (xmax > this.lastXmax) {
      // One move for a request that saw the snapshot move on. While aside, the requests spared the
      // snapshot since the last one read would each have seen at most one of the transactions
      // begun in between (xmax - lastXmax): counted as they would have been, so the rate is the
      // same whether every request reads the snapshot or only a sample does.
      this.moves += Math.min(xmax - this.lastXmax, this.spared + 1);
      this.lastXmax = xmax;
    }
    this.spared = 0;
    const now = this.now();
    const elapsed = now - this.windowStart;
    if (elapsed >= WINDOW_MS) {
      this.standingAside = elapsed < 2 * WINDOW_MS && (this.moves * WINDOW_MS) / elapsed > this.busyMovesPerSecond;
      // A hit needs the very snapshot an answer was kept under, and the writes that turned the
      // store aside have moved it past almost every answer kept: only those made since the last
      // move could still be served, when the writes stop. All are dropped (those few cost one
      // miss each): nothing else would remove them while the writes go on (no answer is kept
      // while aside to push them out, and an expired one goes only when its key is read), and
      // the garbage collector would trace them (up to READ_CACHE_MB of small objects) all along.
      // A request let in before this may still keep its answer afterwards; the next busy window
      // drops it.
      if (this.standingAside) this.entries.clear();
      this.moves = 0;
      this.windowStart = now;
    }
    return !this.standingAside;
  }

  /** The value stored under this key for this caller's scopes, made under exactly the snapshot the caller's token lookup read. */
  get<V>(caller: Caller, key: string): V | undefined {
    if (!caller.snapshot) return undefined;
    const entry = this.entries.get(scoped(caller, key));
    return entry && entry.snapshot === caller.snapshot ? (entry.value as V) : undefined;
  }

  /** Stores a value of about `bytes` bytes for this caller's scopes and snapshot; one larger than a tenth of the store is not kept. */
  set(caller: Caller, key: string, value: unknown, bytes: number): void {
    if (!caller.snapshot || (key.length * 2 + bytes) * 10 > this.entries.maxSize) return;
    this.entries.set(scoped(caller, key), { snapshot: caller.snapshot, value, bytes });
  }
}

/**
 * The scopes are part of every key: an answer is kept per set of scope words, so a token without
 * `user:read` is never served what a `*` token was answered (and no cacheable route or field may
 * depend on anything of the caller but its scopes).
 */
function scoped(caller: Caller, key: string): string {
  return `${[...caller.scopes].sort().join(' ')}\n${key}`;
}

/**
 * A text as bytes of its own. Buffer.from would cut a short text out of Node's shared 8 KiB pool,
 * and a kept slice holds its whole pool chunk (and whatever else was cut from it) in memory.
 */
export function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text);
  return bytes;
}

/** The process's store for a configured size in MiB, or null when READ_CACHE_MB is 0; `now`: its windows' clock. */
export function createReadCache(megabytes: number, busyMovesPerSecond: number, now?: () => number): ReadCache | null {
  return megabytes > 0 ? new ReadCache(megabytes * 1024 * 1024, busyMovesPerSecond, now) : null;
}
