import { Migration } from '@mikro-orm/migrations';

/** The tables whose rows the cached reads (read-cache.ts) are made of. Tokens and audit events are not. */
export const DIRECTORY_TABLES = ['users', 'applications', 'roles', 'user_applications', 'user_roles'];

/**
 * One number that changes, in the same transaction, with every write to the directory tables
 * (users, applications, roles and the links between them), however the write is made: by the
 * service, by another instance, or by hand in psql. Every request reads it in the statement that
 * checks its bearer token, so a result cached under one number is served only while no write has
 * committed since (see src/db/read-cache.ts). Statement-level triggers bump it once per statement.
 *
 * It starts at a random value rather than 0, so that a database dropped and migrated again under a
 * running instance cannot hand that instance a number its cache already holds results for.
 * The cost: concurrent writes to these tables queue on the one row, from their first write to
 * their commit (as creates and deletes already do on live_counts).
 */
export class Migration20261202000000_directory_version extends Migration {
  override name = 'Migration20261202000000_directory_version';

  override async up(): Promise<void> {
    this.addSql(`create table directory_version (only_row boolean primary key default true check (only_row), version bigint not null)`);
    this.addSql(`insert into directory_version (version) values (floor(random() * 1e15)::bigint)`);
    this.addSql(`
      create function bump_directory_version() returns trigger language plpgsql as $$
      begin
        update directory_version set version = version + 1;
        return null;
      end $$`);
    for (const table of DIRECTORY_TABLES) {
      this.addSql(`create trigger ${table}_directory_version after insert or update or delete or truncate on ${table} for each statement execute function bump_directory_version()`);
    }
  }

  override async down(): Promise<void> {
    for (const table of DIRECTORY_TABLES) this.addSql(`drop trigger ${table}_directory_version on ${table}`);
    this.addSql('drop function bump_directory_version()');
    this.addSql('drop table directory_version');
  }
}
