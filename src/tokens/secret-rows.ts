import { ConfigError } from '../config.js';
import type { MigrationHooks } from '../db/database.js';
import { keyIdSql, type Keyring } from '../db/keyring.js';
import { DROP_PLAIN_TOKENS } from '../db/migrations/index.js';
import type { Sql } from '../db/sql.js';

/** Rows converted or re-encrypted per transaction: short transactions, short row locks. */
const BATCH = 500;

const SEAL = `update tokens
    set access_token_hmac = ?, access_token_cipher = ?, refresh_token_hmac = ?, refresh_token_cipher = ?
  where id = ?`;

/** The four stored forms of a token's two secrets under the current key, and its id. */
function sealed(keyring: Keyring, id: number, accessToken: string, refreshToken: string): unknown[] {
  return [
    keyring.hash('accessToken', accessToken),
    keyring.seal('accessToken', accessToken),
    keyring.hash('refreshToken', refreshToken),
    keyring.seal('refreshToken', refreshToken),
    id,
  ];
}

/**
 * Converts the rows still in the old form (plain `access_token`, `refresh_token`) into keyed hashes
 * and ciphertexts under the current key, and empties the plain columns. Runs between the migration
 * that adds the new columns and the one that drops the plain ones (see Database.migrate), in
 * batches, each in its own transaction, so an interrupted start resumes where it stopped.
 * Returns the number of rows converted.
 */
export async function convertPlainTokens(sql: Sql, keyring: Keyring): Promise<number> {
  let converted = 0;
  let after = 0;
  for (;;) {
    const done = await sql.transaction(async (tx) => {
      const rows = await tx.rows<{ id: number; access_token: string; refresh_token: string | null }>(
        `select id, access_token, refresh_token from tokens
          where id > ? and (access_token_cipher is null or access_token is not null or refresh_token is not null)
          order by id limit ${BATCH} for update`,
        [after],
      );
      for (const row of rows) {
        // A row converted by an earlier, interrupted start but not yet emptied keeps its ciphertexts.
        await tx.rows(
          `${SEAL.replace('where id = ?', ', access_token = null, refresh_token = null where id = ?')}`,
          sealed(keyring, row.id, row.access_token, row.refresh_token ?? ''),
        );
      }
      return rows;
    });
    converted += done.length;
    if (done.length < BATCH) return converted;
    after = done[done.length - 1].id;
  }
}

/**
 * Refuses a key ring that cannot open every stored token: a wrong TOKEN_KEY, a key file replaced or
 * lost, a rotation whose TOKEN_KEY_PREVIOUS was left out. Serving with it would answer 401 for
 * every token and write new ones under a second key beside the unreadable ones, so the start stops
 * here with a message that names the key ids found and held (never the keys).
 */
export async function checkTokenKeys(sql: Sql, keyring: Keyring): Promise<void> {
  const held = keyring.hexIds;
  const marks = held.map(() => '?').join(', ');
  const [row] = await sql.rows<{ key_id: string; n: number }>(
    `select k.key_id, (select count(*) from tokens where ${keyIdSql('access_token_cipher')} = k.key_id) as n
       from (select ${keyIdSql('access_token_cipher')} as key_id from tokens
              where ${keyIdSql('access_token_cipher')} not in (${marks}) or ${keyIdSql('refresh_token_cipher')} not in (${marks})
              limit 1) k`,
    [...held, ...held],
  );
  if (row) {
    throw new ConfigError(
      `the database holds tokens encrypted under a key this service does not hold (key id ${row.key_id}, ${row.n} tokens; ` +
        `this service holds ${held.join(' and ')}). Start it with the key they were encrypted with as TOKEN_KEY ` +
        `(or, during a rotation, as TOKEN_KEY_PREVIOUS); on the embedded database, restore DATA_DIR/token.key`,
    );
  }
}

export interface Rotation {
  /** Rows re-encrypted and re-hashed under the current key. */
  changed: number;
  /** Rows already under it. */
  unchanged: number;
}

/**
 * `npm run rotate-key`: re-encrypts and re-hashes every token (deleted ones too: a restore needs
 * them) that is not under the current key yet, opening it with TOKEN_KEY_PREVIOUS. In batches, each
 * in its own transaction with its rows locked, so it can run beside the service and be run again.
 */
export async function rotateTokenKeys(sql: Sql, keyring: Keyring): Promise<Rotation> {
  // The keys were checked against every stored token by the migrate() this runs after.
  const current = keyring.current.hexId;
  let changed = 0;
  let after = 0;
  for (;;) {
    const done = await sql.transaction(async (tx) => {
      const rows = await tx.rows<{ id: number; access_token_cipher: Buffer; refresh_token_cipher: Buffer }>(
        `select id, access_token_cipher, refresh_token_cipher from tokens
          where id > ? and (${keyIdSql('access_token_cipher')} <> ? or ${keyIdSql('refresh_token_cipher')} <> ?)
          order by id limit ${BATCH} for update`,
        [after, current, current],
      );
      for (const row of rows) {
        const accessToken = keyring.open('accessToken', row.access_token_cipher);
        const refreshToken = keyring.open('refreshToken', row.refresh_token_cipher);
        await tx.rows(SEAL, sealed(keyring, row.id, accessToken, refreshToken));
      }
      return rows;
    });
    changed += done.length;
    if (done.length < BATCH) break;
    after = done[done.length - 1].id;
  }
  const [{ total }] = await sql.rows<{ total: number }>('select count(*) as total from tokens');
  return { changed, unchanged: total - changed };
}

/**
 * What the tokens do around the migrations (src/db/database.ts): plain tokens need the key to be
 * converted, which SQL migrations never see, so they are converted just before the migration that
 * drops the plain columns (the one before it added the new ones: see
 * Migration20261201000000_token_secret_columns); once every migration ran, the plain values are
 * gone from every live row version, but the old versions stay in the table's files until
 * rewritten, so the table is rewritten once (a short exclusive lock). Then, at every migrate, the
 * key ring must open every stored token.
 */
export const tokenMigrationHooks: MigrationHooks = {
  steps: [
    {
      before: DROP_PLAIN_TOKENS,
      async run(sql, keyring) {
        const count = await convertPlainTokens(sql, keyring);
        if (count === 0) return null;
        return async () => {
          await sql.pool.query('vacuum full tokens');
          return `Encrypted ${count} plain token${count === 1 ? '' : 's'} with the token key.`;
        };
      },
    },
  ],
  onMigrated: checkTokenKeys,
};
