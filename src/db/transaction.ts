import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';

/** PostgreSQL's way of saying "this transaction lost a race with another one; run it again". */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set(['40P01', '40001']); // deadlock, serialization failure

const ATTEMPTS = 4;

/**
 * Runs `work` in a transaction of its own; when PostgreSQL aborts it as one side of a deadlock
 * (two requests locking the same rows in opposite orders, such as a token's update against its
 * owner's deletion), runs it again from the start after a short random pause, up to 4 times.
 * `work` must therefore only read and write through `em`, which is fresh on every attempt.
 */
export async function transaction<T>(orm: MikroORM, work: (em: EntityManager) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await orm.em.fork().transactional(work);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (attempt >= ATTEMPTS || typeof code !== 'string' || !RETRYABLE_CODES.has(code)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * attempt));
    }
  }
}
