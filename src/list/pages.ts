import type { Sql } from '../db/sql.js';
import { idArray } from '../db/wire.js';
import { connectionOf, sortColumns, type CompiledKeyset, type Connection } from './keyset.js';
import { andAll, orderSql, type CompiledList, type Page, type SqlFragment } from './list.js';

/** Where one nested list's rows come from (a user's tokens, a user's application links, …). */
export interface NestedSource<R> {
  /** `from` clause: the rows' table as `t`, a link table as `l` joined to it. */
  from: string;
  /** The select list, without the parent column. */
  columns: string;
  /** The column holding the parent's id (`t.user_id`, `l.user_id`). */
  parentColumn: string;
  /** What makes a row live (and its linked record, for a link). */
  live: SqlFragment;
  fromRow(row: Record<string, unknown>): R;
}

const whereSql = (where: SqlFragment) => ` where ${where.sql}`;

/** The rows of the given parents that are live and pass the filter (without any page bound). */
const ofParents = (source: NestedSource<unknown>, parentIds: readonly number[], filter: SqlFragment | null): SqlFragment =>
  andAll({ sql: `${source.parentColumn} = any(?::bigint[])`, params: [idArray(parentIds)] }, source.live, filter)!;

/** Each parent's number of rows (absent: none), one grouped count; null when not asked for. */
async function totalsByParent(sql: Sql, source: NestedSource<unknown>, parent: SqlFragment, count: boolean): Promise<Map<number, number> | null> {
  if (!count) return null;
  const counted = await sql.rows<{ parent_id: number; total: number }>(
    `select ${source.parentColumn} as parent_id, count(*) as total from ${source.from}${whereSql(parent)} group by ${source.parentColumn}`,
    parent.params,
  );
  return new Map(counted.map((row) => [row.parent_id, row.total]));
}

/**
 * One page per parent (a batched nested list such as GraphQL's `User.tokens`), whatever the number
 * of parents: the rows of every parent's page in one statement, cut in SQL with
 * `row_number() over (partition by <parent> order by …)`, and, only when asked for, every parent's
 * total in a second one (a grouped count) sent at the same time. Only the requested pages leave
 * the database, however many rows a parent has.
 */
export async function pagesByParent<R>(
  sql: Sql,
  source: NestedSource<R>,
  parentIds: readonly number[],
  list: CompiledList,
  count: boolean,
  /** The select list, when not all of the source's columns (GraphQL: what the query selects). */
  columns = source.columns,
): Promise<Map<number, Page<R>>> {
  const parent = ofParents(source, parentIds, list.where);
  const pageRows = sql.rows<Record<string, unknown>>(
    `select * from (select ${columns}, ${source.parentColumn} as parent_id, ` +
      `row_number() over (partition by ${source.parentColumn} order by ${orderSql(list.order)}) as rn ` +
      `from ${source.from}${whereSql(parent)}) p where p.rn > ? and p.rn <= ? order by p.parent_id, p.rn`,
    [...parent.params, list.offset, list.offset + list.limit],
  );
  const [found, totals] = await Promise.all([pageRows, totalsByParent(sql, source, parent, count)]);
  const pages = new Map<number, Page<R>>(
    parentIds.map((id) => [id, { total: totals ? (totals.get(id) ?? 0) : null, page: list.page, pageSize: list.pageSize, data: [] }]),
  );
  // A row keeps its parent_id and rn beside the record's fields: GraphQL reads only the fields its
  // type has, and copying every row without them would cost more than it saves.
  for (const row of found) pages.get(row.parent_id as number)?.data.push(source.fromRow(row));
  return pages;
}

/**
 * One keyset page per parent (GraphQL's nested connections such as `User.tokensConnection`): the
 * same partitioned statement as pagesByParent, bounded by the cursors instead of an offset.
 */
export async function connectionsByParent<R>(
  sql: Sql,
  source: NestedSource<R>,
  parentIds: readonly number[],
  keyset: CompiledKeyset,
  count: boolean,
  columns = source.columns,
): Promise<Map<number, Connection<R>>> {
  const parent = ofParents(source, parentIds, keyset.where);
  const bounded = andAll(parent, keyset.bound)!;
  const pageRows = sql.rows<Record<string, unknown>>(
    `select * from (select ${columns}, ${sortColumns(keyset.order)}, ${source.parentColumn} as parent_id, ` +
      `row_number() over (partition by ${source.parentColumn} order by ${orderSql(keyset.order, keyset.backward)}) as rn ` +
      `from ${source.from}${whereSql(bounded)}) p where p.rn <= ? order by p.parent_id, p.rn`,
    [...bounded.params, keyset.limit + 1],
  );
  const [found, totals] = await Promise.all([pageRows, totalsByParent(sql, source, parent, count)]);
  const byParent = new Map<number, Record<string, unknown>[]>(parentIds.map((id) => [id, []]));
  for (const row of found) byParent.get(row.parent_id as number)?.push(row);
  return new Map(parentIds.map((id) => [id, connectionOf(keyset, byParent.get(id)!, source.fromRow, totals ? (totals.get(id) ?? 0) : null)]));
}
