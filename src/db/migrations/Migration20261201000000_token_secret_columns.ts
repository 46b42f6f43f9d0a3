import { Migration } from '@mikro-orm/migrations';

/**
 * Secrets at rest, step 1 of 2 (docs/operations.md#secrets-at-rest): the columns that replace the plain `access_token` and
 * `refresh_token`. For each, a keyed hash (HMAC-SHA-256: lookups, filters, and the unique index of
 * live access tokens) and an AES-256-GCM ciphertext (read-back). See src/db/keyring.ts.
 *
 * Why two migrations with a step in between: the new values need the key, and the key must never
 * be in the database, so SQL cannot compute them. This migration only adds the columns (nullable,
 * and lets the plain ones be null); then the service, holding TOKEN_KEY (or the key file), converts
 * the rows still in the old form, in batches, each batch in its own transaction
 * (src/tokens/secret-rows.ts: convertPlainTokens); then Migration20261201000100_drop_plain_tokens
 * drops the plain columns, and refuses to run while any row is unconverted. `Database.migrate()`
 * runs the three steps in this order, at every start and in `npm run migrate`, so a start that
 * stops half-way simply resumes.
 */
export class Migration20261201000000_token_secret_columns extends Migration {
  override name = 'Migration20261201000000_token_secret_columns';

  override async up(): Promise<void> {
    this.addSql(`
      alter table tokens
        add column access_token_hmac bytea null,
        add column access_token_cipher bytea null,
        add column refresh_token_hmac bytea null,
        add column refresh_token_cipher bytea null,
        alter column access_token drop not null,
        alter column refresh_token drop not null,
        alter column refresh_token drop default`);
    this.addSql(`create unique index tokens_access_token_hmac_live_uq on tokens (access_token_hmac) where deleted_at is null`);
  }

  override async down(): Promise<void> {
    this.addSql('drop index tokens_access_token_hmac_live_uq');
    this.addSql(`
      alter table tokens
        drop column access_token_hmac,
        drop column access_token_cipher,
        drop column refresh_token_hmac,
        drop column refresh_token_cipher,
        alter column access_token set not null,
        alter column refresh_token set default '',
        alter column refresh_token set not null`);
  }
}
