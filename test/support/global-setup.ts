import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';

/**
 * Jest's globalSetup: on the embedded database (no DATABASE_URL), creates one empty PGlite data
 * directory (what PGlite's initdb writes, nothing of the service's: no migration, no key, no
 * token) that every test service's database starts as a copy of (test/support/service.ts). Each
 * test service still gets a directory of its own and migrates it at start; what is saved is
 * initdb, seconds per service. The tests of a first start on an empty DATA_DIR (db/embedded,
 * process, tokens/secrets' key file) make their own directories and do not use it.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL || process.env.UTS_TEST_PGLITE_TEMPLATE) return;
  const dir = await mkdtemp(join(tmpdir(), 'uts-template-'));
  const db = await PGlite.create(dir);
  await db.close();
  // Set before jest starts its workers, which inherit it.
  process.env.UTS_TEST_PGLITE_TEMPLATE = dir;
  process.env.UTS_TEST_PGLITE_TEMPLATE_OWNED = '1';
}
