import { Migration } from '@mikro-orm/migrations';

/**
 * Realtime events (SPEC §10): every statement that appends to the audit log notifies the channel
 * `uts_events` with the ids it appended, comma-separated (several notifications when they would
 * not fit one payload). PostgreSQL delivers a notification only when its transaction commits, and
 * delivers notifications in commit order: each instance's listener (src/realtime/events.ts) reads
 * the events by id and passes them to its subscribers. One notification per statement, not per
 * row: a bulk revoke of 1,000 tokens is one.
 */
export class Migration20261204000000_audit_notify extends Migration {
  override name = 'Migration20261204000000_audit_notify';

  override async up(): Promise<void> {
    this.addSql(`create function notify_audit_events() returns trigger language plpgsql as $$
declare
  ids text;
begin
  for ids in
    select string_agg(id::text, ',' order by id) from (
      select id, (row_number() over (order by id) - 1) / 500 as chunk from new_rows
    ) numbered group by chunk order by chunk
  loop
    perform pg_notify('uts_events', ids);
  end loop;
  return null;
end $$`);
    this.addSql(`create trigger audit_events_notify after insert on audit_events
      referencing new table as new_rows for each statement execute function notify_audit_events()`);
  }

  override async down(): Promise<void> {
    this.addSql('drop trigger audit_events_notify on audit_events');
    this.addSql('drop function notify_audit_events()');
  }
}
