import type pg from 'pg';

/** How long a request waits for a free database connection before it is answered 503. */
export const POOL_ACQUIRE_TIMEOUT_MS = 10_000;

/**
 * A pooled client whose connection ends while a request holds it (the server terminated it, the
 * network dropped) goes back to the pool at once, marked broken so that the pool discards it.
 *
 * Without this the pool leaks it: Kysely hands a transaction's connection back only after its
 * COMMIT or ROLLBACK succeeds, and on a dead connection the ROLLBACK fails. Enough leaks and every
 * request waits for a connection forever. A later release by the holder does nothing.
 */
export function releaseClientsThatLoseTheirConnection(pool: pg.Pool): void {
  const checkedOut = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_err: Error | undefined, client: pg.PoolClient) => checkedOut.delete(client));
  pool.on('connect', (client) => {
    client.once('end', () => {
      const held = client as pg.PoolClient;
      if (!checkedOut.has(held)) return; // an idle client: the pool handles it
      const release = held.release;
      held.release = () => {};
      release(new Error('the connection to PostgreSQL ended'));
    });
  });
}
