import { parseArgs } from 'node:util';
import { newAccessToken, SYSTEM_CALLER } from '../auth/bootstrap.js';
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { createServices } from '../services.js';
import { AppError } from '../shared/errors.js';

const USAGE = 'usage: npm run token -- --user <id> --scope "<scopes>" [--expires <ISO 8601 date-time>]';

/**
 * `npm run token -- --user 1 --scope "user:read token:read"`: issues a token for a user through
 * the same service function as POST /token/, and prints its access token on stdout.
 */
async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({ options: { user: { type: 'string' }, scope: { type: 'string' }, expires: { type: 'string' } } }).values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (!args.user || args.scope === undefined) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const db = await openDatabase(loadConfig());
  try {
    await db.migrate();
    const accessToken = newAccessToken();
    const token = await createServices(db.orm).tokens.create(
      { ...SYSTEM_CALLER, client: 'npm run token' },
      { userID: /^\d+$/.test(args.user) ? Number(args.user) : args.user, accessToken, scope: args.scope, expireAt: args.expires ?? null },
    );
    process.stderr.write(`Issued token ${token.id} for user ${token.user} with scope "${token.scope}".\n`);
    process.stdout.write(`${accessToken}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return 1;
  } finally {
    await db.close();
  }
}

process.exitCode = await main();
