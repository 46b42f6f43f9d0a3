import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';

/** PostgreSQL's way of saying "this transaction lost a race with another one; run it again". */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set(['40P01', '40001']); // deadlock, serialization failure

const ATTEMPTS = 4;

/**
 * One transaction that several service calls join: what makes the root fields of one GraphQL
 * mutation succeed or fail together. A scope is opened around a request; `beginShared` starts
 * the transaction in it, `endShared` commits or rolls it back.
 */
interface SharedScope {
  em?: EntityManager;
  /** Why the transaction could not begin: every service call in the scope fails with it. */
  failure?: unknown;
}
const scopes = new AsyncLocalStorage<SharedScope>();

/** Runs `work` in a scope where `beginShared` may open a transaction for every service call in it. */
export const withSharedScope = <T>(work: () => Promise<T>): Promise<T> => scopes.run({}, work);

export async function beginShared(orm: MikroORM): Promise<void> {
  const scope = scopes.getStore();
  if (!scope || scope.em) throw new Error('beginShared needs a scope without a transaction');
  const em = orm.em.fork();
  try {
    await em.begin();
    scope.em = em;
  } catch (err) {
    // The database is unreachable, say. Not an error of the request as a whole (Apollo would
    // answer it as a 500): each service call of the scope fails with it instead, as it would have
    // without a shared transaction, and none runs outside the transaction it was meant to join.
    scope.failure = err;
  }
}

/**
 * Commits (`commit: true`) or rolls back the scope's transaction, if one is open. A failed commit
 * throws (nothing was written); a failed rollback does not: its connection is gone, and
 * PostgreSQL discards a transaction whose connection ends.
 */
export async function endShared(commit: boolean): Promise<void> {
  const scope = scopes.getStore();
  const em = scope?.em;
  if (!em) return;
  scope.em = undefined;
  if (commit) await em.commit();
  else await em.rollback().catch(() => {});
}

/** Throws why the scope's shared transaction could not begin, if it could not. */
function joinable(scope: SharedScope | undefined): EntityManager | undefined {
  if (scope?.failure !== undefined) throw scope.failure;
  return scope?.em;
}

/** The GraphQL mutation's shared transaction this call runs in, if any (its failure to begin, thrown). */
export function sharedTransaction(): EntityManager | undefined {
  return joinable(scopes.getStore());
}

/**
 * Runs `work` in a transaction of its own, or, inside a shared transaction, in a savepoint of it.
 * When PostgreSQL aborts it as one side of a deadlock (two requests locking the same rows in
 * opposite orders, such as a token's update against its owner's deletion), runs it again from
 * the start after a short random pause, up to 4 times. `work` must therefore only read and write
 * through `em`, which is fresh on every attempt.
 */
export async function transaction<T>(orm: MikroORM, work: (em: EntityManager) => Promise<T>): Promise<T> {
  const shared = joinable(scopes.getStore());
  for (let attempt = 1; ; attempt++) {
    try {
      return await (shared ?? orm.em.fork()).transactional(work);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (attempt >= ATTEMPTS || typeof code !== 'string' || !RETRYABLE_CODES.has(code)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * attempt));
    }
  }
}
