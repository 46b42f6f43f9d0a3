import Router from '@koa/router';
import type { CrudService, LiveRecord } from '../shared/crud.js';
import type { AppState } from './context.js';
import { listQuery, sendCount, sendCreated, sendList, sendUpdated } from './respond.js';

/**
 * The REST routes every record type shares (SPEC §4): list, create (with a reserved id or not),
 * get, update (PUT, which creates on a reserved id), patch (with Attrs), destroy, restore (SPEC §9),
 * and — where the seed has it — apply id. Answers in the original service's dialect (respond.ts).
 */
export function crudRoutes<E extends LiveRecord, R extends { id: number }>(options: {
  path: string;
  basePath: string;
  service: CrudService<E, R>;
  applyPath?: string;
}): Router<AppState> {
  const { path, basePath, service } = options;
  const router = new Router<AppState>();
  const locationOf = (id: number) => `${basePath}${path}/${id}`;

  router.get(path, async (ctx) => {
    sendList(ctx, await service.list(ctx.state.caller, { ...listQuery(ctx), deleted: ctx.query.deleted }));
  });

  router.post(path, async (ctx) => {
    const record = await service.create(ctx.state.caller, ctx.request.body);
    sendCreated(ctx, locationOf(record.id), record);
  });

  router.get(`${path}/:id`, async (ctx) => {
    ctx.body = await service.get(ctx.state.caller, ctx.params.id);
  });

  router.put(`${path}/:id`, async (ctx) => {
    const { record, created } = await service.replace(ctx.state.caller, ctx.params.id, ctx.request.body);
    if (created) sendCreated(ctx, locationOf(record.id), record, { byUpdate: true });
    else sendUpdated(ctx, record);
  });

  router.patch(`${path}/:id`, async (ctx) => {
    sendUpdated(ctx, await service.patch(ctx.state.caller, ctx.params.id, ctx.request.body, ctx.get('Attrs') || undefined));
  });

  router.delete(`${path}/:id`, async (ctx) => {
    await service.destroy(ctx.state.caller, ctx.params.id);
    sendCount(ctx, 1);
  });

  // Answers as an update does: `1`, or the restored record with Prefer: return=representation.
  router.post(`${path}/:id/restore`, async (ctx) => {
    sendUpdated(ctx, await service.restore(ctx.state.caller, ctx.params.id));
  });

  if (options.applyPath) {
    router.post(options.applyPath, async (ctx) => {
      sendCount(ctx, await service.applyId(ctx.state.caller), 201);
    });
  }
  return router;
}
