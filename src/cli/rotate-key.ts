import { pathToFileURL } from 'node:url';
import { ConfigError, loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { databaseSchemaOf } from '../module/registry.js';
import { MODULES } from '../modules.js';
import type { Io } from './token.js';

const HELP = `usage: TOKEN_KEY=<new key> TOKEN_KEY_PREVIOUS=<old key> npm run rotate-key

Re-encrypts and re-hashes every token and webhook secret (deleted ones too) with TOKEN_KEY, opening those still under
TOKEN_KEY_PREVIOUS, and prints how many rows changed. Run it once every instance of the service
runs with both keys; afterwards TOKEN_KEY_PREVIOUS can be removed. Safe to run again (rows already
under TOKEN_KEY are left alone) and beside the running service. Uses DATABASE_URL, or the
embedded database in DATA_DIR (./data), whether or not the service is running.
`;

/**
 * `npm run rotate-key`: re-encrypts every secret (tokens', webhooks') under TOKEN_KEY (docs/operations.md#secrets-at-rest). Exit status 0 when done,
 * 1 when it cannot (a missing or malformed key, a token under a key neither variable holds).
 */
export async function rotateKeyCommand(argv: string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(HELP);
    return 0;
  }
  if (argv.length > 0) {
    io.err(`unknown argument "${argv[0]}"\n${HELP}`);
    return 2;
  }
  try {
    const config = loadConfig(env);
    if (!config.tokenKey) throw new ConfigError('TOKEN_KEY must be set to the new key (32 bytes in base64) to rotate to');
    // A rotation may rewrite a large table: no statement timeout (lock waits stay bounded).
    const db = await openDatabase({ ...config, statementTimeoutMs: 0 }, { schema: databaseSchemaOf(MODULES), shareEmbedded: true });
    try {
      // Migrating also checks the keys against every stored token; a service sharing its embedded
      // database migrated it and checked them already.
      if (!db.shared) await db.migrate();
      // Each module re-seals its own secrets (tokens', webhooks'), in list order.
      for (const module of MODULES) {
        const told = await module.rotateKeys?.(db.sql, db.keyring);
        if (told) io.out(`${told}\n`);
      }
      return 0;
    } finally {
      await db.close();
    }
  } catch (err) {
    const message = err instanceof ConfigError ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
    io.err(`Could not rotate the token key: ${message}\n`);
    return 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await rotateKeyCommand(process.argv.slice(2), process.env, {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
  });
}
