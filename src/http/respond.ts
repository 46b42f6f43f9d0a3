import type { Page } from '../list/list.js';
import { presentPage } from '../shared/present.js';
import type { AppContext } from './context.js';

/** The four list inputs of a REST list call (strings, or arrays when a parameter is repeated). */
export const listQuery = (ctx: AppContext) => ({
  filter: ctx.query.filter,
  orderBy: ctx.query.orderBy as string | undefined,
  page: ctx.query.page,
  pageSize: ctx.query.pageSize,
});

/** A list answer; `present` shapes each record where the wire differs from the service's record. */
export function sendPage<T>(ctx: AppContext, page: Page<T>, present: (record: T) => unknown = (record) => record): void {
  ctx.body = presentPage({ ...page, total: page.total ?? 0 }, present);
}

/** 201 with the new record and its Location. */
export function sendCreated(ctx: AppContext, location: string, body: unknown): void {
  ctx.status = 201;
  ctx.set('Location', location);
  ctx.body = body;
}

export function sendNoContent(ctx: AppContext): void {
  ctx.status = 204;
  ctx.body = null;
}
