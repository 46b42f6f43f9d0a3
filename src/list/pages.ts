import { raw, type EntityClass, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { CompiledList, Page } from './list.js';

/**
 * One page per parent (a batched nested list such as GraphQL's `User.tokens`), in two statements
 * whatever the number of parents: the rows of every parent's page, cut in SQL with
 * `row_number() over (partition by <parent> order by …)`, and each parent's total by a grouped
 * count. Only the requested pages leave the database, however many rows a parent has.
 *
 * The per-parent cut is MikroORM's own (`_partitionLimit`, what its populate `limit` hint uses); it
 * is not in the public FindOptions type, so it is passed through a cast.
 */
export async function findPagesByParent<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  options: {
    /** The property holding the parent's id (e.g. a token's `user`). */
    parent: string;
    parentIds: readonly number[];
    where: FilterQuery<T>;
    list: Pick<CompiledList, 'orderBy' | 'page' | 'pageSize' | 'limit' | 'offset'>;
    populate?: readonly string[];
  },
): Promise<Map<number, Page<T>>> {
  const { parent, parentIds, list } = options;
  const where = { $and: [{ [parent]: { $in: [...parentIds] } }, options.where] } as FilterQuery<T>;
  const counts = await em
    .createQueryBuilder(entity)
    .select([parent, raw('count(*) as total')] as never)
    .where(where as never)
    .groupBy(parent as never)
    .execute<Record<string, unknown>[]>('all'); // rows keyed by property: { [parent]: id, total }
  const pages = new Map<number, Page<T>>(
    parentIds.map((id) => [id, { total: 0, page: list.page, pageSize: list.pageSize, data: [] }]),
  );
  let withRows = 0;
  for (const row of counts) {
    const page = pages.get(Number(row[parent]));
    if (!page) continue;
    page.total = Number(row.total);
    if (page.total > list.offset) withRows += 1;
  }
  if (withRows === 0) return pages; // every page is empty or past the end: nothing to fetch
  const rows = await em.find(entity, where as never, {
    populate: options.populate,
    orderBy: list.orderBy,
    _partitionLimit: { partitionBy: parent, limit: list.limit, offset: list.offset },
  } as never);
  for (const row of rows) {
    const id = (row as Record<string, unknown>)[parent];
    pages.get(typeof id === 'object' && id !== null ? (id as { id: number }).id : Number(id))?.data.push(row);
  }
  return pages;
}
