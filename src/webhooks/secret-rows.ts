import type { Sql } from '../db/sql.js';
import { keyIdSql, type Keyring } from '../db/keyring.js';

/** Rows re-encrypted per transaction. */
const BATCH = 500;

/**
 * `npm run rotate-key` for webhook secrets (docs/operations.md#secrets-at-rest): every webhook
 * secret (deleted webhooks' too, and previous secrets still signing) not under TOKEN_KEY yet is
 * opened with TOKEN_KEY_PREVIOUS and sealed and hashed again under TOKEN_KEY, in batches, each in
 * its own transaction with its rows locked. Returns how many were re-encrypted.
 */
export async function rotateWebhookKeys(sql: Sql, keyring: Keyring): Promise<number> {
  const current = keyring.current.hexId;
  let changed = 0;
  for (const table of ['webhooks', 'webhook_secrets'] as const) {
    const key = table === 'webhooks' ? 'id' : 'ctid';
    for (;;) {
      const done = await sql.transaction(async (tx) => {
        const rows = await tx.rows<{ key: string; secret_cipher: Buffer }>(
          `select ${key}::text as key, secret_cipher from ${table} where ${keyIdSql('secret_cipher')} <> ? limit ${BATCH} for update`,
          [current],
        );
        for (const row of rows) {
          const secret = keyring.open('webhookSecret', row.secret_cipher);
          if (table === 'webhooks') {
            await tx.rows('update webhooks set secret_cipher = ?, secret_hmac = ? where id = ?::bigint', [
              keyring.seal('webhookSecret', secret),
              keyring.hash('webhookSecret', secret),
              row.key,
            ]);
          } else await tx.rows('update webhook_secrets set secret_cipher = ? where ctid = ?::tid', [keyring.seal('webhookSecret', secret), row.key]);
        }
        return rows.length;
      });
      changed += done;
      if (done < BATCH) break;
    }
  }
  return changed;
}
