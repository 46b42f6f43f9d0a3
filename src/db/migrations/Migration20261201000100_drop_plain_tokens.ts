import { Migration } from '@mikro-orm/migrations';

/**
 * Secrets at rest, step 2 of 2: once every row carries its keyed hashes and ciphertexts (converted
 * by the service with its key, see Migration20261201000000_token_secret_columns), the plain
 * columns, the sha256 of the plain access token and its index go. Refuses to run while a row is
 * still in the old form, so no value is ever lost. Not reversible: the plain values are gone.
 */
export class Migration20261201000100_drop_plain_tokens extends Migration {
  override name = 'Migration20261201000100_drop_plain_tokens';

  override async up(): Promise<void> {
    this.addSql(`
      do $$ begin
        if exists (select 1 from tokens where access_token_cipher is null or access_token is not null or refresh_token is not null) then
          raise exception 'tokens still holds plain access tokens: they are converted by the service with its TOKEN_KEY (npm start or npm run migrate), not by SQL';
        end if;
      end $$`);
    this.addSql('drop index tokens_access_token_hash_live_uq');
    this.addSql(`
      alter table tokens
        drop column access_token_hash,
        drop column access_token,
        drop column refresh_token,
        alter column access_token_hmac set not null,
        alter column access_token_cipher set not null,
        alter column refresh_token_hmac set not null,
        alter column refresh_token_cipher set not null`);
    this.addSql('drop function utf8_sha256(text)');
  }

  override async down(): Promise<void> {
    throw new Error('Migration20261201000100_drop_plain_tokens cannot be reverted: the plain token values no longer exist');
  }
}
