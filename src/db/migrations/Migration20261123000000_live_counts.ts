import { Migration } from '@mikro-orm/migrations';

/** The tables whose unfiltered lists answer a total: users, tokens, applications and roles. */
const COUNTED = ['users', 'tokens', 'applications', 'roles'];

/**
 * Live-row counts kept by the writes themselves, so that the `total` of an unfiltered list is one
 * primary-key read instead of a `count(*)` over every live row on every request. Exact by
 * construction: statement-level triggers (one update per statement, however many rows it touched)
 * change the count in the same transaction as the rows, so it commits or rolls back with them and
 * every instance of the service reads the same number. A count row is locked only by a statement
 * that makes rows live or not live (create, delete, restore), never by an ordinary update.
 */
export class Migration20261123000000_live_counts extends Migration {
  override name = 'Migration20261123000000_live_counts';

  override async up(): Promise<void> {
    this.addSql(`create table live_counts (table_name varchar(64) primary key, live bigint not null)`);
    this.addSql(`
      create function count_live_rows() returns trigger language plpgsql as $$
      declare
        delta bigint;
      begin
        if tg_op = 'INSERT' then
          select count(*) into delta from new_rows where deleted_at is null;
        elsif tg_op = 'DELETE' then
          select -count(*) into delta from old_rows where deleted_at is null;
        else
          select (select count(*) from new_rows where deleted_at is null)
               - (select count(*) from old_rows where deleted_at is null) into delta;
        end if;
        if delta <> 0 then
          update live_counts set live = live + delta where table_name = tg_table_name;
        end if;
        return null;
      end $$`);
    this.addSql(`
      create function reset_live_rows() returns trigger language plpgsql as $$
      begin
        update live_counts set live = 0 where table_name = tg_table_name;
        return null;
      end $$`);
    for (const table of COUNTED) {
      this.addSql(`insert into live_counts (table_name, live) select '${table}', count(*) from ${table} where deleted_at is null`);
      // A trigger with transition tables serves one event: three of them, plus TRUNCATE.
      this.addSql(
        `create trigger ${table}_count_insert after insert on ${table} referencing new table as new_rows for each statement execute function count_live_rows()`,
      );
      this.addSql(
        `create trigger ${table}_count_update after update on ${table} referencing old table as old_rows new table as new_rows for each statement execute function count_live_rows()`,
      );
      this.addSql(
        `create trigger ${table}_count_delete after delete on ${table} referencing old table as old_rows for each statement execute function count_live_rows()`,
      );
      this.addSql(`create trigger ${table}_count_truncate after truncate on ${table} for each statement execute function reset_live_rows()`);
    }
  }

  override async down(): Promise<void> {
    for (const table of COUNTED) {
      for (const event of ['insert', 'update', 'delete', 'truncate']) this.addSql(`drop trigger ${table}_count_${event} on ${table}`);
    }
    this.addSql('drop function count_live_rows(), reset_live_rows()');
    this.addSql('drop table live_counts');
  }
}
