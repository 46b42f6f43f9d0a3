/**
 * The helpers of the read-cache tests (test/read-cache/): a service per test file, and the
 * statements a call sends, to tell a cache hit (the bearer lookup alone) from a miss.
 */
import { svc, useService } from './service.js';

export { svc, useService };
import { uniq } from './names.js';
export { uniq };

/** The statements one call sends, and its reply. */
export async function counted<T>(work: () => Promise<T>): Promise<{ statements: string[]; reply: T }> {
  svc.queries.length = 0;
  const reply = await work();
  return { statements: [...svc.queries], reply };
}

/**
 * How many times a cache hit is tried. Any transaction that writes anywhere on the PostgreSQL
 * server moves the snapshot the cache keys by (autovacuum analysing a table of another test's
 * database does, and so do the test files running beside this one on the same server), and a
 * moved snapshot is a miss: a hit is asked for again until one comes, this many times at most,
 * after a pause that grows with each attempt up to half a second (a file beside this one may
 * write for seconds in a row, longer on a busy machine), about 17 s in all. This is the one wait
 * on the outcome of other files: a hit needs a moment in which nothing on the server commits.
 */
export const HIT_ATTEMPTS = 40;

/** The pause before asking again after `attempt` misses: 40 ms more each time, at most 500 ms. */
export const retryPause = (attempt: number) => new Promise((resolve) => setTimeout(resolve, Math.min(40 * attempt, 500)));

/** A call expected to be answered from the cache: the bearer lookup alone (see HIT_ATTEMPTS). */
export async function cached<T>(work: () => Promise<T>): Promise<{ statements: string[]; reply: T }> {
  for (let attempt = 1; ; attempt++) {
    const result = await counted(work);
    if (result.statements.length === 1 || attempt === HIT_ATTEMPTS) return result;
    await retryPause(attempt);
  }
}

export const PAGE = `query($name: String!) { users(filter: { lastName: { eq: $name } }) { total data { id firstName applications { data { right application { id name } } } roles { data { id name } } } } }`;
