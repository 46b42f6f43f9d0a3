import { loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';

/** `npm run migrate`: run the pending migrations and exit. */
const config = loadConfig();
const db = await openDatabase(config);
try {
  const ran = await db.migrate();
  process.stdout.write(ran.length ? `Applied: ${ran.join(', ')}\n` : 'Nothing to migrate: the schema is up to date.\n');
} finally {
  await db.close();
}
