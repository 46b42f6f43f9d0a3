import { LRUCache } from 'lru-cache';

/**
 * Answers of directory reads (users, applications, roles and their links), kept in memory and
 * served again while the directory has not changed — exact, on every instance.
 *
 * Exact because of where the version comes from: a statement-level trigger moves
 * `directory_version` with every write to those tables, in the write's own transaction (migration
 * 20261202000000), and each request reads it in the statement that checks its bearer token
 * (authenticate.ts), before any other. An answer computed by a request is stored under the version
 * that request read; its own reads ran after that statement, so they saw at least that version's
 * data. A later request gets it only if it read the same version, that is if no write committed
 * in between: a write made through another instance, or by hand in psql, moves the number all the
 * same. No timer, no message between instances, no staleness window.
 *
 * Bounded by bytes (READ_CACHE_MB, least recently used out first); READ_CACHE_MB=0 turns it off.
 * Entries of an older version are replaced in place when their key is computed again.
 */
export class ReadCache<V> {
  private readonly entries: LRUCache<string, { version: string; value: V }>;

  constructor(maxBytes: number, private readonly sizeOf: (value: V) => number) {
    this.entries = new LRUCache({ maxSize: maxBytes, sizeCalculation: (entry, key) => Math.max(1, key.length + this.sizeOf(entry.value) + 64) });
  }

  /** The value stored under this key for exactly this version, if any. */
  get(key: string, version: string): V | undefined {
    const entry = this.entries.get(key);
    return entry && entry.version === version ? entry.value : undefined;
  }

  set(key: string, version: string, value: V): void {
    this.entries.set(key, { version, value });
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The cache for a configured size in MiB, or null when READ_CACHE_MB is 0. */
export function readCache<V>(megabytes: number, sizeOf: (value: V) => number): ReadCache<V> | null {
  return megabytes > 0 ? new ReadCache<V>(megabytes * 1024 * 1024, sizeOf) : null;
}
