import { ConfigError, loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { databaseSchemaOf } from '../module/registry.js';
import { MODULES } from '../modules.js';

/**
 * `npm run migrate`: runs the pending migrations and exits. With the embedded database it works
 * beside a running service (through that service's connection).
 */
try {
  // A migration may rewrite a large table: no statement timeout (lock waits stay bounded).
  const db = await openDatabase({ ...loadConfig(), statementTimeoutMs: 0 }, { schema: databaseSchemaOf(MODULES), shareEmbedded: true });
  try {
    if (db.shared) {
      process.stdout.write('Nothing to migrate: the service running on this DATA_DIR migrated the database when it started.\n');
    } else {
      const ran = await db.migrate((note) => process.stdout.write(`${note}\n`));
      process.stdout.write(ran.length ? `Applied: ${ran.join(', ')}\n` : 'Nothing to migrate: the schema is up to date.\n');
    }
  } finally {
    await db.close();
  }
} catch (err) {
  const message = err instanceof ConfigError ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
  process.stderr.write(`Could not migrate: ${message}\n`);
  process.exitCode = 1;
}
