import { Migration } from '@mikro-orm/migrations';

/** The tables whose rows the cached reads (read-cache.ts) are made of. Tokens and audit events are not. */
export const DIRECTORY_TABLES = ['users', 'applications', 'roles', 'user_applications', 'user_roles'];

/** A fresh version: random, so that no other history of the database (a restored backup, a promoted standby) can hand out a number an instance already holds answers for. */
export const NEW_DIRECTORY_VERSION = 'floor(random() * 9e18)::bigint';

/**
 * One number that changes, in the same transaction, with every write to the directory tables
 * (users, applications, roles and the links between them), however the write is made: by the
 * service, by another instance, or by hand in psql. Every request reads it in the statement that
 * checks its bearer token, so an answer cached under one number is served only while no write has
 * committed since (see src/db/read-cache.ts).
 *
 * - Moved at commit, once per transaction: a deferred constraint trigger (row-level, as constraint
 *   triggers are) marks the transaction the first time it runs, so a bulk write moves it once. The
 *   version's row is locked only while the transaction commits, after every other lock it takes,
 *   so it adds no lock-order cycle (no deadlock) and writes queue on it only for their commit.
 * - TRUNCATE moves it as well (a statement trigger: constraint triggers do not see TRUNCATE).
 * - `enable always`: the triggers fire in `session_replication_role = replica` too (logical
 *   replication, some restore tools), which would otherwise skip them.
 * - Random rather than counted: see NEW_DIRECTORY_VERSION. The service also moves it after every
 *   migration run (a migration may rewrite rows with DDL, which fires no row trigger).
 */
export class Migration20261202000000_directory_version extends Migration {
  override name = 'Migration20261202000000_directory_version';

  override async up(): Promise<void> {
    this.addSql(`create table directory_version (only_row boolean primary key default true check (only_row), version bigint not null)`);
    this.addSql(`insert into directory_version (version) values (${NEW_DIRECTORY_VERSION})`);
    this.addSql(`
      create function bump_directory_version() returns trigger language plpgsql as $$
      begin
        if current_setting('uts.directory_version_moved', true) is distinct from txid_current()::text then
          perform set_config('uts.directory_version_moved', txid_current()::text, true);
          update directory_version set version = ${NEW_DIRECTORY_VERSION};
        end if;
        return null;
      end $$`);
    for (const table of DIRECTORY_TABLES) {
      this.addSql(
        `create constraint trigger ${table}_directory_version after insert or update or delete on ${table} deferrable initially deferred for each row execute function bump_directory_version()`,
      );
      this.addSql(`create trigger ${table}_directory_version_truncate after truncate on ${table} for each statement execute function bump_directory_version()`);
      this.addSql(`alter table ${table} enable always trigger ${table}_directory_version`);
      this.addSql(`alter table ${table} enable always trigger ${table}_directory_version_truncate`);
    }
  }

  override async down(): Promise<void> {
    for (const table of DIRECTORY_TABLES) {
      this.addSql(`drop trigger ${table}_directory_version on ${table}`);
      this.addSql(`drop trigger ${table}_directory_version_truncate on ${table}`);
    }
    this.addSql('drop function bump_directory_version()');
    this.addSql('drop table directory_version');
  }
}
