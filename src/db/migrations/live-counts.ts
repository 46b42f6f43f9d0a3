import type { Sql } from '../sql.js';

/**
 * The live-row count of a table (`live_counts`, Migration20261123000000_live_counts and
 * Migration20261204000000_live_counts_on_liveness_changes): what a module's own migration runs to
 * have its table counted (a resource defined with `counted: true`), with the triggers in their
 * present form. The functions the triggers call exist already (the core migrations made them).
 */
export function liveCountStatements(table: string): string[] {
  return [
    `insert into live_counts (table_name, live) select '${table}', count(*) from ${table} where deleted_at is null`,
    `create trigger ${table}_count_insert after insert on ${table} referencing new table as new_rows for each statement execute function count_live_rows()`,
    `create trigger ${table}_count_update after update of deleted_at on ${table} for each row ` +
      `when ((old.deleted_at is null) <> (new.deleted_at is null)) execute function note_liveness_change()`,
    `create trigger ${table}_count_update_applied after update of deleted_at on ${table} for each statement execute function apply_liveness_changes()`,
    `create trigger ${table}_count_delete after delete on ${table} referencing old table as old_rows for each statement execute function count_live_rows()`,
    `create trigger ${table}_count_truncate after truncate on ${table} for each statement execute function reset_live_rows()`,
  ];
}

/** What undoes liveCountStatements (a module migration's `down`). */
export function dropLiveCountStatements(table: string): string[] {
  return [
    ...['insert', 'update', 'update_applied', 'delete', 'truncate'].map((event) => `drop trigger ${table}_count_${event} on ${table}`),
    `delete from live_counts where table_name = '${table}'`,
  ];
}

/** The tables of `tables` that have no row in `live_counts`: their unfiltered totals would read 0. */
export async function tablesWithoutLiveCount(sql: Sql, tables: readonly string[]): Promise<string[]> {
  if (tables.length === 0) return [];
  const rows = await sql.rows<{ table_name: string }>('select table_name from live_counts where table_name = any(?::text[])', [`{${tables.join(',')}}`]);
  const counted = new Set(rows.map((r) => r.table_name));
  return tables.filter((table) => !counted.has(table));
}
