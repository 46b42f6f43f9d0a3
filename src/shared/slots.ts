/**
 * Values held while in use, by slot: `add` answers the value's slot, `release(slot)` lets it go,
 * `values()` lists those held. For what is added and removed once a request (the answers under
 * way: src/server.ts), in place of a Set.
 *
 * Why not a Set: V8 replaces a Set's hash table when it fills with deleted entries, and the table
 * it replaces keeps its entries and a link to its successor (for iterators still on it). Once one
 * such table is in the old generation (after a burst of slow requests: a page of 50, a backlog),
 * each young collection finds the next table through it, and with it the requests its entries
 * hold; they are promoted, and the cycle goes on. Measured on `GET /user/{id}` after 5 s of pages:
 * ~490 KB promoted per young collection against 6, a full collection every ~0.6 s, p99 14 ms
 * against 4-5, for the rest of the process's life (docs/benchmarks.md). An array whose freed slots
 * are cleared and reused is never replaced once it holds the most values held at once. Small and
 * specific enough that a package would fit worse.
 */
export class Slots<T> {
  private readonly held: (T | undefined)[] = [];
  private readonly free: number[] = [];
  private count = 0;

  add(value: T): number {
    const slot = this.free.pop() ?? this.held.length;
    this.held[slot] = value;
    this.count += 1;
    return slot;
  }

  /** Lets go of a slot `add` answered; a second release of it changes nothing (the slot is not freed twice). */
  release(slot: number): void {
    if (this.held[slot] === undefined) return;
    this.held[slot] = undefined;
    this.free.push(slot);
    this.count -= 1;
  }

  get size(): number {
    return this.count;
  }

  /** The values held now, in slot order. */
  values(): T[] {
    const values: T[] = [];
    for (const value of this.held) if (value !== undefined) values.push(value);
    return values;
  }
}
