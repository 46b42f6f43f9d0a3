import type { TestService } from './service.js';

/** The kept live counts (`live_counts`) and the true ones, per table: equal when live_counts is exact. */
export async function liveCounts(svc: TestService): Promise<{ kept: Record<string, number>; counted: Record<string, number> }> {
  const kept = await svc.sql<{ table_name: string; live: string }>('select table_name, live from live_counts order by table_name');
  const counted: Record<string, number> = {};
  for (const { table_name } of kept) {
    const [row] = await svc.sql<{ n: string }>(`select count(*) as n from ${table_name} where deleted_at is null`);
    counted[table_name] = Number(row.n);
  }
  return { kept: Object.fromEntries(kept.map((r) => [r.table_name, Number(r.live)])), counted };
}
