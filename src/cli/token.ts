import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { parseScopes, SYSTEM_CALLER } from '../auth/caller.js';
import { newAccessToken } from '../tokens/bootstrap.js';
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { databaseSchemaOf, scopeVocabulary } from '../module/registry.js';
import { MODULES } from '../modules.js';
import { createServices } from '../services.js';
import { AppError } from '../errors.js';
import { parseWrite } from '../resource/input.js';
import { tokens } from '../tokens/token.resource.js';

const USAGE = 'usage: npm run token -- --user <id> --scope "<scopes>" [--expires <ISO 8601 date-time>]';
const HELP = `${USAGE}

Issues an access token for a user (through the same service function as POST /token/) and prints
it alone on stdout. Uses DATABASE_URL, or the embedded database in DATA_DIR (./data), whether or
not the service is running.

  --user <id>         the user the token belongs to
  --scope "<scopes>"  space-separated permissions, e.g. "user:read token:read", or "*"; not empty
                      (words this service does not check are kept, with a warning naming them)
  --expires <date>    when the token stops working (ISO 8601 with an offset, in the future);
                      never when left out
  --help              this text
`;

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/**
 * `npm run token -- --user 1 --scope "user:read token:read"`: issues a token for a user through
 * the same service function as POST /token/ and prints its access token (alone) on stdout.
 * With the embedded database it works whether or not the service is running.
 */
export async function tokenCommand(argv: string[], env: NodeJS.ProcessEnv, io: Io, now: () => Date = () => new Date()): Promise<number> {
  let args;
  try {
    const parsed = parseArgs({
      args: argv,
      options: { user: { type: 'string' }, scope: { type: 'string' }, expires: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      tokens: true,
    });
    // parseArgs keeps the last of a repeated option: a second --user is a mistake to point out.
    const seen = new Set<string>();
    for (const token of parsed.tokens) {
      if (token.kind !== 'option') continue;
      if (seen.has(token.name)) throw new Error(`--${token.name} is given more than once`);
      seen.add(token.name);
    }
    args = parsed.values;
    if (args.help) {
      io.out(HELP);
      return 0;
    }
  } catch (err) {
    io.err(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (!args.user || args.scope === undefined) {
    io.err(`${USAGE}\n`);
    return 2;
  }
  if (!/^[1-9]\d{0,15}$/.test(args.user) || !Number.isSafeInteger(Number(args.user))) {
    io.err(`--user must be a user id (a positive integer), got "${args.user}"\n${USAGE}\n`);
    return 2;
  }
  // What the token would be, checked before the database is opened: a token that can never work
  // is refused (exit 1, like the service's own refusals).
  const scopes = [...parseScopes(args.scope)];
  if (scopes.length === 0) {
    io.err(`--scope is empty: the token would grant nothing; give space-separated permissions, e.g. "user:read token:read", or "*"\n`);
    return 1;
  }
  const accessToken = newAccessToken();
  let values;
  try {
    values = parseWrite(tokens, { userID: Number(args.user), accessToken, scope: args.scope, expireAt: args.expires ?? null }, 'create');
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    io.err(`${err.message}\n`);
    return 1;
  }
  if (values.expireAt && values.expireAt.getTime() <= now().getTime()) {
    io.err(`--expires ${args.expires} is in the past: the token would never work\n`);
    return 1;
  }
  // Tokens may carry other applications' scopes, so unknown words are kept; but a typo
  // ("user:raed") is the likelier cause, so it is named.
  const vocabulary = scopeVocabulary(MODULES);
  const inert = scopes.filter((word) => !vocabulary.grantsSomething(word));
  if (inert.length) {
    io.err(
      `warning: ${inert.map((word) => `"${word}"`).join(', ')} ${inert.length === 1 ? 'grants' : 'grant'} nothing in this service ` +
        `(it checks ${[...vocabulary.permissions].join(', ')}, "<resource>:*" and "*"); the token carries ${inert.length === 1 ? 'it' : 'them'} all the same\n`,
    );
  }
  const config = loadConfig(env);
  const db = await openDatabase(config, { schema: databaseSchemaOf(MODULES), shareEmbedded: true });
  try {
    // A service sharing its embedded database migrated it already.
    if (!db.shared) await db.migrate();
    const token = await createServices(db.keyring, { config }).tokens.create({ ...SYSTEM_CALLER, client: 'npm run token' }, db.sql, values);
    io.err(`Issued token ${token.id} for user ${token.userID} with scope "${token.scope}".\n`);
    io.out(`${accessToken}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    io.err(`${err.message}\n`);
    return 1;
  } finally {
    await db.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await tokenCommand(process.argv.slice(2), process.env, {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
  });
}
