import { Migration } from '@mikro-orm/migrations';

/** The tables whose live rows are counted (Migration20261123000000_live_counts). */
const COUNTED = ['users', 'tokens', 'applications', 'roles'];

/**
 * The live-row counts are moved on an update only by the rows whose liveness changed (a soft delete
 * or a restore), not by every update. The statement-level update trigger with transition tables
 * kept every updated row's old and new versions and ran two counts over them on every update (a
 * patch of a first name included): about a tenth of PostgreSQL's time for the service's patch
 * statement (pgbench, one client: 69–79 µs a statement with it, 63–69 µs without).
 *
 * PostgreSQL allows no transition tables on a trigger with a column list, so two triggers take
 * their place, neither of them even queued for an update that does not set `deleted_at`:
 * - a row-level one, `when` the row's liveness changed, adds ±1 to a transaction-local setting
 *   (`live_counts.<table>`: rolled back with its statement or savepoint like any setting);
 * - a statement-level one applies that total to the count once and sets it back to 0, so that a
 *   bulk soft delete (a token revocation by filter, a user's tokens going with it) updates the
 *   count row once, not once per row (which grew its version chain: 20,000 rows took 1.9 s).
 * Inserts, deletes and TRUNCATE keep their statement-level triggers.
 */
export class Migration20261204000000_live_counts_on_liveness_changes extends Migration {
  override name = 'Migration20261204000000_live_counts_on_liveness_changes';

  override async up(): Promise<void> {
    this.addSql(`
      create function note_liveness_change() returns trigger language plpgsql as $$
      declare
        setting text := 'live_counts.' || tg_table_name;
      begin
        perform set_config(setting, (coalesce(nullif(current_setting(setting, true), ''), '0')::bigint
          + case when new.deleted_at is null then 1 else -1 end)::text, true);
        return null;
      end $$`);
    this.addSql(`
      create function apply_liveness_changes() returns trigger language plpgsql as $$
      declare
        setting text := 'live_counts.' || tg_table_name;
        delta bigint := coalesce(nullif(current_setting(setting, true), ''), '0')::bigint;
      begin
        if delta <> 0 then
          update live_counts set live = live + delta where table_name = tg_table_name;
          perform set_config(setting, '0', true);
        end if;
        return null;
      end $$`);
    for (const table of COUNTED) {
      this.addSql(`drop trigger ${table}_count_update on ${table}`);
      this.addSql(
        `create trigger ${table}_count_update after update of deleted_at on ${table} for each row ` +
          `when ((old.deleted_at is null) <> (new.deleted_at is null)) execute function note_liveness_change()`,
      );
      this.addSql(
        `create trigger ${table}_count_update_applied after update of deleted_at on ${table} for each statement execute function apply_liveness_changes()`,
      );
    }
  }

  override async down(): Promise<void> {
    for (const table of COUNTED) {
      this.addSql(`drop trigger ${table}_count_update_applied on ${table}`);
      this.addSql(`drop trigger ${table}_count_update on ${table}`);
      this.addSql(
        `create trigger ${table}_count_update after update on ${table} referencing old table as old_rows new table as new_rows for each statement execute function count_live_rows()`,
      );
    }
    this.addSql('drop function note_liveness_change(), apply_liveness_changes()');
  }
}
