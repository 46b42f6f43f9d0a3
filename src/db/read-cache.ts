import { LRUCache } from 'lru-cache';
import type { Caller } from '../auth/caller.js';

/**
 * Answers of directory reads (users, applications, roles and their links), kept in memory and
 * served again while the directory has not changed — exact, on every instance. One cache per
 * process, shared by REST (src/http/rest-cache.ts) and GraphQL (src/graphql/response-cache.ts).
 *
 * Exact because of where the version comes from: a trigger moves `directory_version` to a new
 * random number with every transaction that writes those tables, at its commit and inside it
 * (migration 20261202000000), and each request reads it in the statement that checks its bearer
 * token (authenticate.ts), before any other. An answer computed by a request is stored under the
 * version that request read; its own reads ran after that statement, so they saw at least that
 * version's data. A later request gets it only if it read the same version, that is if no write
 * committed in between: a write made through another instance, or by hand in psql, moves the number
 * all the same. No message between instances, no staleness window.
 *
 * MAX_AGE bounds what only a write that bypasses the triggers (`ALTER TABLE … DISABLE TRIGGER`,
 * `pg_restore --disable-triggers`) could leave behind. Bounded by bytes (READ_CACHE_MB, least
 * recently used out first); READ_CACHE_MB=0 turns it off.
 */
const MAX_AGE_MS = 60_000;

interface Entry {
  version: string;
  value: unknown;
  bytes: number;
}

export class ReadCache {
  private readonly entries: LRUCache<string, Entry>;

  constructor(maxBytes: number) {
    this.entries = new LRUCache<string, Entry>({
      maxSize: maxBytes,
      ttl: MAX_AGE_MS,
      // Keys are JS strings (up to two bytes a character), values their encoded bytes.
      sizeCalculation: (entry, key) => key.length * 2 + entry.bytes + 64,
    });
  }

  /**
   * The value stored under this key for this caller's scopes, made under exactly the directory
   * version the caller's token lookup read; none for a caller without a version.
   */
  get<V>(caller: Caller, key: string): V | undefined {
    if (!caller.directoryVersion) return undefined;
    const entry = this.entries.get(scoped(caller, key));
    return entry && entry.version === caller.directoryVersion ? (entry.value as V) : undefined;
  }

  /** Stores a value of about `bytes` bytes for this caller's scopes and version; one larger than a tenth of the cache is not kept. */
  set(caller: Caller, key: string, value: unknown, bytes: number): void {
    if (!caller.directoryVersion || (key.length * 2 + bytes) * 10 > this.entries.maxSize) return;
    this.entries.set(scoped(caller, key), { version: caller.directoryVersion, value, bytes });
  }
}

/**
 * The scopes are part of every key: an answer is kept per set of scope words, so a token without
 * `user:read` is never served what a `*` token was answered (and no cached route or field checks
 * anything of the caller but its scopes).
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

/** The process's cache for a configured size in MiB, or null when READ_CACHE_MB is 0. */
export function createReadCache(megabytes: number): ReadCache | null {
  return megabytes > 0 ? new ReadCache(megabytes * 1024 * 1024) : null;
}
